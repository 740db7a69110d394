// `venvfix shell-hook bash|zsh|fish`: functions for what no wrapper in bin/ catches, in the
// manner of conda's and direnv's hooks. They act only while an activated venv ($VIRTUAL_ENV)
// has its guard enabled, and pass everything else to `command` untouched.
#include <string>

#include "venvfix/guard/guard.hpp"

namespace venvfix::guard {

namespace {

std::string posix_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string fish_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

// bash and zsh share one text: `local`, `command` and "$@" mean the same in both.
std::string posix_hook(std::string_view shell, const fs::path& venvfix) {
  return fmt::format(
      "# venvfix shell hook ({0}): eval \"$(venvfix shell-hook {0})\"\n"
      "__venvfix_guard() {{\n"
      "  local tool=$1\n"
      "  shift\n"
      "  if [ -n \"${{VIRTUAL_ENV:-}}\" ] && [ \"${{VENVFIX_GUARD:-1}}\" != 0 ] &&\n"
      "     [ -z \"${{VENVFIX_GUARD_ACTIVE:-}}\" ] &&\n"
      "     [ -f \"$VIRTUAL_ENV/.venvfix/guard/guard.json\" ] && [ -x {1} ]; then\n"
      "    {1} --venv \"$VIRTUAL_ENV\" guard exec --tool \"$tool\" -- \"$@\"\n"
      "  else\n"
      "    command \"$@\"\n"
      "  fi\n"
      "}}\n"
      "pip() {{ __venvfix_guard pip pip \"$@\"; }}\n"
      "pip3() {{ __venvfix_guard pip pip3 \"$@\"; }}\n"
      "uv() {{ __venvfix_guard uv uv \"$@\"; }}\n"
      "python() {{\n"
      "  if [ \"${{1:-}}\" = -m ] && [ \"${{2:-}}\" = pip ]; then __venvfix_guard pip python "
      "\"$@\";\n"
      "  else command python \"$@\"; fi\n"
      "}}\n"
      "python3() {{\n"
      "  if [ \"${{1:-}}\" = -m ] && [ \"${{2:-}}\" = pip ]; then __venvfix_guard pip python3 "
      "\"$@\";\n"
      "  else command python3 \"$@\"; fi\n"
      "}}\n",
      shell, posix_quote(venvfix.string()));
}

std::string fish_hook(const fs::path& venvfix) {
  return fmt::format(
      "# venvfix shell hook (fish): venvfix shell-hook fish | source\n"
      "function __venvfix_guard\n"
      "    set -l tool $argv[1]\n"
      "    set -e argv[1]\n"
      "    if set -q VIRTUAL_ENV; and test \"$VENVFIX_GUARD\" != 0; and not set -q "
      "VENVFIX_GUARD_ACTIVE; and test -f \"$VIRTUAL_ENV/.venvfix/guard/guard.json\"; and test -x "
      "{0}\n"
      "        {0} --venv \"$VIRTUAL_ENV\" guard exec --tool $tool -- $argv\n"
      "    else\n"
      "        command $argv\n"
      "    end\n"
      "end\n"
      "function pip; __venvfix_guard pip pip $argv; end\n"
      "function pip3; __venvfix_guard pip pip3 $argv; end\n"
      "function uv; __venvfix_guard uv uv $argv; end\n"
      "function python\n"
      "    if test (count $argv) -ge 2; and test \"$argv[1]\" = -m; and test \"$argv[2]\" = pip\n"
      "        __venvfix_guard pip python $argv\n"
      "    else\n"
      "        command python $argv\n"
      "    end\n"
      "end\n"
      "function python3\n"
      "    if test (count $argv) -ge 2; and test \"$argv[1]\" = -m; and test \"$argv[2]\" = pip\n"
      "        __venvfix_guard pip python3 $argv\n"
      "    else\n"
      "        command python3 $argv\n"
      "    end\n"
      "end\n",
      fish_quote(venvfix.string()));
}

}  // namespace

Result<Shell> parse_shell(std::string_view text) {
  if (text == "bash") return Shell::bash;
  if (text == "zsh") return Shell::zsh;
  if (text == "fish") return Shell::fish;
  return make_error(ExitCode::usage, "unknown shell '{}' (bash, zsh or fish)", text);
}

std::string shell_hook(Shell shell, const fs::path& venvfix) {
  switch (shell) {
    case Shell::bash:
      return posix_hook("bash", venvfix);
    case Shell::zsh:
      return posix_hook("zsh", venvfix);
    case Shell::fish:
      return fish_hook(venvfix);
  }
  return {};
}

}  // namespace venvfix::guard
