#include "crypto_library.hpp"

#include "venvfix/base/shared_library.hpp"

namespace venvfix::detail {

namespace {

Result<CryptoLibrary> open_crypto() {
  VENVFIX_TRY_ASSIGN(SharedLibrary library,
                     SharedLibrary::open(crypto_soname, "to compute SHA-256 digests"));
  CryptoLibrary api;
  decltype(&::EVP_sha256) sha256 = nullptr;
  VENVFIX_TRY(library.find("EVP_MD_CTX_new", api.md_ctx_new));
  VENVFIX_TRY(library.find("EVP_MD_CTX_free", api.md_ctx_free));
  VENVFIX_TRY(library.find("EVP_DigestInit_ex", api.digest_init));
  VENVFIX_TRY(library.find("EVP_DigestUpdate", api.digest_update));
  VENVFIX_TRY(library.find("EVP_DigestFinal_ex", api.digest_final));
  VENVFIX_TRY(library.find("EVP_sha256", sha256));
  api.sha256 = sha256();
  return api;
}

}  // namespace

Result<const CryptoLibrary*> load_libcrypto() {
  return load_once<CryptoLibrary, open_crypto>();
}

const CryptoLibrary& libcrypto() {
  Result<const CryptoLibrary*> loaded = load_libcrypto();
  if (!loaded) exit_for_missing_library(loaded.error());
  return **loaded;
}

}  // namespace venvfix::detail
