// A finding's JSON: the contract's field names for each kind, empty fields left out, and
// finding_from_json reading back what to_json wrote.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "venvfix/verify/finding.hpp"

namespace venvfix::verify {
namespace {

using nlohmann::json;

TEST(FindingJson, EachKindWritesItsOwnFieldsAndLeavesEmptyOnesOut) {
  Finding ghost;
  ghost.severity = Severity::problem;
  ghost.message = "m";
  ghost.dist = "nvidia-cudnn-cu12";
  ghost.version = "9.10.2.21";
  ghost.detail = GhostFiles{{"a.so"}, {}};
  EXPECT_EQ(to_json(ghost), json::parse(R"({"kind":"ghost-files","severity":"problem",
      "message":"m","dist":"nvidia-cudnn-cu12","version":"9.10.2.21","missing":["a.so"]})"));

  Finding mix;
  mix.message = "m";
  mix.dist = "nvidia-nccl-cu12";
  mix.detail = CudaMix{12, 13, false, {}, {}, {}};
  // cuda-mix writes its numbers, flag and breaks even when empty or false.
  EXPECT_EQ(to_json(mix), json::parse(R"({"kind":"cuda-mix","severity":"warning","message":"m",
      "dist":"nvidia-nccl-cu12","cuda_major":12,"target_cuda_major":13,"conflicts":false,
      "breaks":[]})"));

  Finding soname;
  soname.severity = Severity::problem;
  soname.message = "m";
  soname.detail = UnresolvedSoname{"libx.so.1", {}, {"lib/a.so"}, {}, "provided by the OS"};
  EXPECT_EQ(to_json(soname, SeverityField::omitted),
            json::parse(R"({"kind":"unresolved-soname","message":"m","soname":"libx.so.1",
      "needed_by":["lib/a.so"],"note":"provided by the OS"})"));
}

TEST(FindingJson, ReadsBackWhatItWrote) {
  Finding escaped;
  escaped.severity = Severity::problem;
  escaped.message = "m";
  escaped.detail = EscapedSoname{"libcudnn.so.9", {"torch/lib/libtorch_cuda.so"}, "/usr/lib/x"};
  auto read = finding_from_json(to_json(escaped), "doc", ExitCode::error);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->kind(), FindingKind::escaped_soname);
  EXPECT_EQ(soname_of(*read), "libcudnn.so.9");
  EXPECT_EQ(read->as<EscapedSoname>()->resolved_to, "/usr/lib/x");
  EXPECT_EQ(to_json(*read), to_json(escaped));

  auto unmet = finding_from_json(
      json::parse(R"({"kind":"unmet-requirement","message":"m","dist":"a","requirement":"a>1"})"),
      "doc", ExitCode::error, SeverityField::omitted);
  ASSERT_TRUE(unmet) << unmet.error().message;
  EXPECT_EQ(unmet->severity, Severity::problem);
  EXPECT_EQ(unmet->as<UnmetRequirement>()->requirement, "a>1");
}

TEST(FindingJson, RefusalsNameTheContextAndTheFieldWithTheCallersCode) {
  auto bad = finding_from_json(json::parse(R"({"kind":"cuda-mix","severity":"problem",
      "message":"m","cuda_major":12,"target_cuda_major":13})"),
                               "report.json: finding 2", ExitCode::verify_failed);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::verify_failed);
  EXPECT_EQ(bad.error().message, "report.json: finding 2: \"conflicts\" is missing");
  auto negative = finding_from_json(json::parse(R"({"kind":"cuda-mix","severity":"problem",
      "message":"m","cuda_major":-1,"target_cuda_major":13,"conflicts":true})"),
                                    "doc", ExitCode::error);
  ASSERT_FALSE(negative);
  EXPECT_THAT(negative.error().message, ::testing::HasSubstr("\"cuda_major\" is -1"));
}

TEST(FindingJson, SortPutsProblemsFirstThenKindDistributionSoname) {
  auto make = [](Severity severity, std::string dist, Finding::Detail detail) {
    return Finding{severity, {}, std::move(dist), {}, {}, std::move(detail), {}};
  };
  std::vector<Finding> findings = {
      make(Severity::warning, "a", GhostFiles{}),
      make(Severity::problem, "", UnresolvedSoname{"libz.so", {}, {}, {}, {}}),
      make(Severity::problem, "", UnresolvedSoname{"liba.so", {}, {}, {}, {}}),
      make(Severity::problem, "b", GhostFiles{}),
  };
  sort_findings(findings);
  EXPECT_EQ(findings[0].dist, "b");
  EXPECT_EQ(soname_of(findings[1]), "liba.so");
  EXPECT_EQ(soname_of(findings[2]), "libz.so");
  EXPECT_EQ(findings[3].severity, Severity::warning);
}

}  // namespace
}  // namespace venvfix::verify
