// Download progress on stderr: when stderr is a terminal, one line per active transfer and a
// total (bytes, rate, ETA) redrawn in place at most ten times a second; always (unless off) a
// one-line summary at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "venvfix/fetch/config.hpp"

namespace venvfix::fetch::detail {

class Progress {
 public:
  Progress(ProgressMode mode, std::size_t files, std::uint64_t known_total_bytes);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void started(std::size_t id, std::string name, std::optional<std::uint64_t> total);
  // `total`: the size the server announced, once known.
  void update(std::size_t id, std::uint64_t bytes, std::optional<std::uint64_t> total);
  void finished(std::size_t id, std::uint64_t bytes);
  void from_cache() { ++m_cached; }
  // Redraws when due (and only on a terminal).
  void tick();
  // Clears the live lines and prints the summary (success only).
  void summary();
  // Clears the live lines without a summary.
  void clear();

 private:
  struct Active {
    std::string name;
    std::optional<std::uint64_t> total;
    std::uint64_t bytes = 0;
  };
  void draw();

  bool m_enabled;
  bool m_live;
  std::size_t m_files;
  std::size_t m_done = 0;
  std::size_t m_cached = 0;
  std::uint64_t m_known_total;
  std::uint64_t m_finished_bytes = 0;
  std::map<std::size_t, Active> m_active;
  std::chrono::steady_clock::time_point m_start;
  std::chrono::steady_clock::time_point m_last_draw{};
  int m_drawn_lines = 0;
};

// "1.5 MiB", "230 B".
std::string format_bytes(double bytes);

}  // namespace venvfix::fetch::detail
