#include "venvfix/base/log.hpp"

#include <unistd.h>

#include <cstdlib>

#include <spdlog/sinks/ansicolor_sink.h>

namespace venvfix {

void setup_logging(Verbosity verbosity, Color color) {
  spdlog::color_mode mode = spdlog::color_mode::automatic;
  const char* no_color = std::getenv("NO_COLOR");
  if (color == Color::never || (color == Color::automatic && no_color != nullptr && *no_color)) {
    mode = spdlog::color_mode::never;
  } else if (color == Color::always) {
    mode = spdlog::color_mode::always;
  }
  auto sink = std::make_shared<spdlog::sinks::ansicolor_stderr_sink_mt>(mode);
  auto logger = std::make_shared<spdlog::logger>("venvfix", sink);
  switch (verbosity) {
    case Verbosity::quiet:
      logger->set_level(spdlog::level::err);
      break;
    case Verbosity::normal:
      logger->set_level(spdlog::level::warn);
      break;
    case Verbosity::verbose:
      logger->set_level(spdlog::level::info);
      break;
    case Verbosity::debug:
      logger->set_level(spdlog::level::debug);
      break;
  }
  logger->set_pattern(verbosity == Verbosity::debug ? "[%H:%M:%S.%e] %^%l%$: %v" : "%^%l%$: %v");
  spdlog::set_default_logger(std::move(logger));
}

std::string redact_url(std::string_view url) {
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  std::size_t authority_start = scheme_end + 3;
  std::size_t authority_end = url.find_first_of("/?#", authority_start);
  if (authority_end == std::string_view::npos) authority_end = url.size();
  std::string_view authority = url.substr(authority_start, authority_end - authority_start);
  std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, authority_start));
  out += "***@";
  out += url.substr(authority_start + at + 1);
  return out;
}

}  // namespace venvfix
