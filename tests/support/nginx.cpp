#include "support/nginx.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <utility>

namespace venvfix::testing {

namespace {

constexpr const char* k_nginx = "/usr/sbin/nginx";

// A port the kernel just handed out on 127.0.0.1 (free now; nginx binds it right after).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

void write_config(const fs::path& file, const fs::path& root, const fs::path& work, int port) {
  const std::string w = work.string();
  std::ofstream out(file);
  // As root, nginx would switch to "nobody", who cannot read a test's private directories.
  if (::geteuid() == 0) out << "user root;\n";
  out << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
      << "pid " << w << "/nginx.pid;\nerror_log " << w << "/error.log;\n"
      << "events { worker_connections 64; }\n"
      << "http {\n  access_log " << w << "/access.log;\n"
      << "  client_body_temp_path " << w << "/body;\n  proxy_temp_path " << w << "/proxy;\n"
      << "  fastcgi_temp_path " << w << "/fastcgi;\n  uwsgi_temp_path " << w << "/uwsgi;\n"
      << "  scgi_temp_path " << w << "/scgi;\n"
      << "  types { text/html html; application/octet-stream whl; }\n"
      << "  default_type application/octet-stream;\n"
      << "  server { listen 127.0.0.1:" << port << "; root " << root.string() << "; }\n}\n";
}

}  // namespace

bool nginx_available() {
  return ::access(k_nginx, X_OK) == 0;
}

std::optional<NginxServer> NginxServer::start(const fs::path& root, const fs::path& work) {
  if (!nginx_available()) return std::nullopt;
  std::error_code error;
  fs::create_directories(work, error);
  for (int attempt = 0; attempt < 3; ++attempt) {  // another process may take the port first
    const int port = free_port();
    if (port == 0) continue;
    const fs::path config = work / "nginx.conf";
    write_config(config, root, work, port);
    const pid_t pid = ::fork();
    if (pid == 0) {
      // A test that dies (an ASan abort) must not leave nginx holding ctest's output pipe open:
      // ctest would wait for it until the timeout. So nginx dies with the test and writes to a
      // file of its own.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int log = ::open((work / "stdout.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) {
        ::dup2(log, STDOUT_FILENO);
        ::dup2(log, STDERR_FILENO);
      }
      ::execl(k_nginx, k_nginx, "-p", work.c_str(), "-c", config.c_str(), nullptr);
      ::_exit(127);
    }
    if (pid < 0) return std::nullopt;
    NginxServer server(pid, port, work);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (accepts(port)) return server;
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        server.m_pid = -1;  // exited: bind failed, try another port
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return std::nullopt;
}

NginxServer::NginxServer(NginxServer&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)),
      m_port(other.m_port),
      m_work(std::move(other.m_work)) {}

NginxServer::~NginxServer() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGTERM);
  int status = 0;
  ::waitpid(m_pid, &status, 0);
}

std::string NginxServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(m_port) + path;
}

}  // namespace venvfix::testing
