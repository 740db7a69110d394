#include "venvfix/pep/wheel_filename.hpp"

#include <climits>
#include <unordered_map>

#include "pep/text.hpp"
#include "venvfix/base/strings.hpp"
#include "venvfix/pep/name.hpp"

namespace venvfix::pep {

namespace {

Error invalid(std::string_view filename, std::string_view why) {
  return make_error(ExitCode::usage, "invalid wheel file name \"{}\": {}",
                    printable_excerpt(filename, 200), why);
}

Result<std::vector<std::string>> split_tags(std::string_view filename, std::string_view part,
                                            std::string_view what) {
  std::vector<std::string> out;
  for (std::string_view tag : split(part, '.')) {
    if (tag.empty()) return invalid(filename, fmt::format("the {} tag has an empty part", what));
    for (char c : tag) {
      if (!text::is_alnum(c) && c != '_') {
        return invalid(filename,
                       fmt::format("the {} tag \"{}\" has a character other than a letter, digit "
                                   "or '_'",
                                   what, printable_excerpt(tag)));
      }
    }
    out.emplace_back(tag);
  }
  return out;
}

}  // namespace

Result<WheelFilename> WheelFilename::parse(std::string_view filename) {
  constexpr std::string_view k_suffix = ".whl";
  if (filename.size() < k_suffix.size() ||
      filename.substr(filename.size() - k_suffix.size()) != k_suffix) {
    return invalid(filename, "it does not end with .whl");
  }
  std::string_view stem = filename.substr(0, filename.size() - k_suffix.size());
  std::vector<std::string_view> parts = split(stem, '-');
  if (parts.size() != 5 && parts.size() != 6) {
    return invalid(filename,
                   fmt::format("expected 5 or 6 parts separated by '-', found {}", parts.size()));
  }
  WheelFilename wheel;
  std::string_view name = parts[0];
  for (char c : name) {
    if (!text::is_alnum(c) && c != '.' && c != '_') {
      return invalid(filename, "the project name may hold only letters, digits, '.' and '_'");
    }
  }
  if (name.find("__") != std::string_view::npos || !is_valid_name(name)) {
    return invalid(filename, "the project name is not a valid escaped name");
  }
  wheel.name = std::string(name);
  wheel.normalized_name = normalize_name(name);
  auto version = Version::parse(parts[1]);
  if (!version) return invalid(filename, version.error().message);
  wheel.version = std::move(*version);
  if (parts.size() == 6) {
    std::string_view build = parts[2];
    std::size_t digits = 0;
    while (digits < build.size() && text::is_digit(build[digits])) ++digits;
    if (digits == 0) return invalid(filename, "the build tag does not start with a digit");
    std::string_view number = build.substr(0, digits);
    while (number.size() > 1 && number.front() == '0') number.remove_prefix(1);
    long long value = 0;
    for (char c : number) {
      value = value * 10 + (c - '0');
      if (value > INT_MAX) return invalid(filename, "the build number is too large");
    }
    wheel.build_tag = std::pair{static_cast<int>(value), std::string(build.substr(digits))};
  }
  std::size_t t = parts.size() - 3;
  VENVFIX_TRY_ASSIGN(wheel.python_tags, split_tags(filename, parts[t], "python"));
  VENVFIX_TRY_ASSIGN(wheel.abi_tags, split_tags(filename, parts[t + 1], "ABI"));
  VENVFIX_TRY_ASSIGN(wheel.platform_tags, split_tags(filename, parts[t + 2], "platform"));
  return wheel;
}

std::vector<Tag> WheelFilename::tags() const {
  std::vector<Tag> out;
  for (const auto& py : python_tags) {
    for (const auto& abi : abi_tags) {
      for (const auto& platform : platform_tags) {
        out.push_back({to_lower_ascii(py), to_lower_ascii(abi), to_lower_ascii(platform)});
      }
    }
  }
  return out;
}

std::optional<std::size_t> select_best_wheel(std::span<const WheelFilename> wheels,
                                             std::span<const Tag> supported) {
  std::unordered_map<std::string, std::size_t> rank;
  rank.reserve(supported.size());
  for (std::size_t i = 0; i < supported.size(); ++i) rank.emplace(supported[i].to_string(), i);

  std::optional<std::size_t> best;
  std::size_t best_rank = 0;
  for (std::size_t i = 0; i < wheels.size(); ++i) {
    std::optional<std::size_t> wheel_rank;
    for (const Tag& tag : wheels[i].tags()) {
      auto it = rank.find(tag.to_string());
      if (it != rank.end() && (!wheel_rank || it->second < *wheel_rank)) wheel_rank = it->second;
    }
    if (!wheel_rank) continue;
    bool better = false;
    if (!best) {
      better = true;
    } else {
      const WheelFilename& b = wheels[*best];
      const WheelFilename& w = wheels[i];
      if (auto o = w.version <=> b.version; o != 0) {
        better = o > 0;
      } else if (*wheel_rank != best_rank) {
        better = *wheel_rank < best_rank;
      } else {
        // pip: a wheel without a build tag sorts below any with one.
        better = w.build_tag.has_value() && (!b.build_tag || *w.build_tag > *b.build_tag);
      }
    }
    if (better) {
      best = i;
      best_rank = *wheel_rank;
    }
  }
  return best;
}

}  // namespace venvfix::pep
