// Small string helpers shared by the parsers. ASCII only on purpose: every format venvfix
// parses (METADATA headers, RECORD, specifiers, wheel names) is defined over ASCII.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace venvfix {

std::string_view trim(std::string_view text);
std::vector<std::string_view> split(std::string_view text, char separator);
// The lines of `text`, ended by "\n", "\r\n" or a lone "\r": Python's universal newlines (a text
// file opened by Python: pyvenv.cfg, entry_points.txt) and email.feedparser's NLCRE (METADATA). A
// final line break ends the last line; it does not start an empty one.
std::vector<std::string_view> split_lines(std::string_view text);
std::string to_lower_ascii(std::string_view text);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
// A size for people: "512 B", "300.0 KiB", "1.2 GiB" (binary units).
std::string human_size(std::uint64_t bytes);
// `text` with every occurrence of `key` replaced by `value` (left to right, not rescanned).
std::string replace_all(std::string text, std::string_view key, std::string_view value);
bool is_ascii_space(char c);
// The first character of `text` at or after `start` that is one of the few in `set`, or npos.
// For sets of characters below 64 (line breaks, tab, quotes, '%', ','), a bit test per character:
// std::string_view::find_first_of calls memchr over the set for every character, several times
// slower on long texts (RECORDs, snapshot manifests).
std::size_t find_first_of_few(std::string_view text, std::string_view set, std::size_t start = 0);
// How many times `c` occurs in `text`, by memchr from one to the next: std::count widens every
// byte into a 64-bit sum, several times slower on texts of long lines (a manifest's 3.7 MB).
std::size_t count_of(std::string_view text, char c);
// For messages: cuts long or binary text to something printable.
std::string printable_excerpt(std::string_view text, std::size_t max_length = 80);

}  // namespace venvfix
