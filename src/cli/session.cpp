#include "cli/session.hpp"

#include "venvfix/txn/lock.hpp"

namespace venvfix::cli {

Result<Session> open_session(const GlobalOptions& options) {
  VENVFIX_TRY_ASSIGN(env::Venv venv, env::open_venv(options.venv));
  VENVFIX_TRY(txn::require_no_unfinished_transaction(venv));
  fs::path manifest_dir = options.manifest_dir.value_or(manifest::Manifests::default_dir());
  VENVFIX_TRY_ASSIGN(manifest::Manifests manifests, manifest::Manifests::load(manifest_dir));
  VENVFIX_TRY_ASSIGN(
      elf::SystemView system,
      elf::SystemView::host(options.use_ld_library_path ? elf::UseLdLibraryPath::yes
                                                        : elf::UseLdLibraryPath::no));
  if (options.ld_cache == "none") {
    system.cache.reset();
  } else if (!options.ld_cache.empty()) {
    auto cache = elf::LdCache::load(options.ld_cache);
    if (!cache) {
      return make_error(ExitCode::usage, "cannot use --ld-cache {}: {}", options.ld_cache,
                        cache.error().message);
    }
    system.cache = std::move(cache).value();
  }
  return Session{std::move(venv), std::move(manifests), std::move(system)};
}

}  // namespace venvfix::cli
