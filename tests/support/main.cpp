// The test binary's main. ctest runs one test per process; a test that skipped itself exits
// 77 (SKIP_RETURN_CODE in CMakeLists.txt), everything else with RUN_ALL_TESTS's status. ctest's
// default rule for GoogleTest ("skipped" when the output says SKIPPED) would also call a
// process skipped whose SetUpTestSuite failed (GoogleTest then reports its tests as skipped and
// may return 0), and so hide the failure.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
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
