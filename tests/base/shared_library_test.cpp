// SharedLibrary (dlopen and dlsym with errors that name the library and the function), and the
// sonames venvfix dlopens for libcurl, libarchive and libcrypto checked against the libraries the
// build compiled against, as the real loader resolves them.
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/crypto_library.hpp"
#include "fetch/curl_library.hpp"
#include "support/loaded_library.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/shared_library.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "wheel/archive_library.hpp"

namespace venvfix {
namespace {

using ::testing::HasSubstr;

TEST(SharedLibrary, FindsAFunctionWithTheTypeOfItsDeclaration) {
  auto libc = SharedLibrary::open("libc.so.6", "to test");
  ASSERT_TRUE(libc) << libc.error().message;
  decltype(&::strlen) length = nullptr;
  ASSERT_TRUE(libc->find("strlen", length));
  EXPECT_EQ(length("venvfix"), 7u);
}

TEST(SharedLibrary, AMissingLibraryIsOneSentenceNamingItAndWhatItIsFor) {
  auto missing = SharedLibrary::open("libvenvfix-no-such-library.so.9", "to test the message");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::error);
  EXPECT_THAT(missing.error().message,
              HasSubstr("cannot load libvenvfix-no-such-library.so.9, which venvfix needs to "
                        "test the message: "));
  EXPECT_THAT(missing.error().message, HasSubstr("No such file"));  // the loader's reason
}

TEST(SharedLibrary, AMissingFunctionNamesTheLibraryAndTheFunction) {
  auto libc = SharedLibrary::open("libc.so.6", "to test");
  ASSERT_TRUE(libc);
  decltype(&::strlen) length = nullptr;
  Status found = libc->find("venvfix_no_such_function", length);
  ASSERT_FALSE(found);
  EXPECT_THAT(found.error().message,
              HasSubstr("libc.so.6 has no function venvfix_no_such_function"));
  EXPECT_EQ(length, nullptr);
}

// venvfix dlopens a fixed soname; the build found a library by its development name
// (libcurl.so). Both must be the same file, and its DT_SONAME the soname venvfix asks for:
// otherwise venvfix would call functions through the types of one library's header in another.
void expect_soname_of_the_build(const char* soname, const fs::path& built_against) {
  std::error_code ec;
  const fs::path real = fs::canonical(built_against, ec);
  ASSERT_FALSE(ec) << built_against << ": " << ec.message();
  auto info = elf::read_elf(real);
  ASSERT_TRUE(info && *info) << real;
  EXPECT_EQ((*info)->soname, soname) << real;
  const fs::path loaded = venvfix::testing::loaded_library_path(soname);
  EXPECT_EQ(fs::canonical(loaded, ec), real) << soname << " loads " << loaded;
}

TEST(SharedLibrary, TheSonamesVenvfixLoadsAreTheLibrariesTheBuildCompiledAgainst) {
  expect_soname_of_the_build(fetch::detail::curl_soname, VENVFIX_CURL_LIBRARY);
  expect_soname_of_the_build(wheel::detail::archive_soname, VENVFIX_ARCHIVE_LIBRARY);
  expect_soname_of_the_build(detail::crypto_soname, VENVFIX_CRYPTO_LIBRARY);
  auto curl = fetch::detail::load_libcurl();
  EXPECT_TRUE(curl) << curl.error().message;
  auto archive = wheel::detail::load_libarchive();
  EXPECT_TRUE(archive) << archive.error().message;
  auto crypto = detail::load_libcrypto();
  EXPECT_TRUE(crypto) << crypto.error().message;
}

}  // namespace
}  // namespace venvfix
