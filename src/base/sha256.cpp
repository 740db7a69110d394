#include "venvfix/base/sha256.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "crypto_library.hpp"

namespace venvfix {

// libcrypto is loaded by the first digest a process makes (crypto_library.hpp).
struct Sha256::Impl {
  const detail::CryptoLibrary& crypto = detail::libcrypto();
  EVP_MD_CTX* context = crypto.md_ctx_new();
  Impl() { crypto.digest_init(context, crypto.sha256, nullptr); }
  ~Impl() { crypto.md_ctx_free(context); }
};

Sha256::Sha256() : m_impl(std::make_unique<Impl>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> data) {
  m_impl->crypto.digest_update(m_impl->context, data.data(), data.size());
}

void Sha256::update(std::string_view data) {
  m_impl->crypto.digest_update(m_impl->context, data.data(), data.size());
}

Sha256Digest Sha256::finish() {
  Sha256Digest digest{};
  unsigned int length = 0;
  m_impl->crypto.digest_final(m_impl->context, digest.data(), &length);
  m_impl->crypto.digest_init(m_impl->context, m_impl->crypto.sha256, nullptr);
  return digest;
}

Sha256Digest sha256(std::string_view data) {
  Sha256 hasher;
  hasher.update(data);
  return hasher.finish();
}

Result<Sha256Digest> sha256_file(const fs::path& path) {
  // read(2) in pieces rather than one mapping: memory stays bounded whatever the file's size
  // (a mapped 2 GB wheel would count 2 GB in the resident set), and a file truncated while it
  // is read gives a short read, not SIGBUS.
  // A small file gets a buffer of its size: a fresh 1 MiB block per file may cost a mapping and
  // its page faults each time (always under ASan, which also poisons its shadow: the tests'
  // fingerprints of venvs spent most of their time there).
  constexpr std::size_t k_piece = 1u << 20;
  constexpr std::size_t k_smallest_piece = 4096;
  VENVFIX_TRY_ASSIGN(Fd fd, open_file(path, O_RDONLY));
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::size_t piece = k_piece;
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    piece = std::clamp(static_cast<std::size_t>(st.st_size), k_smallest_piece, k_piece);
  }
  std::unique_ptr<std::byte[]> buffer(new std::byte[piece]);
  Sha256 hasher;
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.get(), piece);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ExitCode::error, "{}: {}", path.string(), errno_message(errno));
    }
    if (n == 0) break;
    hasher.update(std::span<const std::byte>(buffer.get(), static_cast<std::size_t>(n)));
  }
  return hasher.finish();
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out.push_back(k_digits[b >> 4]);
    out.push_back(k_digits[b & 15]);
  }
  return out;
}

std::string to_base64url_nopad(std::span<const std::uint8_t> bytes) {
  static constexpr char k_alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
    out.push_back(k_alphabet[(v >> 6) & 63]);
    out.push_back(k_alphabet[v & 63]);
  }
  std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    std::uint32_t v = bytes[i] << 16;
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    std::uint32_t v = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
    out.push_back(k_alphabet[(v >> 6) & 63]);
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Each character's 6-bit value, -1 for none: one lookup per character (a torch-sized venv's
// RECORDs hold 30,000 digests, decoded by every doctor).
constexpr std::array<std::int8_t, 256> k_base64url_values = [] {
  std::array<std::int8_t, 256> values{};
  values.fill(-1);
  for (int c = 'A'; c <= 'Z'; ++c) values[c] = static_cast<std::int8_t>(c - 'A');
  for (int c = 'a'; c <= 'z'; ++c) values[c] = static_cast<std::int8_t>(c - 'a' + 26);
  for (int c = '0'; c <= '9'; ++c) values[c] = static_cast<std::int8_t>(c - '0' + 52);
  values['-'] = values['+'] = 62;  // tolerate the standard alphabet too
  values['_'] = values['/'] = 63;
  return values;
}();

int base64url_value(char c) {
  return k_base64url_values[static_cast<unsigned char>(c)];
}
}  // namespace

std::optional<std::string> bytes_from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_value(hex[i]);
    const int lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(hi * 16 + lo));
  }
  return bytes;
}

Result<Sha256Digest> sha256_from_hex(std::string_view hex) {
  if (hex.size() != 64) {
    return make_error(ExitCode::usage, "'{}' is not a sha256 hex digest (64 hex digits)", hex);
  }
  const std::optional<std::string> bytes = bytes_from_hex(hex);
  if (!bytes) return make_error(ExitCode::usage, "'{}' is not a sha256 hex digest", hex);
  Sha256Digest digest{};
  std::copy(bytes->begin(), bytes->end(), digest.begin());
  return digest;
}

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Result<Sha256Digest> sha256_from_base64url(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() != 43) {
    return make_error(ExitCode::usage, "'{}' is not an unpadded base64 sha256 digest", text);
  }
  Sha256Digest digest{};
  std::uint32_t accumulator = 0;
  int bits = 0;
  std::size_t out = 0;
  for (char c : text) {
    int v = base64url_value(c);
    if (v < 0) return make_error(ExitCode::usage, "'{}' is not a base64 sha256 digest", text);
    accumulator = (accumulator << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (out < digest.size()) digest[out++] = static_cast<std::uint8_t>(accumulator >> bits);
    }
  }
  return digest;
}

}  // namespace venvfix
