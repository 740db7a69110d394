#include "curl_library.hpp"

#include "venvfix/base/shared_library.hpp"

namespace venvfix::fetch::detail {

namespace {

Result<CurlLibrary> find_functions(const SharedLibrary& library) {
  CurlLibrary api;
  VENVFIX_TRY(library.find("curl_global_init", api.global_init));
  VENVFIX_TRY(library.find("curl_easy_init", api.easy_init));
  VENVFIX_TRY(library.find("curl_easy_setopt", api.easy_setopt));
  VENVFIX_TRY(library.find("curl_easy_getinfo", api.easy_getinfo));
  VENVFIX_TRY(library.find("curl_easy_pause", api.easy_pause));
  VENVFIX_TRY(library.find("curl_easy_strerror", api.easy_strerror));
  VENVFIX_TRY(library.find("curl_easy_cleanup", api.easy_cleanup));
  VENVFIX_TRY(library.find("curl_multi_init", api.multi_init));
  VENVFIX_TRY(library.find("curl_multi_setopt", api.multi_setopt));
  VENVFIX_TRY(library.find("curl_multi_add_handle", api.multi_add_handle));
  VENVFIX_TRY(library.find("curl_multi_remove_handle", api.multi_remove_handle));
  VENVFIX_TRY(library.find("curl_multi_perform", api.multi_perform));
  VENVFIX_TRY(library.find("curl_multi_poll", api.multi_poll));
  VENVFIX_TRY(library.find("curl_multi_wakeup", api.multi_wakeup));
  VENVFIX_TRY(library.find("curl_multi_info_read", api.multi_info_read));
  VENVFIX_TRY(library.find("curl_multi_cleanup", api.multi_cleanup));
  VENVFIX_TRY(library.find("curl_share_init", api.share_init));
  VENVFIX_TRY(library.find("curl_share_setopt", api.share_setopt));
  VENVFIX_TRY(library.find("curl_share_cleanup", api.share_cleanup));
  VENVFIX_TRY(library.find("curl_slist_append", api.slist_append));
  VENVFIX_TRY(library.find("curl_slist_free_all", api.slist_free_all));
  VENVFIX_TRY(library.find("curl_getdate", api.getdate));
  return api;
}

Result<CurlLibrary> open_curl() {
  VENVFIX_TRY_ASSIGN(SharedLibrary library, SharedLibrary::open(curl_soname, "to download"));
  VENVFIX_TRY_ASSIGN(CurlLibrary api, find_functions(library));
  if (CURLcode code = api.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return make_error(ExitCode::error, "{} could not initialise itself: {}", curl_soname,
                      api.easy_strerror(code));
  }
  return api;
}

}  // namespace

Result<const CurlLibrary*> load_libcurl() {
  return load_once<CurlLibrary, open_curl>();
}

const CurlLibrary& libcurl() {
  return loaded_functions<CurlLibrary, open_curl>();
}

}  // namespace venvfix::fetch::detail
