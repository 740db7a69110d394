#include "venvfix/pep/name.hpp"

#include <gtest/gtest.h>

namespace venvfix::pep {
namespace {

TEST(PepName, NormalizesAsPep503) {
  EXPECT_EQ(normalize_name("Nvidia_CUDNN.cu12"), "nvidia-cudnn-cu12");
  EXPECT_EQ(normalize_name("friendly-bard"), "friendly-bard");
  EXPECT_EQ(normalize_name("Friendly-Bard"), "friendly-bard");
  EXPECT_EQ(normalize_name("FRIENDLY-BARD"), "friendly-bard");
  EXPECT_EQ(normalize_name("friendly.bard"), "friendly-bard");
  EXPECT_EQ(normalize_name("friendly_bard"), "friendly-bard");
  EXPECT_EQ(normalize_name("friendly--bard"), "friendly-bard");
  EXPECT_EQ(normalize_name("FrIeNdLy-._.-bArD"), "friendly-bard");
}

TEST(PepName, ValidatesAsPep508) {
  EXPECT_TRUE(is_valid_name("torch"));
  EXPECT_TRUE(is_valid_name("nvidia-cudnn-cu12"));
  EXPECT_TRUE(is_valid_name("a"));
  EXPECT_FALSE(is_valid_name(""));
  EXPECT_FALSE(is_valid_name("-torch"));
  EXPECT_FALSE(is_valid_name("torch_"));
  EXPECT_FALSE(is_valid_name("tor ch"));
  EXPECT_FALSE(is_valid_name("torch/"));
}

}  // namespace
}  // namespace venvfix::pep
