#include "venvfix/fetch/config.hpp"

#include <algorithm>

namespace venvfix::fetch {

namespace {

// `url` without the user-info of its authority ("https://user:pw@host/x" → "https://host/x"):
// credentials must not decide whether a URL lies under a prefix.
std::string without_user_info(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const std::size_t authority = scheme_end + 3;
  const std::size_t path = std::min(url.find_first_of("/?#", authority), url.size());
  const std::size_t at = url.substr(authority, path - authority).rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, authority));
  out += url.substr(authority + at + 1);
  return out;
}

}  // namespace

bool blocked_offline(const FetchConfig& config, std::string_view url) {
  if (!config.offline) return false;
  const std::string plain = without_user_info(url);
  return std::none_of(config.reachable_offline.begin(), config.reachable_offline.end(),
                      [&](const std::string& prefix) {
                        const std::string allowed = without_user_info(prefix);
                        return !allowed.empty() && plain.starts_with(allowed);
                      });
}

}  // namespace venvfix::fetch
