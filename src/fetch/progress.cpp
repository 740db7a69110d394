#include "progress.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace venvfix::fetch::detail {

namespace {
constexpr auto k_redraw_interval = std::chrono::milliseconds(100);
constexpr std::size_t k_max_lines = 8;  // active transfers shown; the rest count in the total
}  // namespace

std::string format_bytes(double bytes) {
  static constexpr const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} {}", bytes, k_units[unit])
                   : fmt::format("{:.1f} {}", bytes, k_units[unit]);
}

Progress::Progress(ProgressMode mode, std::size_t files, std::uint64_t known_total_bytes)
    : m_enabled(mode == ProgressMode::automatic),
      m_live(m_enabled && ::isatty(STDERR_FILENO) == 1),
      m_files(files),
      m_known_total(known_total_bytes),
      m_start(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  clear();
}

void Progress::started(std::size_t id, std::string name, std::optional<std::uint64_t> total) {
  m_active[id] = Active{std::move(name), total, 0};
}

void Progress::update(std::size_t id, std::uint64_t bytes, std::optional<std::uint64_t> total) {
  auto it = m_active.find(id);
  if (it == m_active.end()) return;
  it->second.bytes = bytes;
  if (total) it->second.total = total;
}

void Progress::finished(std::size_t id, std::uint64_t bytes) {
  m_active.erase(id);
  m_finished_bytes += bytes;
  ++m_done;
}

void Progress::tick() {
  if (!m_live) return;
  auto now = std::chrono::steady_clock::now();
  if (now - m_last_draw < k_redraw_interval) return;
  m_last_draw = now;
  draw();
}

void Progress::clear() {
  if (!m_live || m_drawn_lines == 0) return;
  std::string out;
  for (int i = 0; i < m_drawn_lines; ++i) out += "\x1b[1A\x1b[2K";
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
  m_drawn_lines = 0;
}

void Progress::draw() {
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  std::uint64_t bytes = m_finished_bytes;
  for (const auto& [id, active] : m_active) bytes += active.bytes;
  double rate = elapsed > 0 ? static_cast<double>(bytes) / elapsed : 0;
  std::string out;
  for (int i = 0; i < m_drawn_lines; ++i) out += "\x1b[1A\x1b[2K";
  int lines = 0;
  for (const auto& [id, active] : m_active) {
    if (static_cast<std::size_t>(lines) >= k_max_lines) break;
    std::string total =
        active.total ? " / " + format_bytes(static_cast<double>(*active.total)) : "";
    out += fmt::format("  {:<50.50} {:>10}{}\n", active.name,
                       format_bytes(static_cast<double>(active.bytes)), total);
    ++lines;
  }
  std::string eta;
  if (m_known_total > bytes && rate > 0) {
    eta = fmt::format("  ETA {:.0f} s", static_cast<double>(m_known_total - bytes) / rate);
  }
  out += fmt::format(
      "Downloading {}/{} files  {}{}  {}/s{}\n", m_done, m_files,
      format_bytes(static_cast<double>(bytes)),
      m_known_total > 0 ? " / " + format_bytes(static_cast<double>(m_known_total)) : std::string(),
      format_bytes(rate), eta);
  ++lines;
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
  m_drawn_lines = lines;
}

void Progress::summary() {
  clear();
  if (!m_enabled) return;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  std::size_t downloaded = m_files - m_cached;
  std::string cached = m_cached > 0 ? fmt::format(", {} from the cache", m_cached) : "";
  if (downloaded == 0) {
    fmt::print(stderr, "All {} files were in the cache\n", m_files);
  } else {
    fmt::print(
        stderr, "Downloaded {} file{} ({}) in {:.1f} s ({}/s){}\n", downloaded,
        downloaded == 1 ? "" : "s", format_bytes(static_cast<double>(m_finished_bytes)), elapsed,
        format_bytes(elapsed > 0 ? static_cast<double>(m_finished_bytes) / elapsed : 0), cached);
  }
  std::fflush(stderr);
}

}  // namespace venvfix::fetch::detail
