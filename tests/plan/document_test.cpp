#include "venvfix/plan/document.hpp"

#include <gtest/gtest.h>

namespace venvfix::plan {
namespace {

Plan sample_plan() {
  Plan plan;
  plan.venv = "/tmp/v";
  plan.python = "3.11";
  plan.platform = "manylinux_2_36_x86_64";
  plan.targets = {"torch"};
  plan.state = std::string(64, 'a');
  verify::Finding ghost;
  ghost.severity = verify::Severity::problem;
  ghost.message = "nvidia-cudnn-cu12 9.10.2.21 is installed in name only";
  ghost.dist = "nvidia-cudnn-cu12";
  plan.findings = {ghost};
  Install install;
  install.dist = "nvidia-cudnn-cu12";
  install.version = "9.10.2.21";
  install.replaces = DistVersion{"nvidia-cudnn-cu12", "9.10.2.21"};
  install.file = "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl";
  install.url = "http://127.0.0.1:1/files/" + install.file;
  install.sha256 = std::string(64, 'b');
  install.size = 706000000;
  install.provides = {"libcudnn.so.9"};
  install.reason = "restores libcudnn.so.9 needed by torch (torch pins ==9.10.2.21)";
  Remove remove;
  remove.dist = "nvidia-cudnn-cu13";
  remove.version = "9.13.0.50";
  remove.keep = {"nvidia/cudnn/lib/libcudnn.so.9"};
  remove.reason = "conflicts";
  plan.actions = {install, remove};
  return plan;
}

TEST(PlanDocument, RoundTripsByteForByte) {
  std::string text = to_text(sample_plan());
  auto parsed = parse_plan(text, "plan.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(to_text(*parsed), text);
  EXPECT_EQ(parsed->actions.size(), 2u);
  EXPECT_EQ(kind_of(parsed->actions[1]), ActionKind::remove);
  const auto* install = std::get_if<Install>(&parsed->actions[0]);
  ASSERT_NE(install, nullptr);
  ASSERT_TRUE(install->replaces);
  EXPECT_EQ(install->replaces->version, "9.10.2.21");
}

TEST(PlanDocument, AFreshInstallWritesReplacesNullAndRoundTrips) {
  Plan plan = sample_plan();
  std::get<Install>(plan.actions[0]).replaces.reset();
  verify::Finding orphan{verify::Severity::warning,
                         "1 ELF object in torch/lib belongs to no installed distribution's RECORD",
                         {},
                         {},
                         {},
                         verify::OrphanLibrary{},
                         {}};
  plan.findings.push_back(orphan);
  std::string text = to_text(plan);
  EXPECT_NE(text.find("\"replaces\": null"), std::string::npos) << text;
  nlohmann::json document = nlohmann::json::parse(text);
  EXPECT_FALSE(document["actions"][1].contains("replaces"));  // a remove has none
  auto parsed = parse_plan(text, "plan.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_FALSE(std::get<Install>(parsed->actions[0]).replaces);
  EXPECT_EQ(to_text(*parsed), text);
}

TEST(PlanDocument, KeepsTheContractKeyOrder) {
  std::string text = to_text(sample_plan());
  std::size_t schema = text.find("\"schema\"");
  std::size_t venv = text.find("\"venv\"");
  std::size_t state = text.find("\"state\"");
  std::size_t actions = text.find("\"actions\"");
  EXPECT_LT(schema, venv);
  EXPECT_LT(venv, state);
  EXPECT_LT(state, actions);
  EXPECT_NE(text.find("\"schema\": \"venvfix-plan/1\""), std::string::npos);
}

TEST(PlanDocument, RefusesBadDocumentsNamingTheFile) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"{", "not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"schema":"venvfix-plan/2","venv":"/v","state":"x","actions":[]})", "venvfix-plan/2"},
      {R"({"schema":"venvfix-plan/1","state":"x","actions":[]})", "\"venv\""},
      {R"({"schema":"venvfix-plan/1","venv":"/v","state":"x"})", "\"actions\""},
      {R"({"schema":"venvfix-plan/1","venv":"/v","state":"x","actions":[{"action":"upgrade","dist":"a","version":"1"}]})",
       "upgrade"},
      {R"({"schema":"venvfix-plan/1","venv":"/v","state":"x","actions":[{"action":"install","dist":"a","version":"1","file":"a.whl","url":"http://x/a.whl","sha256":"zz"}]})",
       "sha256"},
      {R"({"schema":"venvfix-plan/1","venv":"/v","state":"x","actions":[{"action":"install","dist":"a","version":"1","sha256":"zz"}]})",
       "\"file\""},
      {R"({"schema":"venvfix-plan/1","venv":"/v","state":"x","actions":[{"action":"remove","dist":"a","version":"1","size":-1}]})",
       "size"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_plan(c.text, "broken.json");
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().code, ExitCode::usage);
    EXPECT_NE(parsed.error().message.find("broken.json"), std::string::npos)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(c.says), std::string::npos) << parsed.error().message;
  }
}

TEST(PlanDocument, AcceptsAnEmptyPlan) {
  auto parsed =
      parse_plan(R"({"schema":"venvfix-plan/1","venv":"/v","state":"s","actions":[]})", "p");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->actions.empty());
}

}  // namespace
}  // namespace venvfix::plan
