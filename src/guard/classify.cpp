// Which pip and uv command lines change the environment they run in. The lists follow
// `pip --help` (pip 23–25) and `uv help` (uv 0.4–0.9): options that take a separate value are
// skipped with their value, the first other word is the command. What is not listed as
// read-only is guarded.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "venvfix/guard/guard.hpp"

namespace venvfix::guard {

namespace {

template <std::size_t N>
bool one_of(std::string_view word, const std::array<std::string_view, N>& words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// pip's general options that take a separate value ("--log FILE"; "--log=FILE" is one word).
constexpr std::array<std::string_view, 14> k_pip_valued = {
    "--python",         "--log",
    "--log-file",       "--proxy",
    "--retries",        "--timeout",
    "--exists-action",  "--trusted-host",
    "--cert",           "--client-cert",
    "--cache-dir",      "--use-feature",
    "--use-deprecated", "--keyring-provider"};
constexpr std::array<std::string_view, 16> k_pip_read_only = {
    "list", "show",  "freeze", "check", "inspect", "download", "wheel",      "hash",
    "help", "debug", "config", "cache", "index",   "search",   "completion", "lock"};

constexpr std::array<std::string_view, 12> k_uv_valued = {
    "--cache-dir", "--config-file",         "--directory",         "--project",
    "--color",     "--allow-insecure-host", "--python-preference", "--python",
    "-p",          "--index-url",           "--default-index",     "--native-tls-cert"};
constexpr std::array<std::string_view, 13> k_uv_read_only = {"lock",
                                                             "tool",
                                                             "python",
                                                             "cache",
                                                             "self",
                                                             "help",
                                                             "version",
                                                             "init",
                                                             "export",
                                                             "tree",
                                                             "build",
                                                             "publish",
                                                             "generate-shell-completion"};
constexpr std::array<std::string_view, 6> k_uv_pip_read_only = {"list",  "show", "freeze",
                                                                "check", "tree", "compile"};

// The index of the first word from `from` on that is not an option or an option's value;
// args.size() when there is none.
template <std::size_t N>
std::size_t first_word(const std::vector<std::string>& args, std::size_t from,
                       const std::array<std::string_view, N>& valued) {
  for (std::size_t i = from; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.empty() || word.front() != '-') return i;
    if (word.find('=') == std::string::npos && one_of(word, valued)) ++i;
  }
  return args.size();
}

bool is_python(std::string_view program) {
  const std::size_t slash = program.rfind('/');
  const std::string_view name =
      slash == std::string_view::npos ? program : program.substr(slash + 1);
  return name.starts_with("python") || name.starts_with("pypy");
}

// Where pip's own arguments start in `python [flags] -m pip ARGS`; 0 when it is no pip run.
std::size_t pip_module_arguments(const std::vector<std::string>& argv) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (word == "-m") {
      return i + 1 < argv.size() && argv[i + 1] == "pip" ? i + 2 : 0;
    }
    if (word == "-X" || word == "-W") {
      ++i;  // an interpreter option with a value
    } else if (word.empty() || word.front() != '-') {
      return 0;  // a script or -c: not pip
    }
  }
  return 0;
}

Effect classify_pip(const std::vector<std::string>& argv) {
  std::size_t from = 1;
  if (!argv.empty() && is_python(argv.front())) {
    from = pip_module_arguments(argv);
    if (from == 0) return Effect::read_only;  // the interpreter, not pip
  }
  const std::size_t at = first_word(argv, from, k_pip_valued);
  if (at == argv.size()) {
    // No command: `pip --version`, `pip -h` print and exit; anything else is not known.
    const bool only_info = std::all_of(argv.begin() + static_cast<std::ptrdiff_t>(from), argv.end(),
                                       [](const std::string& w) {
                                         return w == "--version" || w == "-V" || w == "-h" ||
                                                w == "--help" || w == "-q" || w == "-v";
                                       });
    return only_info ? Effect::read_only : Effect::changes_venv;
  }
  return one_of(argv[at], k_pip_read_only) ? Effect::read_only : Effect::changes_venv;
}

Effect classify_uv(const std::vector<std::string>& argv) {
  const std::size_t at = first_word(argv, 1, k_uv_valued);
  if (at == argv.size()) return Effect::read_only;  // `uv`, `uv --version`: help or version
  const std::string& command = argv[at];
  if (command == "pip") {
    const std::size_t sub = first_word(argv, at + 1, k_uv_valued);
    if (sub == argv.size()) return Effect::read_only;
    return one_of(argv[sub], k_uv_pip_read_only) ? Effect::read_only : Effect::changes_venv;
  }
  return one_of(command, k_uv_read_only) ? Effect::read_only : Effect::changes_venv;
}

}  // namespace

std::string_view to_string(Tool tool) {
  return tool == Tool::pip ? "pip" : "uv";
}

Result<Tool> parse_tool(std::string_view text) {
  if (text == "pip") return Tool::pip;
  if (text == "uv") return Tool::uv;
  return make_error(ExitCode::usage, "unknown installer '{}' (pip or uv)", text);
}

Effect classify(Tool tool, const std::vector<std::string>& argv) {
  return tool == Tool::pip ? classify_pip(argv) : classify_uv(argv);
}

}  // namespace venvfix::guard
