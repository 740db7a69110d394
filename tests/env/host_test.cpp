#include "venvfix/env/host.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "env/test_support.hpp"

namespace venvfix::env {
namespace {

std::string first_line(std::string text) {
  if (auto newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return text;
}

TEST(EnvHost, MatchesUnameAndGetconf) {
  HostPlatform host = detect_host();
  EXPECT_EQ(host.arch, first_line(test_support::run_command("uname -m").out));
  EXPECT_EQ(host.system, first_line(test_support::run_command("uname -s").out));
  EXPECT_EQ(host.release, first_line(test_support::run_command("uname -r").out));
  auto getconf = test_support::run_command("getconf GNU_LIBC_VERSION 2>/dev/null");
  if (getconf.status == 0 && getconf.out.starts_with("glibc ")) {
    ASSERT_TRUE(host.glibc);
    EXPECT_EQ(fmt::format("glibc {}.{}", host.glibc->first, host.glibc->second),
              first_line(getconf.out));
    EXPECT_FALSE(host.musl);  // a glibc host has no musl loader to report
  }
}

}  // namespace
}  // namespace venvfix::env
