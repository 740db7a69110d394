#include "support/world.hpp"
#include "support/paths.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "venvfix/base/strings.hpp"

extern char** environ;

namespace venvfix::testing {
namespace {

fs::path world_script() {
  return source_dir() / "tests" / "world" / "world.py";
}

fs::path cache_dir() {
  if (const char* env = std::getenv("VENVFIX_WORLD_CACHE"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return fs::temp_directory_path() / "venvfix-test-world";
  }
  return exe.parent_path() / "test-world";
}

std::vector<std::string> make_env(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos && extra.count(std::string(entry.substr(0, eq))) != 0) {
      continue;
    }
    env.emplace_back(entry);
  }
  for (const auto& [key, value] : extra) {
    env.push_back(key);
    env.back().append("=").append(value);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

std::string join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    out += (out.empty() ? "" : " ") + a;
  }
  return out;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& extra_env,
                          int timeout_seconds) {
  CommandResult result;
  if (argv.empty()) {
    result.err = "run_command: empty argv";
    return result;
  }
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    result.err = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> env = make_env(extra_env);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
    }
    execvpe(c_args[0], c_args.data(), c_env.data());
    const std::string msg = "exec " + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  char buffer[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) {
      close(f.fd);
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    result.exit_code = 137;
    result.err +=
        "\nrun_command: killed after " + std::to_string(timeout_seconds) + " s: " + join(argv);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

const World& test_world() {
  static std::mutex mutex;
  static World world;
  static bool built = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!built) {
    const fs::path root = cache_dir();
    const CommandResult r =
        run_command({"python3", world_script().string(), "build", "--out", root.string()});
    if (r.exit_code != 0) {
      throw std::runtime_error("test world build failed (exit " + std::to_string(r.exit_code) +
                               ") in " + root.string() + ":\n" + r.err);
    }
    world.root = fs::canonical(root);
    world.index_dir = world.root / "index";
    world.wheels_dir = world.index_dir / "files";
    world.hermetic_cache = world.root / "hermetic" / "ld.so.cache";
    built = true;
  }
  return world;
}

fs::path make_module_wheel(const std::string& name, const std::string& version,
                           const fs::path& dir) {
  const CommandResult written =
      run_command({"python3", "-c",
                   "import sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
                   "from wheelgen import Wheel\n"
                   "name, version, out = sys.argv[2:]\n"
                   "module = ('VERSION = %r\\n' % version).encode()\n"
                   "print(Wheel(name=name, version=version, tags=['py3-none-any'], purelib=True,\n"
                   "            files={name + '.py': module}).write(Path(out)))\n",
                   world_script().parent_path().string(), name, version, dir.string()});
  if (written.exit_code != 0) {
    throw std::runtime_error("cannot write the wheel " + name + ": " + written.err);
  }
  return fs::path(std::string(venvfix::trim(written.out)));
}

fs::path make_scenario(std::string_view name, const fs::path& dest_parent) {
  const World& world = test_world();
  fs::path dest = dest_parent / std::string(name);
  for (int n = 2; fs::exists(dest); ++n) {
    dest = dest_parent / (std::string(name) + "-" + std::to_string(n));
  }
  const CommandResult r =
      run_command({"python3", world_script().string(), "scenario", std::string(name), "--world",
                   world.root.string(), "--out", dest.string()});
  if (r.exit_code != 0) {
    throw std::runtime_error("test world scenario " + std::string(name) + " failed (exit " +
                             std::to_string(r.exit_code) + "):\n" + r.err);
  }
  return dest;
}

fs::path hermetic_runner() {
  return source_dir() / "tests" / "world" / "hermetic_run.sh";
}

bool hermetic_available() {
  if (geteuid() != 0) {
    return false;
  }
  static const bool works =
      run_command({"unshare", "-m", "--propagation", "private", "true"}, {}, 30).exit_code == 0;
  return works;
}

IndexServer IndexServer::start(const fs::path& root) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("IndexServer: pipe: ") + std::strerror(errno));
  }
  const std::string script = (source_dir() / "tests" / "world" / "index_server.py").string();
  std::vector<std::string> args = {"python3", script, "--root", root.string(), "--port", "0"};
  std::vector<char*> c_args = c_strings(args);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    execvp(c_args[0], c_args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    throw std::runtime_error(std::string("IndexServer: fork: ") + std::strerror(errno));
  }
  // The first stdout line is the port. Wait at most 30 s for it.
  std::string line;
  pollfd pfd{out_pipe[0], POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    if (poll(&pfd, 1, 200) > 0) {
      char c[256];
      const ssize_t n = read(out_pipe[0], c, sizeof c);
      if (n <= 0) {
        break;
      }
      line.append(c, static_cast<std::size_t>(n));
    }
  }
  close(out_pipe[0]);
  int port = 0;
  try {
    port = std::stoi(line);
  } catch (const std::exception&) {
    port = 0;
  }
  if (port <= 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    throw std::runtime_error("IndexServer: " + script + " printed no port for " + root.string());
  }
  return IndexServer(pid, port);
}

IndexServer::IndexServer(IndexServer&& other) noexcept : m_pid(other.m_pid), m_port(other.m_port) {
  other.m_pid = -1;
}

IndexServer::~IndexServer() {
  if (m_pid > 0) {
    kill(m_pid, SIGTERM);
    int status = 0;
    while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string IndexServer::url() const {
  return "http://127.0.0.1:" + std::to_string(m_port) + "/simple";
}

}  // namespace venvfix::testing
