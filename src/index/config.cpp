#include "venvfix/index/config.hpp"

#include <cstdlib>

#include "venvfix/base/strings.hpp"

namespace venvfix::index {

namespace {

std::optional<std::string> first_set(const IndexConfig::Environment& environment,
                                     std::initializer_list<const char*> names) {
  for (const char* name : names) {
    std::optional<std::string> value = environment(name);
    if (value && !trim(*value).empty()) return std::string(trim(*value));
  }
  return std::nullopt;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    std::size_t start = i;
    while (i < text.size() && !is_ascii_space(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

bool truthy(const std::optional<std::string>& value) {
  if (!value) return false;
  std::string text = to_lower_ascii(trim(*value));
  return text == "1" || text == "true" || text == "yes" || text == "on";
}

}  // namespace

IndexConfig IndexConfig::from_environment(const Environment& environment) {
  IndexConfig config;
  if (auto url = first_set(environment, {"VENVFIX_INDEX_URL", "PIP_INDEX_URL", "UV_INDEX_URL"})) {
    config.index_urls = {*url};
  }
  if (auto extras = first_set(environment, {"PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"})) {
    for (std::string& url : words(*extras)) config.index_urls.push_back(std::move(url));
  }
  if (auto links = first_set(environment, {"PIP_FIND_LINKS", "UV_FIND_LINKS"})) {
    config.find_links = words(*links);
  }
  config.offline = truthy(environment("VENVFIX_OFFLINE")) || truthy(environment("UV_OFFLINE"));
  if (auto timeout = first_set(environment, {"VENVFIX_TIMEOUT", "PIP_TIMEOUT",
                                             "PIP_DEFAULT_TIMEOUT", "UV_HTTP_TIMEOUT"})) {
    char* end = nullptr;
    double seconds = std::strtod(timeout->c_str(), &end);
    if (end != nullptr && *end == '\0' && seconds > 0 && seconds < 1e6) {
      config.timeout_seconds = seconds;
    }
  }
  if (auto dir = first_set(environment, {"VENVFIX_CACHE_DIR"})) {
    config.cache_dir = *dir;
  } else if (auto xdg = first_set(environment, {"XDG_CACHE_HOME"})) {
    config.cache_dir = fs::path(*xdg) / "venvfix";
  } else if (auto home = first_set(environment, {"HOME"})) {
    config.cache_dir = fs::path(*home) / ".cache" / "venvfix";
  }
  if (auto cert = first_set(environment, {"PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"})) {
    config.ca_cert = fs::path(*cert);
  }
  if (auto netrc = first_set(environment, {"NETRC"})) config.netrc_file = fs::path(*netrc);
  return config;
}

IndexConfig IndexConfig::from_environment() {
  return from_environment([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace venvfix::index
