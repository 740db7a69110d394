// The test binary's main. ctest runs one test per process; a test that skipped itself exits
// 77 (SKIP_RETURN_CODE in CMakeLists.txt), everything else with RUN_ALL_TESTS's status. ctest's
// default rule for GoogleTest ("skipped" when the output says SKIPPED) would also call a
// process skipped whose SetUpTestSuite failed, and so hide the failure.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  bool all_skipped =
      unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count();
  if (status == 0 && all_skipped) return 77;
  return status;
}
