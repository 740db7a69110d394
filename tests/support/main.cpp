// The test binary's main. ctest runs one test per process; a test that skipped itself exits
// 77 (SKIP_RETURN_CODE in CMakeLists.txt), everything else with RUN_ALL_TESTS's status.
//
// ctest's rule for GoogleTest (CMake's gtest_discover_tests always adds it, and a second
// SKIP_REGULAR_EXPRESSION only adds another) calls a test "skipped" whenever its output holds
// "[  SKIPPED ]" — also when SetUpTestSuite failed, for GoogleTest then marks the suite's tests
// skipped. That hid real failures as skips. So the default printer is wrapped: everything it
// prints passes through, except a skipped test's line and the summary, which say "[  SKIP    ]"
// instead; the exit status alone tells ctest what was skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

using ::testing::TestEventListener;

class PrinterWithoutSkippedWord : public TestEventListener {
 public:
  explicit PrinterWithoutSkippedWord(TestEventListener* inner) : m_inner(inner) {}

  void OnTestProgramStart(const ::testing::UnitTest& u) override { m_inner->OnTestProgramStart(u); }
  void OnTestIterationStart(const ::testing::UnitTest& u, int i) override {
    m_inner->OnTestIterationStart(u, i);
  }
  void OnEnvironmentsSetUpStart(const ::testing::UnitTest& u) override {
    m_inner->OnEnvironmentsSetUpStart(u);
  }
  void OnEnvironmentsSetUpEnd(const ::testing::UnitTest& u) override {
    m_inner->OnEnvironmentsSetUpEnd(u);
  }
  void OnTestSuiteStart(const ::testing::TestSuite& s) override { m_inner->OnTestSuiteStart(s); }
  void OnTestCaseStart(const ::testing::TestCase& s) override { m_inner->OnTestCaseStart(s); }
  void OnTestStart(const ::testing::TestInfo& t) override { m_inner->OnTestStart(t); }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    m_inner->OnTestPartResult(r);
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (!t.result()->Skipped()) return m_inner->OnTestEnd(t);
    std::printf("[  SKIP    ] %s.%s (%lld ms)\n", t.test_suite_name(), t.name(),
                static_cast<long long>(t.result()->elapsed_time()));
    std::fflush(stdout);
  }
  void OnTestSuiteEnd(const ::testing::TestSuite& s) override { m_inner->OnTestSuiteEnd(s); }
  void OnTestCaseEnd(const ::testing::TestCase& s) override { m_inner->OnTestCaseEnd(s); }
  void OnEnvironmentsTearDownStart(const ::testing::UnitTest& u) override {
    m_inner->OnEnvironmentsTearDownStart(u);
  }
  void OnEnvironmentsTearDownEnd(const ::testing::UnitTest& u) override {
    m_inner->OnEnvironmentsTearDownEnd(u);
  }
  void OnTestIterationEnd(const ::testing::UnitTest& unit, int) override { summary(unit); }
  void OnTestProgramEnd(const ::testing::UnitTest& u) override { m_inner->OnTestProgramEnd(u); }

 private:
  // GoogleTest's closing lines, in its words, with skipped tests said as "SKIP".
  static void summary(const ::testing::UnitTest& unit) {
    std::printf("[==========] %d tests from %d test suites ran. (%lld ms total)\n",
                unit.test_to_run_count(), unit.test_suite_to_run_count(),
                static_cast<long long>(unit.elapsed_time()));
    std::printf("[  PASSED  ] %d tests.\n", unit.successful_test_count());
    std::vector<std::string> failed;
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
      if (suite.ad_hoc_test_result().Failed()) {
        failed.push_back(std::string(suite.name()) + ": SetUpTestSuite or TearDownTestSuite");
      }
      for (int j = 0; j < suite.total_test_count(); ++j) {
        const ::testing::TestInfo& test = *suite.GetTestInfo(j);
        if (test.should_run() && test.result()->Failed()) {
          failed.push_back(std::string(suite.name()) + "." + test.name());
        }
      }
    }
    if (unit.skipped_test_count() > 0) {
      std::printf("[  SKIP    ] %d tests.\n", unit.skipped_test_count());
    }
    if (!failed.empty()) {
      std::printf("[  FAILED  ] %zu, listed below:\n", failed.size());
      for (const std::string& name : failed) std::printf("[  FAILED  ] %s\n", name.c_str());
    }
    std::fflush(stdout);
  }

  std::unique_ptr<TestEventListener> m_inner;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (TestEventListener* printer = listeners.default_result_printer()) {
    listeners.Release(printer);
    listeners.Append(new PrinterWithoutSkippedWord(printer));
  }
  int status = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  // A failure in SetUpTestSuite marks the suite's tests skipped; it is still a failure.
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    if (unit.GetTestSuite(i)->ad_hoc_test_result().Failed()) return 1;
  }
  if (unit.ad_hoc_test_result().Failed()) return 1;
  bool all_skipped =
      unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count();
  if (status == 0 && all_skipped) return 77;
  return status;
}
