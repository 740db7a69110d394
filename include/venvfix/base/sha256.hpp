// SHA-256 through OpenSSL's EVP interface, incremental or over a whole file, and the two
// encodings Python packaging uses: lowercase hex (indexes, direct_url.json) and unpadded
// URL-safe base64 (RECORD, PEP 376/627).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix {

using Sha256Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> data);
  void update(std::string_view data);
  // Returns the digest; the object is reset and can hash again.
  Sha256Digest finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

Sha256Digest sha256(std::string_view data);
// Hashes a file's contents (mapped, so the page cache serves it without a copy).
Result<Sha256Digest> sha256_file(const fs::path& path);

std::string to_hex(std::span<const std::uint8_t> bytes);
// to_hex's text (either case) back to its bytes; nullopt for an odd length or a character that
// is not a hex digit.
std::optional<std::string> bytes_from_hex(std::string_view hex);
// Unpadded URL-safe base64, as in RECORD's "sha256=<digest>".
std::string to_base64url_nopad(std::span<const std::uint8_t> bytes);
// Parses either encoding back; nullopt-like failure as an Error naming the text.
Result<Sha256Digest> sha256_from_hex(std::string_view hex);
// Whether `text` is a sha256 as the caches name their files: 64 lowercase hex digits.
bool is_sha256_hex(std::string_view text);
Result<Sha256Digest> sha256_from_base64url(std::string_view text);

}  // namespace venvfix
