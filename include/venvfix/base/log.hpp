// Logging: spdlog to stderr, and the redaction that keeps credentials out of every line.
#pragma once

#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace venvfix {

enum class Verbosity { quiet, normal, verbose, debug };
enum class Color { automatic, never, always };

// Configures the default logger: stderr, no timestamps at normal levels, colour only on a
// terminal and never when NO_COLOR is set (https://no-color.org).
void setup_logging(Verbosity verbosity, Color color);

// Removes user-info ("user:password@") from a URL, for logs, messages and plan documents.
std::string redact_url(std::string_view url);

}  // namespace venvfix
