// A real nginx (Debian's) serving a directory on 127.0.0.1 for one test: the plain web server a
// fleet puts its wheelhouse on. Runs in the foreground (no daemon, one process) with every file
// it writes under its own work directory; stopped on destruction.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace venvfix::testing {

namespace fs = std::filesystem;

class NginxServer {
 public:
  // Serves `root` (its files at http://127.0.0.1:PORT/<path under root>) with pid, logs and
  // temporary files under `work`. nullopt when /usr/sbin/nginx is missing or does not start
  // within 10 s (the error log is then in `work`).
  static std::optional<NginxServer> start(const fs::path& root, const fs::path& work);
  NginxServer(NginxServer&& other) noexcept;
  NginxServer& operator=(NginxServer&&) = delete;
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;
  ~NginxServer();

  std::string url(const std::string& path = "/") const;  // http://127.0.0.1:PORT + path
  fs::path access_log() const { return m_work / "access.log"; }

 private:
  NginxServer(pid_t pid, int port, fs::path work)
      : m_pid(pid), m_port(port), m_work(std::move(work)) {}
  pid_t m_pid = -1;
  int m_port = 0;
  fs::path m_work;
};

// True when Debian's nginx is installed (scripts/setup.sh installs it).
bool nginx_available();

}  // namespace venvfix::testing
