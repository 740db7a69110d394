// The names of the download cache directory's parts, in one place: each part's writer
// (fetch/cache.hpp, fetch/page_cache.hpp, the unpacked-wheel cache and the kept load verdicts that
// apply places there) and `venvfix cache info|prune` (apply/cache_maintenance.hpp), which must
// find every part, read the same names. docs/cli.md, "Files", lists them for users.
//
//   <cache>/wheels/              downloaded wheels by sha256 (fetch/cache.hpp)
//   <cache>/urls/                the sha256 each URL served (fetch/cache.hpp)
//   <cache>/pages/               index pages with their HTTP caching headers (fetch/page_cache.hpp)
//   <cache>/unpacked/            unpacked wheels, one directory per wheel's sha256
//                                (wheel/unpacked_cache.hpp; its own writers' temporaries in tmp/)
//   <cache>/load-verdicts-v1/    the load check's kept verdicts (apply/load_verdicts.hpp)
//   <cache>/tmp/                 downloads in progress
//   <cache>/lock                 shared by the cache's users, exclusive for prune (cache_lock.hpp)
#pragma once

#include <string_view>

namespace venvfix::fetch::cache_layout {

inline constexpr std::string_view wheels = "wheels";
inline constexpr std::string_view urls = "urls";
inline constexpr std::string_view pages = "pages";
inline constexpr std::string_view unpacked = "unpacked";
inline constexpr std::string_view load_verdicts = "load-verdicts-v1";
// Temporary files of writers: at the top (downloads) and in unpacked/ (entries being written).
inline constexpr std::string_view temporary = "tmp";
// The lock file (fetch/cache_lock.hpp).
inline constexpr std::string_view lock = "lock";

}  // namespace venvfix::fetch::cache_layout
