// guard enable / disable / status: the wrappers in bin/ and the originals kept beside them.
//
// On disk: .venvfix/guard/guard.json (venvfix-guard/1: the binary the wrappers call, the
// scripts wrapped, whether the guard made .venvfix) and .venvfix/guard/bin/<name>, a hard link
// of each original (same inode, mode and mtime: `disable` renames it back, so the venv is as
// before). No venv lock is taken: only bin/<installer> and .venvfix/guard change, which no
// transaction touches.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include <nlohmann/json.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/json_fields.hpp"
#include "venvfix/base/json_text.hpp"
#include "venvfix/guard/guard.hpp"

namespace venvfix::guard {

namespace {

constexpr std::string_view k_schema = "venvfix-guard/1";
constexpr std::string_view k_marker = "# venvfix guard:";

fs::path guard_dir(const env::Venv& venv) {
  return venv.state_dir() / "guard";
}
fs::path saved_dir(const env::Venv& venv) {
  return guard_dir(venv) / "bin";
}
fs::path state_file(const env::Venv& venv) {
  return guard_dir(venv) / "guard.json";
}

// pip, pip3, pip3.12, uv: the installer scripts pip and uv put in bin/.
bool is_installer_name(std::string_view name) {
  if (name == "pip" || name == "uv") return true;
  if (!name.starts_with("pip")) return false;
  std::string_view rest = name.substr(3);
  if (rest.empty() || rest.front() < '0' || rest.front() > '9') return false;
  return std::all_of(rest.begin(), rest.end(),
                     [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string wrapper_text(const env::Venv& venv, const std::string& name, const fs::path& venvfix) {
  const std::string tool = name == "uv" ? "uv" : "pip";
  const std::string real = (saved_dir(venv) / name).string();
  return fmt::format(
      "#!/bin/sh\n"
      "{} `venvfix guard disable` puts back the original, kept at {}.\n"
      "# Changing {} commands run under `venvfix run --snapshot`; VENVFIX_GUARD=0 runs one "
      "unguarded.\n"
      "real={}\n"
      "venvfix={}\n"
      "if [ \"${{VENVFIX_GUARD:-1}}\" = 0 ] || [ -n \"${{VENVFIX_GUARD_ACTIVE:-}}\" ] || "
      "[ ! -x \"$venvfix\" ]; then\n"
      "  exec \"$real\" \"$@\"\n"
      "fi\n"
      "exec \"$venvfix\" --venv {} guard exec --tool {} -- \"$real\" \"$@\"\n",
      k_marker, real, tool, shell_quote(real), shell_quote(venvfix.string()),
      shell_quote(venv.root.string()), tool);
}

struct State {
  fs::path venvfix;
  bool made_state_dir = false;
  std::vector<std::string> scripts;
  std::size_t keep = k_default_keep;  // absent (an older venvfix wrote it): the default
};

Result<std::optional<State>> read_state(const env::Venv& venv) {
  const fs::path file = state_file(venv);
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<State>();
  VENVFIX_TRY_ASSIGN(std::string text, read_file(file, 1 << 20));
  const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  const std::string context = fmt::format("{} is not a venvfix guard state", file.string());
  if (!document.is_object()) return make_error(ExitCode::error, "{}: not a JSON object", context);
  const JsonFields fields(document, context, ExitCode::error);
  VENVFIX_TRY_ASSIGN(std::string schema, fields.string("schema"));
  if (schema != k_schema) return fields.fail("unknown schema {}", schema);
  State state;
  VENVFIX_TRY_ASSIGN(std::string venvfix, fields.string("venvfix"));
  state.venvfix = venvfix;
  VENVFIX_TRY_ASSIGN(state.made_state_dir, fields.boolean("made_state_dir"));
  VENVFIX_TRY_ASSIGN(state.scripts, fields.strings("scripts"));
  for (const std::string& name : state.scripts) {
    if (!is_installer_name(name)) return fields.fail("\"{}\" is not an installer script", name);
  }
  VENVFIX_TRY_ASSIGN(std::optional<std::uint64_t> keep, fields.count("keep", Presence::optional));
  if (keep && *keep == 0) return fields.fail("\"keep\" is 0: it must be 1 or more");
  if (keep) state.keep = static_cast<std::size_t>(*keep);
  return std::optional<State>(std::move(state));
}

Status write_state(const env::Venv& venv, const State& state) {
  const nlohmann::json document = {{"schema", k_schema},
                                   {"venvfix", state.venvfix.string()},
                                   {"made_state_dir", state.made_state_dir},
                                   {"scripts", state.scripts},
                                   {"keep", state.keep}};
  return write_file_atomic(state_file(venv), json_text(document, 2) + "\n");
}

Status make_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return make_error(ExitCode::error, "cannot create {}: {}", dir.string(), errno_message(errno));
  }
  return ok();
}

// The installer scripts in bin/, sorted.
Result<std::vector<std::string>> installer_scripts(const env::Venv& venv) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(venv.root / "bin", ec);
  if (ec) {
    return make_error(ExitCode::usage, "cannot guard {}: {}: {}", venv.root.string(),
                      (venv.root / "bin").string(), ec.message());
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (is_installer_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Keeps bin/<name> as the saved original (a hard link of it) and writes the wrapper over it.
Status wrap(const env::Venv& venv, const std::string& name, const fs::path& venvfix) {
  const fs::path script = venv.root / "bin" / name;
  const fs::path saved = saved_dir(venv) / name;
  if (!is_wrapper(script)) {
    if (::unlink(saved.c_str()) != 0 && errno != ENOENT) {
      return make_error(ExitCode::error, "cannot replace {}: {}", saved.string(),
                        errno_message(errno));
    }
    if (::linkat(AT_FDCWD, script.c_str(), AT_FDCWD, saved.c_str(), 0) != 0) {
      return make_error(ExitCode::error, "cannot keep {} as {}: {}", script.string(),
                        saved.string(), errno_message(errno));
    }
  }
  return write_file_atomic(script, wrapper_text(venv, name, venvfix), 0755);
}

// Puts bin/<name> back from the saved original; false when pip rewrote bin/<name> since.
Result<bool> unwrap(const env::Venv& venv, const std::string& name) {
  const fs::path script = venv.root / "bin" / name;
  const fs::path saved = saved_dir(venv) / name;
  if (!is_wrapper(script)) return false;  // rewritten since (or removed): left as it is
  if (::rename(saved.c_str(), script.c_str()) != 0) {
    return make_error(ExitCode::error, "cannot put back {} from {}: {}", script.string(),
                      saved.string(), errno_message(errno));
  }
  return true;
}

GuardStatus status_of(const env::Venv& venv, const State& state) {
  GuardStatus status;
  status.enabled = true;
  status.venvfix = state.venvfix;
  status.keep = state.keep;
  for (const std::string& name : state.scripts) {
    status.scripts.push_back({name, is_wrapper(venv.root / "bin" / name)});
  }
  return status;
}

}  // namespace

bool is_wrapper(const fs::path& path) {
  auto text = read_file(path, 1 << 16);
  if (!text) return false;
  return text->starts_with("#!/bin/sh\n") && text->find(k_marker) != std::string::npos;
}

std::optional<fs::path> wrapped_original(const fs::path& path) {
  if (!is_wrapper(path)) return std::nullopt;
  env::Venv venv;
  venv.root = path.parent_path().parent_path();
  fs::path original = saved_dir(venv) / path.filename();
  if (!fs::is_regular_file(original)) return std::nullopt;
  return original;
}

Result<GuardStatus> enable(const env::Venv& venv, const fs::path& venvfix,
                           std::optional<std::size_t> keep) {
  if (keep && *keep == 0) {
    return make_error(ExitCode::usage,
                      "--keep must be 1 or more: the guard keeps its snapshots "
                      "so that a guarded command can be undone");
  }
  VENVFIX_TRY_ASSIGN(std::optional<State> previous, read_state(venv));
  VENVFIX_TRY_ASSIGN(std::vector<std::string> scripts, installer_scripts(venv));
  State state;
  state.venvfix = venvfix;
  state.keep = keep ? *keep : previous ? previous->keep : k_default_keep;
  std::error_code ec;
  state.made_state_dir = previous ? previous->made_state_dir : !fs::exists(venv.state_dir(), ec);
  VENVFIX_TRY(make_dir(venv.state_dir()));
  VENVFIX_TRY(make_dir(guard_dir(venv)));
  VENVFIX_TRY(make_dir(saved_dir(venv)));
  // The state first: a guard interrupted half-way is one `disable` can undo.
  state.scripts = scripts;
  if (previous) {
    for (const std::string& name : previous->scripts) {
      if (std::find(scripts.begin(), scripts.end(), name) == scripts.end()) {
        state.scripts.push_back(name);  // gone from bin/ since: still ours to clean up
      }
    }
  }
  VENVFIX_TRY(write_state(venv, state));
  for (const std::string& name : scripts) VENVFIX_TRY(wrap(venv, name, venvfix));
  return status_of(venv, state);
}

Result<GuardStatus> disable(const env::Venv& venv) {
  VENVFIX_TRY_ASSIGN(std::optional<State> state, read_state(venv));
  if (!state) return GuardStatus{};
  GuardStatus status = status_of(venv, *state);
  for (WrappedScript& script : status.scripts) {
    VENVFIX_TRY_ASSIGN(script.intact, unwrap(venv, script.name));
  }
  std::error_code ec;
  fs::remove_all(guard_dir(venv), ec);
  if (ec) {
    return make_error(ExitCode::error, "cannot remove {}: {}", guard_dir(venv).string(),
                      ec.message());
  }
  if (state->made_state_dir) ::rmdir(venv.state_dir().c_str());  // only when empty
  status.enabled = false;
  return status;
}

Result<GuardStatus> status(const env::Venv& venv) {
  VENVFIX_TRY_ASSIGN(std::optional<State> state, read_state(venv));
  if (!state) return GuardStatus{};
  return status_of(venv, *state);
}

}  // namespace venvfix::guard
