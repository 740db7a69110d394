// Kept load verdicts (include/venvfix/apply/load_verdicts.hpp): their keys and their store.
#include "venvfix/apply/load_verdicts.hpp"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "apply/load_chain.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/base/parallel.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/txn/journal.hpp"

namespace venvfix::apply {

namespace {

constexpr std::string_view k_schema = "venvfix-load-verdict/1";
// How keys and kept messages name a path inside the venv.
constexpr std::string_view k_venv_marker = "$VENV/";

std::string identity_text(const FileIdentity& id) {
  return fmt::format("dev={} ino={} size={} mtime={} ctime={}", id.device, id.inode, id.size,
                     id.mtime_ns, id.ctime_ns);
}

// The objects of a key: each by its content where staging checked it, else by its identity,
// with the flags of its filesystem (a noexec mount refuses what loaded elsewhere; statvfs
// memoised by device); a path inside the venv as "$VENV/…", so that the same bytes installed
// into another venv keep their verdict.
class KeyObjects {
 public:
  KeyObjects(const KnownContents& known, const fs::path& venv_root)
      : m_known(known), m_root(venv_root.empty() ? std::string() : venv_root.string() + "/") {}

  std::string shown(const std::string& path) const {
    if (m_root.empty() || !path.starts_with(m_root)) return path;
    return std::string(k_venv_marker) + path.substr(m_root.size());
  }

  struct Described {
    std::string text;
    detail::InodeKey inode;
  };
  std::optional<Described> describe(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    std::string text;
    auto known = m_known.find({st.st_dev, st.st_ino});
    if (known != m_known.end() && known->second.second == static_cast<std::uint64_t>(st.st_size)) {
      text = fmt::format("sha256={} size={}", to_hex(known->second.first), st.st_size);
    } else {
      text = identity_text(file_identity_from(st));
    }
    return Described{fmt::format("{} fs={:x}", text, filesystem_flags(path, st.st_dev)),
                     {st.st_dev, st.st_ino}};
  }

 private:
  unsigned long filesystem_flags(const std::string& path, dev_t device) {
    const std::lock_guard lock(m_mutex);
    auto it = m_flags.find(device);
    if (it != m_flags.end()) return it->second;
    struct statvfs vfs {};
    const unsigned long flags = ::statvfs(path.c_str(), &vfs) == 0 ? vfs.f_flag : ~0ul;
    m_flags.emplace(device, flags);
    return flags;
  }

  const KnownContents& m_known;
  const std::string m_root;
  std::mutex m_mutex;
  std::map<dev_t, unsigned long> m_flags;
};

std::string identity_line(const fs::path& path) {
  auto id = file_identity_follow(path);
  return path.string() + " " + (id ? identity_text(*id) : std::string("absent"));
}

// The environment the child gets, without what cannot change a load (the working directory is
// in the listings: a relative search path is resolved there). As a digest: keys are file names
// and the environment may hold secrets.
std::string environment_digest(const std::vector<std::string>& environment) {
  std::vector<std::string> kept;
  for (const std::string& entry : environment) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name != "PWD" && name != "OLDPWD" && name != "SHLVL" && name != "_") kept.push_back(entry);
  }
  std::sort(kept.begin(), kept.end());
  std::string joined;
  for (const std::string& entry : kept) joined += entry + '\0';
  return to_hex(sha256(joined));
}

// The CPU as the first processor of /proc/cpuinfo describes it (vendor, model, flags): what a
// constructor may test (AVX-512, say) and what the loader's glibc-hwcaps choice rests on.
std::string cpu_digest() {
  auto text = read_file("/proc/cpuinfo", 16u << 20);
  if (!text) return "unknown";
  std::string first;
  for (std::string_view line : split(*text, '\n')) {
    if (line.empty()) break;  // the end of the first processor's block
    if (line.starts_with("vendor_id") || line.starts_with("model name") ||
        line.starts_with("flags") || line.starts_with("Features") || line.starts_with("CPU part")) {
      first += std::string(line) + "\n";
    }
  }
  return to_hex(sha256(first));
}

// What every key of this process shares.
std::string host_part(const fs::path& helper, const fs::path& loader,
                      const std::vector<std::string>& environment) {
  std::string text = fmt::format("{}\nhelper {}\nloader {}\n", k_schema, identity_line(helper),
                                 identity_line(loader));
  text += identity_line("/etc/ld.so.cache") + "\n" + identity_line("/etc/ld.so.preload") + "\n";
  // getauxval returns AT_PLATFORM's pointer as an integer.
  const auto* platform =
      reinterpret_cast<const char*>(::getauxval(AT_PLATFORM));  // NOLINT(performance-no-int-to-ptr)
  text += fmt::format("hwcap={:x} hwcap2={:x} platform={} cpu sha256={}\n", ::getauxval(AT_HWCAP),
                      ::getauxval(AT_HWCAP2), platform != nullptr ? platform : "", cpu_digest());
  struct utsname name {};
  if (::uname(&name) == 0) text += fmt::format("kernel {} {}\n", name.release, name.version);
  text += "environment sha256=" + environment_digest(environment) + "\n";
  return text;
}

// What the loader lists for one file: the key's part, and the same listing read as the file's
// closure (load_chain.hpp), so that the load check need not ask the loader again.
struct ListedPart {
  std::string text;
  detail::InodeKey inode;
  detail::Closure closure;  // nullopt where a dependency was not found
};

// "<title> <path> <object>\n" and one line per object the loader lists (one not found as
// such: a preload may provide it); nullopt when the loader cannot list the file.
std::optional<ListedPart> listed_part(std::string_view title, const std::string& path,
                                      const fs::path& loader,
                                      const std::vector<std::string>& environment,
                                      KeyObjects& objects) {
  std::optional<KeyObjects::Described> self = objects.describe(path);
  auto listed = detail::loader_list(loader, path, environment, detail::WhenMissing::list);
  if (!self || !listed) return std::nullopt;
  ListedPart part{fmt::format("{} {} {}\n", title, objects.shown(path), self->text), self->inode,
                  std::set<detail::InodeKey>()};
  for (const detail::ListedObject& object : *listed) {
    if (!object.path) {
      part.text += fmt::format("  {} not found\n", objects.shown(object.name));
      part.closure.reset();
      continue;
    }
    std::optional<KeyObjects::Described> object_line = objects.describe(*object.path);
    if (!object_line) return std::nullopt;
    part.text += fmt::format("  {} => {} {}\n", objects.shown(object.name),
                             objects.shown(*object.path), object_line->text);
    if (part.closure && object_line->inode != self->inode) part.closure->insert(object_line->inode);
  }
  return part;
}

std::optional<LoadStatus> kept_status(std::string_view word) {
  for (LoadStatus status : {LoadStatus::loaded, LoadStatus::needs_python}) {
    if (to_string(status) == word) return status;
  }
  return std::nullopt;
}

fs::path verdict_path(const fs::path& dir, const std::string& key) {
  return dir / (to_hex(sha256(key)) + ".json");
}

// A verdict's message (a needs-python verdict quotes the loader's, with the file's path) names
// paths inside the venv as "$VENV/…" as its key does, so that a verdict taken in another venv
// names that venv's files.
std::string message_kept(const std::string& message, const fs::path& venv_root) {
  if (venv_root.empty()) return message;
  return replace_all(message, venv_root.string() + "/", k_venv_marker);
}

std::string message_taken(const std::string& message, const fs::path& venv_root) {
  if (venv_root.empty()) return message;
  return replace_all(message, k_venv_marker, venv_root.string() + "/");
}

std::optional<LoadResult> find_verdict(const fs::path& dir, const fs::path& file,
                                       const std::string& key, const fs::path& venv_root) {
  const fs::path path = verdict_path(dir, key);
  auto text = read_file(path, 64u << 10);
  if (!text) return std::nullopt;
  const nlohmann::json verdict = nlohmann::json::parse(*text, nullptr, false);
  if (!verdict.is_object() || verdict.value("schema", "") != k_schema) return std::nullopt;
  const std::optional<LoadStatus> status = kept_status(verdict.value("status", ""));
  const std::string checked_at = verdict.value("checked_at", "");
  if (!status || checked_at.empty()) return std::nullopt;
  // A verdict's mtime is when a check last took it or wrote it: what the pruning keeps by.
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return LoadResult{file, *status, message_taken(verdict.value("message", ""), venv_root),
                    checked_at};
}

// Without an fsync: a verdict lost in a crash only costs the next apply a load, and one torn
// does not parse.
bool write_unsynced(const fs::path& path, std::string_view data) {
  auto file = open_file(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (!file) return false;
  while (!data.empty()) {
    const ssize_t n = ::write(file->get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Whether the verdict was written.
bool keep_verdict(const fs::path& dir, const std::string& key, const LoadResult& result,
                  const fs::path& venv_root) {
  if (!kept_status(to_string(result.status))) return false;
  const nlohmann::json verdict = {{"schema", k_schema},
                                  {"file", result.path.string()},
                                  {"status", to_string(result.status)},
                                  {"message", message_kept(result.message, venv_root)},
                                  {"checked_at", txn::utc_now_iso8601()}};
  const fs::path path = verdict_path(dir, key);
  const fs::path temporary = path.string() + fmt::format(".tmp.{}", ::getpid());
  std::error_code error;
  fs::create_directories(dir, error);
  if (!write_unsynced(temporary, json_text(verdict)) ||
      ::rename(temporary.c_str(), path.c_str()) != 0) {
    spdlog::debug("load verdict for {} not kept in {}", result.path.string(), dir.string());
    fs::remove(temporary, error);
    return false;
  }
  return true;
}

// Removes the least recently used verdicts beyond `keep`, and the temporary files of writers
// that stopped (an hour old). The directory is only read (no stat) while it holds no more than
// `keep`. Another process pruning or reading at the same time loses at most a verdict, which
// costs it a load.
void prune_verdicts(const fs::path& dir, std::size_t keep) {
  std::vector<fs::path> verdicts;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    if (path.extension() == ".json") {
      verdicts.push_back(path);
    } else if (path.filename().string().find(".json.tmp.") != std::string::npos) {
      std::error_code ignored;
      const fs::file_time_type written = fs::last_write_time(path, ignored);
      if (!ignored && written < stale) fs::remove(path, ignored);
    }
  }
  if (verdicts.size() <= keep) return;
  std::vector<std::pair<fs::file_time_type, fs::path>> by_use;
  by_use.reserve(verdicts.size());
  for (fs::path& path : verdicts) {
    const fs::file_time_type used = fs::last_write_time(path, error);
    if (!error) by_use.emplace_back(used, std::move(path));
    error.clear();
  }
  if (by_use.size() <= keep) return;
  const auto oldest_end = by_use.begin() + static_cast<std::ptrdiff_t>(by_use.size() - keep);
  std::nth_element(by_use.begin(), oldest_end, by_use.end());
  for (auto it = by_use.begin(); it != oldest_end; ++it) fs::remove(it->second, error);
  spdlog::debug("load verdicts: {} least recently used removed from {}", by_use.size() - keep,
                dir.string());
}

// The keys of `files`, and what their listings say about the load check's chain.
struct ListedFiles {
  std::vector<std::optional<std::string>> keys;
  std::vector<std::optional<detail::InodeKey>> inodes;
  std::vector<detail::Closure> closures;
};

ListedFiles list_files(std::span<const fs::path> files, const LoadCheckOptions& options,
                       const LoadVerdictOptions& verdicts) {
  ListedFiles listed{std::vector<std::optional<std::string>>(files.size()),
                     std::vector<std::optional<detail::InodeKey>>(files.size()),
                     std::vector<detail::Closure>(files.size())};
  const Result<fs::path> helper = helper_binary(options);
  const fs::path loader = helper ? detail::loader_of(*helper) : fs::path();
  if (loader.empty()) return listed;
  const std::vector<std::string> environment = clean_environment();
  KeyObjects objects(verdicts.known, verdicts.venv_root);
  std::string shared = host_part(*helper, loader, environment);
  for (const fs::path& preload : options.preload) {
    auto part = listed_part("preload", preload.string(), loader, environment, objects);
    if (!part) return listed;
    shared += part->text;
  }
  (void)run_parallel(files.size(), 2, [&](std::size_t i, const JobContext&) -> Status {
    auto part = listed_part("file", files[i].string(), loader, environment, objects);
    if (!part) return ok();
    listed.keys[i] = shared + part->text;
    listed.inodes[i] = part->inode;
    listed.closures[i] = std::move(part->closure);
    return ok();
  });
  return listed;
}

// For the files to load (`listed` indices), which loads in whose process: as the helper's own
// choice would be (the same loader, the same clean environment), from the listings the keys
// have already made. Empty where the helper must choose (after a preload: load_check_child.cpp).
std::vector<std::size_t> bases_from_listings(const ListedFiles& listed,
                                             std::span<const std::size_t> to_load,
                                             const LoadCheckOptions& options) {
  if (!options.preload.empty() || to_load.size() < 2) return {};
  std::vector<std::optional<detail::InodeKey>> inodes;
  std::vector<detail::Closure> closures;
  for (std::size_t i : to_load) {
    inodes.push_back(listed.inodes[i]);
    closures.push_back(listed.closures[i]);
  }
  return detail::chain_bases(inodes, closures);
}

}  // namespace

std::vector<std::optional<std::string>> load_verdict_keys(std::span<const fs::path> files,
                                                          const LoadCheckOptions& options,
                                                          const LoadVerdictOptions& verdicts) {
  return list_files(files, options, verdicts).keys;
}

Result<std::vector<LoadResult>> dlopen_keeping_verdicts(std::span<const fs::path> files,
                                                        const manifest::Manifests& manifests,
                                                        const LoadCheckOptions& options,
                                                        const LoadVerdictOptions& verdicts) {
  if (verdicts.dir.empty()) return dlopen_in_child(files, manifests, options);
  const ListedFiles listed = list_files(files, options, verdicts);
  const std::vector<std::optional<std::string>>& keys = listed.keys;
  std::vector<std::optional<LoadResult>> results(files.size());
  std::vector<fs::path> to_load;
  std::vector<std::size_t> loaded_at;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (verdicts.reuse && keys[i]) {
      results[i] = find_verdict(verdicts.dir, files[i], *keys[i], verdicts.venv_root);
    }
    if (results[i]) continue;
    to_load.push_back(files[i]);
    loaded_at.push_back(i);
  }
  VENVFIX_TRY_ASSIGN(std::vector<LoadResult> loaded,
                     dlopen_in_child(to_load, manifests, options,
                                     bases_from_listings(listed, loaded_at, options)));
  bool kept_any = false;
  for (std::size_t j = 0; j < loaded.size(); ++j) {
    const std::size_t i = loaded_at[j];
    if (keys[i]) kept_any |= keep_verdict(verdicts.dir, *keys[i], loaded[j], verdicts.venv_root);
    results[i] = std::move(loaded[j]);
  }
  if (kept_any) prune_verdicts(verdicts.dir, verdicts.keep_at_most);
  std::vector<LoadResult> out;
  out.reserve(results.size());
  for (std::optional<LoadResult>& result : results) out.push_back(std::move(*result));
  return out;
}

}  // namespace venvfix::apply
