// HeldCommand: a Python script's interpreter started at once, its imports run, its script held
// until released over a socket.
#include "venvfix/apply/held_command.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <system_error>

#include <spdlog/spdlog.h>

namespace venvfix::apply {

namespace {

// Run as `PYTHON -B -c BOOTSTRAP FD script SCRIPT ARGS…` or `… FD module MODULE PRELOAD ARGS…`.
// Until released it writes nothing (-B: no bytecode) and runs only imports: a script's own
// top-level imports, where the script holds nothing but imports, docstrings and an
// `if __name__ == "__main__":` block (a console script); for a module, PRELOAD (what the
// module's __main__ imports). Released, it runs as `PYTHON SCRIPT ARGS…` or `PYTHON -m MODULE
// ARGS…` would: sys.argv and sys.path[0] as Python sets them, bytecode written as usual, the code
// under `__name__ == "__main__"` (runpy), its exit status Python's. The socket closed without the
// byte (venvfix stopped before the command): it ends at once; a Ctrl-C before then ends it
// quietly with 130.
constexpr const char* k_bootstrap = R"PY(import os, sys

def venvfix_script_imports(script):
    import ast

    def is_main_block(node):
        test = getattr(node, "test", None)
        return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
                and isinstance(test.left, ast.Name) and test.left.id == "__name__"
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value == "__main__")

    def is_docstring(node):
        return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)

    with open(script, "rb") as f:
        tree = ast.parse(f.read(), script)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if all(n in imports or is_main_block(n) or is_docstring(n) for n in tree.body):
        module = ast.Module(body=imports, type_ignores=[])
        exec(compile(module, script, "exec"), {"__name__": "__venvfix_held__"})

def venvfix_hold(fd, preload):
    try:
        preload()
    except Exception:
        pass  # the command's own run meets it again and says so
    go = os.read(fd, 1)
    os.close(fd)
    if go != b"1":
        os._exit(0)

fd, mode, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "script":
    sys.argv = sys.argv[3:]
    sys.path[0] = os.path.dirname(os.path.realpath(target))
    preload = lambda: venvfix_script_imports(target)
else:
    preloaded = sys.argv[4]
    sys.argv = ["-m"] + sys.argv[5:]
    sys.path[0] = os.getcwd()
    preload = lambda: __import__(preloaded)
try:
    venvfix_hold(fd, preload)
except KeyboardInterrupt:
    os._exit(130)
sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
import runpy
if mode == "script":
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__", alter_sys=True)
)PY";

bool is_python_name(std::string_view name) {
  if (!name.starts_with("python")) return false;
  name.remove_prefix(6);
  return name.find_first_not_of("0123456789.") == std::string_view::npos;
}

// `name` as execvp would find it, where that is an executable named like a python.
std::optional<std::string> python_in_path(const std::string& name) {
  const std::optional<fs::path> found = find_executable(name);
  if (!found || !is_python_name(found->filename().string())) return std::nullopt;
  return found->string();
}

}  // namespace

std::optional<std::string> python_script_interpreter(const fs::path& script) {
  // The kernel reads no more of a "#!" line than this (BINPRM_BUF_SIZE).
  constexpr std::size_t k_line_max = 256;
  std::ifstream in(script, std::ios::binary);
  std::string head(k_line_max, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t end = head.find('\n');
  if (end == std::string::npos || !head.starts_with("#!")) return std::nullopt;
  std::string line = head.substr(0, end);
  if (line.ends_with('\r')) line.pop_back();
  const std::string interpreter = line.substr(2);
  const fs::path path(interpreter);
  if (!path.is_absolute() || interpreter.find_first_of(" \t") != std::string::npos ||
      !is_python_name(path.filename().string()) || ::access(interpreter.c_str(), X_OK) != 0) {
    return std::nullopt;
  }
  return interpreter;
}

HeldCommand::HeldCommand(Fd go, std::future<Result<ProcessOutcome>> ended)
    : m_go(std::move(go)), m_ended(std::move(ended)) {}

std::optional<HeldCommand> HeldCommand::start(const std::vector<std::string>& argv) {
  std::vector<std::string> held;  // the bootstrap's arguments after the fd
  std::optional<std::string> interpreter;
  if (argv.size() >= 3 && argv[1] == "-m" && argv[2] == "pip") {
    interpreter = python_in_path(argv.front());
    held = {"module", "pip", "pip._internal.cli.main"};
    held.insert(held.end(), argv.begin() + 3, argv.end());
  } else if (!argv.empty() && argv.front().find('/') != std::string::npos) {
    interpreter = python_script_interpreter(argv.front());
    held = {"script"};
    held.insert(held.end(), argv.begin(), argv.end());
  }
  if (!interpreter) return std::nullopt;
  return start_held(*interpreter, held, argv.front());
}

std::optional<HeldCommand> HeldCommand::start_held(const std::string& interpreter,
                                                   const std::vector<std::string>& arguments,
                                                   const std::string& shown) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    spdlog::debug("cannot hold {}: socketpair: {}", shown, errno_message(errno));
    return std::nullopt;
  }
  Fd ours(fds[0]);
  Fd theirs(fds[1]);
  std::vector<std::string> held = {interpreter, "-B", "-c", k_bootstrap,
                                   std::to_string(theirs.get())};
  held.insert(held.end(), arguments.begin(), arguments.end());
  ProcessOptions options;
  options.stdio = Stdio::inherit;
  options.timeout_ms = std::nullopt;
  options.forward_signals = ForwardSignals::yes;
  options.inherit_fd = theirs.get();
  // The child's end stays open here until the child has ended (it is close-on-exec for every
  // other child); only closing ours tells the child to end unreleased.
  std::future<Result<ProcessOutcome>> ended;
  try {
    ended = std::async(std::launch::async,
                       [held = std::move(held), options, theirs = std::move(theirs)] {
                         return run_process(held, options);
                       });
  } catch (const std::system_error& error) {
    // Nothing started: the command runs unheld, when its turn comes.
    spdlog::debug("cannot hold {}: no thread to wait for it: {}", shown, error.what());
    return std::nullopt;
  }
  spdlog::debug("started `{}` held: its interpreter imports while venvfix gets ready", shown);
  return HeldCommand(std::move(ours), std::move(ended));
}

HeldCommand::~HeldCommand() {
  if (!m_ended.valid()) return;
  m_go = Fd();
  m_ended.wait();
}

Result<int> HeldCommand::release() {
  const char go = '1';
  // A command that already ended (a forwarded signal) reads nothing: no SIGPIPE for that.
  (void)::send(m_go.get(), &go, 1, MSG_NOSIGNAL);
  m_go = Fd();
  VENVFIX_TRY_ASSIGN(ProcessOutcome outcome, m_ended.get());
  if (!outcome.err.empty()) spdlog::error("{}", outcome.err.substr(0, outcome.err.find('\n')));
  return outcome.exit_code;
}

}  // namespace venvfix::apply
