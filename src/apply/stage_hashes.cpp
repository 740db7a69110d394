#include "apply/stage_hashes.hpp"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "venvfix/dist/hash_cache.hpp"

namespace venvfix::apply {

std::size_t seed_hash_cache(const env::Venv& venv, std::span<const StagedWheel> staged) {
  dist::HashCache cache = dist::HashCache::load_for(venv.state_dir());
  std::size_t seeded = 0;
  for (const StagedWheel& wheel : staged) {
    for (const wheel::InstalledFile& file : wheel.install.files) {
      struct stat st {};
      if (::lstat((venv.root / file.path).c_str(), &st) != 0) continue;
      const FileIdentity identity = file_identity_from(st);
      if (identity.size != file.size) continue;  // not the file staged: let the analysis read it
      if (cache.seed(identity, file.sha256)) ++seeded;
    }
  }
  if (Status saved = cache.save(); !saved) {
    spdlog::debug("hash cache not seeded: {}", saved.error().message);
    return 0;
  }
  spdlog::debug("seeded the hash cache with {} staged files", seeded);
  return seeded;
}

}  // namespace venvfix::apply
