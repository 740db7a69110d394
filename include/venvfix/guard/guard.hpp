// The guard: pip and uv commands that change a venv run under `venvfix run --snapshot`, so an
// uninstall that takes a library a target needs is rolled back the moment it happens.
//
// `enable` replaces the venv's own installer scripts (bin/pip, bin/pip3, bin/pip3.X, bin/uv)
// with small shell wrappers and keeps the originals under .venvfix/guard/bin/ (hard links of
// the same inodes, so `disable` puts back exactly what was there); `shell_hook` prints shell
// functions for what no script in bin/ catches (`python -m pip`, a uv outside the venv). A
// wrapper calls `venvfix guard exec`, which classifies the command: read-only commands are
// exec'd untouched, changing ones run guarded. VENVFIX_GUARD=0 runs one command unguarded.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::guard {

namespace fs = std::filesystem;

// The installer a command line belongs to.
enum class Tool { pip, uv };
std::string_view to_string(Tool tool);
Result<Tool> parse_tool(std::string_view text);

enum class Effect { changes_venv, read_only };

// Whether `argv` (argv[0] the program: pip, python -m pip, uv) may change the environment it
// runs in: pip install/uninstall, uv pip install/uninstall/sync, uv sync/add/remove, and any
// command line the classifier does not know (guarding one too many is the safe mistake).
Effect classify(Tool tool, const std::vector<std::string>& argv);

// One wrapped script.
struct WrappedScript {
  std::string name;    // "pip3.12", relative to bin/
  bool intact = true;  // false: bin/<name> is no longer the wrapper (pip rewrote it)
};

// How many of its snapshots the guard keeps unless told otherwise (`guard enable --keep N`).
inline constexpr std::size_t k_default_keep = 10;
// The reason every snapshot a guarded command takes begins with: the guard prunes only those.
inline constexpr std::string_view k_snapshot_reason_prefix = "guard: ";

struct GuardStatus {
  bool enabled = false;
  fs::path venvfix;  // the binary the wrappers call
  std::vector<WrappedScript> scripts;
  // The newest this many of the guard's snapshots are kept; older ones go during each guarded
  // command (with the store links only they held).
  std::size_t keep = k_default_keep;
};

// Installs the wrappers (idempotent: an enabled guard is refreshed, keeping its `keep` unless one
// is given). `venvfix` is the absolute path of the binary the wrappers call. Errors: no installer
// script in bin/ to wrap (naming the directory), a file that cannot be linked or written (naming
// it).
Result<GuardStatus> enable(const env::Venv& venv, const fs::path& venvfix,
                           std::optional<std::size_t> keep = std::nullopt);
// Puts every original back (a script pip rewrote since is left as pip wrote it, and said so in
// the returned status) and removes .venvfix/guard; .venvfix itself too when the guard made it.
Result<GuardStatus> disable(const env::Venv& venv);
Result<GuardStatus> status(const env::Venv& venv);

// Whether `path` is a script `enable` wrote (a wrapper run through another wrapper, or pip's
// own script, is not guarded twice).
bool is_wrapper(const fs::path& path);
// The original script a wrapper at `path` (VENV/bin/NAME) runs, kept as VENV/.venvfix/guard/bin/
// NAME; nullopt when `path` is no wrapper or its original is not there.
std::optional<fs::path> wrapped_original(const fs::path& path);

enum class Shell { bash, zsh, fish };
Result<Shell> parse_shell(std::string_view text);
// The functions `eval "$(venvfix shell-hook bash)"` defines: `pip`, `pip3`, `python -m pip`,
// `python3 -m pip` and `uv` run through `venvfix guard exec` while the activated venv
// ($VIRTUAL_ENV) has its guard enabled, and untouched otherwise.
std::string shell_hook(Shell shell, const fs::path& venvfix);

}  // namespace venvfix::guard
