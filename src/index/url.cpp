#include "venvfix/index/url.hpp"

#include <vector>

#include "venvfix/base/log.hpp"
#include "venvfix/base/strings.hpp"

namespace venvfix::index {

std::string UrlParts::to_string() const {
  // RFC 3986 §5.3.
  std::string out;
  if (!scheme.empty()) {
    out += scheme;
    out += ':';
  }
  if (authority) {
    out += "//";
    out += *authority;
  }
  out += path;
  if (query) {
    out += '?';
    out += *query;
  }
  if (fragment) {
    out += '#';
    out += *fragment;
  }
  return out;
}

namespace {

bool is_scheme_char(char c, bool first) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// RFC 3986 §5.2.4.
std::string remove_dot_segments(std::string_view input) {
  std::string output;
  while (!input.empty()) {
    if (input.starts_with("../")) {
      input.remove_prefix(3);
    } else if (input.starts_with("./")) {
      input.remove_prefix(2);
    } else if (input.starts_with("/./")) {
      input.remove_prefix(2);
    } else if (input == "/.") {
      input = "/";
    } else if (input.starts_with("/../") || input == "/..") {
      if (input == "/..") {
        input = "/";
      } else {
        input.remove_prefix(3);
      }
      std::size_t last = output.rfind('/');
      output.erase(last == std::string::npos ? 0 : last);
    } else if (input == "." || input == "..") {
      input = {};
    } else {
      std::size_t start = input.front() == '/' ? 1 : 0;
      std::size_t next = input.find('/', start);
      if (next == std::string_view::npos) next = input.size();
      output.append(input.substr(0, next));
      input.remove_prefix(next);
    }
  }
  return output;
}

// RFC 3986 §5.2.3.
std::string merge_paths(const UrlParts& base, std::string_view reference_path) {
  if (base.authority && base.path.empty()) return "/" + std::string(reference_path);
  std::size_t last = base.path.rfind('/');
  if (last == std::string::npos) return std::string(reference_path);
  return base.path.substr(0, last + 1) + std::string(reference_path);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits an authority into user-info (without '@') and host[:port].
std::pair<std::optional<std::string_view>, std::string_view> split_authority(
    std::string_view authority) {
  std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return {std::nullopt, authority};
  return {authority.substr(0, at), authority.substr(at + 1)};
}

}  // namespace

UrlParts split_url(std::string_view url) {
  UrlParts parts;
  std::string_view rest = url;
  // scheme: up to the first ':' when every character before it is a scheme character.
  std::size_t colon = rest.find(':');
  std::size_t delimiter = rest.find_first_of("/?#");
  if (colon != std::string_view::npos && colon > 0 &&
      (delimiter == std::string_view::npos || colon < delimiter)) {
    bool valid = true;
    for (std::size_t i = 0; i < colon; ++i) valid = valid && is_scheme_char(rest[i], i == 0);
    if (valid) {
      parts.scheme = to_lower_ascii(rest.substr(0, colon));
      rest.remove_prefix(colon + 1);
    }
  }
  if (std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    parts.fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  if (std::size_t question = rest.find('?'); question != std::string_view::npos) {
    parts.query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) slash = rest.size();
    parts.authority = std::string(rest.substr(0, slash));
    rest.remove_prefix(slash);
  }
  parts.path = std::string(rest);
  return parts;
}

namespace {
// Bytes up to the space, and DEL, as %XX (WHATWG's C0 control set, plus the space).
std::string percent_encode_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f) {
      out += fmt::format("%{:02X}", byte);
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string resolve_url(std::string_view base_url, std::string_view reference_url) {
  UrlParts base = split_url(base_url);
  UrlParts reference = split_url(trim(reference_url));
  UrlParts target;
  if (!reference.scheme.empty()) {
    target = reference;
    target.path = remove_dot_segments(reference.path);
  } else {
    if (reference.authority) {
      target.authority = reference.authority;
      target.path = remove_dot_segments(reference.path);
      target.query = reference.query;
    } else {
      if (reference.path.empty()) {
        target.path = base.path;
        target.query = reference.query ? reference.query : base.query;
      } else {
        if (reference.path.front() == '/') {
          target.path = remove_dot_segments(reference.path);
        } else {
          target.path = remove_dot_segments(merge_paths(base, reference.path));
        }
        target.query = reference.query;
      }
      target.authority = base.authority;
    }
    target.scheme = base.scheme;
  }
  target.fragment = reference.fragment;
  // As browsers and pip (_ensure_quoted_url) do: a space or control character left inside a
  // link (the reference's ends are trimmed above) is percent-encoded, so that resolving the URL
  // again gives it back unchanged.
  target.path = percent_encode_controls(target.path);
  if (target.query) target.query = percent_encode_controls(*target.query);
  return target.to_string();
}

std::string without_fragment(std::string_view url) {
  std::size_t hash = url.find('#');
  return std::string(url.substr(0, hash));
}

std::optional<std::string> url_fragment(std::string_view url) {
  std::size_t hash = url.find('#');
  if (hash == std::string_view::npos) return std::nullopt;
  return std::string(url.substr(hash + 1));
}

std::optional<std::string> url_user_info(std::string_view url) {
  UrlParts parts = split_url(url);
  if (!parts.authority) return std::nullopt;
  auto [user_info, host] = split_authority(*parts.authority);
  if (!user_info) return std::nullopt;
  return std::string(*user_info);
}

std::string without_user_info(std::string_view url) {
  UrlParts parts = split_url(url);
  if (!parts.authority) return std::string(url);
  auto [user_info, host] = split_authority(*parts.authority);
  if (!user_info) return std::string(url);
  parts.authority = std::string(host);
  return parts.to_string();
}

std::string with_user_info(std::string_view url, std::string_view user_info) {
  UrlParts parts = split_url(url);
  if (!parts.authority) return std::string(url);
  auto [old_user_info, host] = split_authority(*parts.authority);
  parts.authority = std::string(user_info) + "@" + std::string(host);
  return parts.to_string();
}

std::string url_host_port(std::string_view url) {
  UrlParts parts = split_url(url);
  if (!parts.authority) return {};
  return to_lower_ascii(split_authority(*parts.authority).second);
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int hi = hex_digit(text[i + 1]);
      int lo = hex_digit(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string percent_encode_path(std::string_view path) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : path) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.' || c == '_' || c == '~' || c == '/' || c == '+' || c == '@' ||
                c == '!' || c == '=' || c == ',' || c == ';' || c == ':';
    if (keep) {
      out.push_back(c);
    } else {
      auto byte = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(k_hex[byte >> 4]);
      out.push_back(k_hex[byte & 15]);
    }
  }
  return out;
}

std::string url_file_name(std::string_view url) {
  UrlParts parts = split_url(url);
  std::size_t slash = parts.path.rfind('/');
  std::string_view last = slash == std::string::npos
                              ? std::string_view(parts.path)
                              : std::string_view(parts.path).substr(slash + 1);
  return percent_decode(last);
}

bool is_file_url(std::string_view url) {
  return split_url(url).scheme == "file";
}

bool is_http_url(std::string_view url) {
  std::string scheme = split_url(url).scheme;
  return scheme == "http" || scheme == "https";
}

Result<fs::path> file_url_to_path(std::string_view url) {
  UrlParts parts = split_url(url);
  if (parts.scheme != "file") {
    return make_error(ExitCode::usage, "'{}' is not a file:// URL", display_url(url));
  }
  if (parts.authority && !parts.authority->empty() &&
      to_lower_ascii(*parts.authority) != "localhost") {
    return make_error(ExitCode::usage, "'{}' names a remote host; only local file:// URLs work",
                      display_url(url));
  }
  std::string path = percent_decode(parts.path);
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    return make_error(ExitCode::usage, "'{}' is not an absolute file:// URL", display_url(url));
  }
  return fs::path(path);
}

std::string path_to_file_url(const fs::path& path, UrlTarget target) {
  std::error_code error;  // no current directory: the path as given
  fs::path absolute = fs::absolute(path, error);
  std::string text = (error ? path : absolute).lexically_normal().string();
  if (target == UrlTarget::directory && (text.empty() || text.back() != '/')) text.push_back('/');
  return "file://" + percent_encode_path(text);
}

std::string display_url(std::string_view url) {
  return redact_url(url);
}

}  // namespace venvfix::index
