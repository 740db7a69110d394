// libcurl's functions, found in libcurl.so.4 when the first transfer needs them (dlopen) rather
// than linked, so that a venvfix that never downloads does not load libcurl at all (see
// venvfix/base/shared_library.hpp). Every call in src/fetch goes through libcurl(). Private to
// src/fetch.
#pragma once

#include <curl/curl.h>

#include "venvfix/base/result.hpp"

namespace venvfix::fetch::detail {

// libcurl's soname on every Debian and Ubuntu release with libcurl 7.16 or later (OpenSSL
// flavour; the GnuTLS one is libcurl-gnutls.so.4). A test checks it against the library the
// build compiled against.
inline constexpr const char* curl_soname = "libcurl.so.4";

// Each member has the type of the header's declaration of the function it is named after
// (easy_init is curl_easy_init).
struct CurlLibrary {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_pause) easy_pause = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_setopt) multi_setopt = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_perform) multi_perform = nullptr;
  decltype(&::curl_multi_poll) multi_poll = nullptr;
  decltype(&::curl_multi_wakeup) multi_wakeup = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_share_init) share_init = nullptr;
  decltype(&::curl_share_setopt) share_setopt = nullptr;
  decltype(&::curl_share_cleanup) share_cleanup = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_getdate) getdate = nullptr;
};

// Loads libcurl and runs curl_global_init, once per process (thread-safe); later calls return
// the first call's outcome. The error names libcurl.so.4 and the loader's reason.
Result<const CurlLibrary*> load_libcurl();

// The loaded library. Only for code that runs after load_libcurl() succeeded: every handle comes
// from a function of this table, so code that holds a handle may call libcurl().
const CurlLibrary& libcurl();

}  // namespace venvfix::fetch::detail
