// libcrypto's SHA-256, found in libcrypto.so.3 when the first digest needs it (dlopen) rather
// than linked: loading OpenSSL costs about 3 ms at every process start and its first digest
// another 2 ms (it reads openssl.cnf and loads its default provider), which a warm `doctor`,
// `run` or `snapshot` (they hash nothing) would pay for nothing (docs/benchmarks.md). Every
// call in src/base/sha256.cpp goes through libcrypto(). Private to src/base.
#pragma once

#include <openssl/evp.h>

#include "venvfix/base/result.hpp"

namespace venvfix::detail {

// OpenSSL 3's libcrypto soname on Debian 12 and Ubuntu 22.04 and later. A test checks it against
// the library the build compiled against.
inline constexpr const char* crypto_soname = "libcrypto.so.3";

// Each member has the type of the header's declaration of the function it is named after
// (md_ctx_new is EVP_MD_CTX_new).
struct CryptoLibrary {
  decltype(&::EVP_MD_CTX_new) md_ctx_new = nullptr;
  decltype(&::EVP_MD_CTX_free) md_ctx_free = nullptr;
  decltype(&::EVP_DigestInit_ex) digest_init = nullptr;
  decltype(&::EVP_DigestUpdate) digest_update = nullptr;
  decltype(&::EVP_DigestFinal_ex) digest_final = nullptr;
  const EVP_MD* sha256 = nullptr;  // EVP_sha256(), asked once
};

// Loads libcrypto once per process (thread-safe); later calls return the first call's outcome.
// The error names libcrypto.so.3 and the loader's reason.
Result<const CryptoLibrary*> load_libcrypto();

// The loaded library. A digest cannot fail, so where libcrypto does not load this ends the
// process with the load's error (exit_for_missing_library).
const CryptoLibrary& libcrypto();

}  // namespace venvfix::detail
