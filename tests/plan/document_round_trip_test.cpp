// A plan with every kind of action, finding, unresolved entry and note reads back into the same
// typed data: to_text, parse_plan, to_text gives the same bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "venvfix/plan/document.hpp"

namespace venvfix::plan {
namespace {

using ::testing::HasSubstr;
using verify::Finding;
using verify::Severity;

Finding finding(Severity severity, std::string dist, Finding::Detail detail) {
  std::string message = "a sentence about " + (dist.empty() ? std::string("it") : dist);
  return Finding{severity, std::move(message), std::move(dist), {}, {}, std::move(detail), {}};
}

// One finding of each kind, with every field of its kind set.
std::vector<Finding> every_finding() {
  std::vector<Finding> out;
  out.push_back(finding(Severity::problem, "nvidia-cudnn-cu12",
                        verify::GhostFiles{{"nvidia/cudnn/lib/libcudnn.so.9"},
                                           {"nvidia/cudnn/lib/libcudnn_ops.so.9"}}));
  out.push_back(finding(Severity::problem, "nvidia-cudnn-cu12",
                        verify::ClobberedFiles{{"nvidia-cudnn-cu13"}}));
  out.back().paths = {"nvidia/cudnn/lib/libcudnn.so.9"};
  out.push_back(finding(Severity::warning, "", verify::SharedPaths{{"a", "b"}}));
  out.back().paths = {"shared/x.py"};
  out.push_back(finding(Severity::warning, "",
                        verify::UnresolvedSoname{"libcudnn_adv.so.9",
                                                 {"libcudnn_adv.so.9", "libcudnn_cnn.so.9"},
                                                 {"torch/lib/libtorch_cuda.so (dlopen)"},
                                                 {"torch is imported without its preload"},
                                                 "provided by the operating system"}));
  out.push_back(finding(
      Severity::problem, "",
      verify::EscapedSoname{
          "libcudnn.so.9", {"torch/lib/libtorch_cuda.so"}, "/usr/local/cuda/lib/libcudnn.so.9"}));
  out.push_back(
      finding(Severity::problem, "torch", verify::SplitSitePackages{{"nvidia-nccl-cu12"}}));
  out.back().paths = {"lib/python3.12/site-packages", "lib64/python3.12/site-packages"};
  out.push_back(finding(Severity::problem, "nvidia-nccl-cu13",
                        verify::CudaMix{13, 12, true, {"nvidia-nccl-cu12"}, {"cupy"}, {}}));
  out.back().version = "2.28.9";
  out.push_back(finding(Severity::warning, "nvidia-nccl-cu12",
                        verify::CudaMix{12, 13, false, {}, {}, {"libnccl.so.2"}}));
  out.push_back(finding(Severity::problem, "nvidia-cublas-cu12",
                        verify::UnmetRequirement{"nvidia-cublas-cu12==12.8.4.1", "torch"}));
  out.back().version = "12.6.0";
  out.push_back(finding(Severity::warning, "", verify::OrphanLibrary{}));
  out.back().paths = {"torch/lib/libstray.so"};
  out.push_back(finding(Severity::problem, "needed-dep", verify::DistInfo{"record-missing"}));
  out.back().paths = {"needed_dep-1.0.dist-info"};
  out.push_back(finding(Severity::warning, "spare", verify::PipStash{}));
  out.back().paths = {"~pare-1.0.dist-info"};
  return out;
}

Plan every_kind_plan() {
  Plan plan;
  plan.venv = "/tmp/v";
  plan.python = "3.12";
  plan.platform = "manylinux_2_36_x86_64";
  plan.targets = {"torch"};
  plan.state = std::string(64, 'c');
  plan.state_dists = {{"nvidia-cudnn-cu12", "9.10.2.21", std::string(16, 'e')},
                      {"torch", "2.8.0", std::string(16, 'f')}};
  plan.findings = every_finding();
  Install install;
  install.dist = "nvidia-cudnn-cu12";
  install.version = "9.10.2.21";
  install.file = "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl";
  install.url = "http://127.0.0.1:1/files/" + install.file;
  install.sha256 = std::string(64, 'd');
  install.size = 12;
  install.provides = {"libcudnn.so.9"};
  install.reason = "restores libcudnn.so.9";
  install.rule = "repair:pin";
  Install replacing = install;
  replacing.dist = "nvidia-cublas-cu12";
  replacing.replaces = DistVersion{"nvidia-cublas-cu12", "12.6.0"};
  replacing.rule.clear();
  Remove remove{"nvidia-nccl-cu13",
                "2.28.9",
                {"nvidia/nccl/lib/libnccl.so.2"},
                "conflicts",
                "conflicting-cuda"};
  Remove bare{"old", "1.0", {}, "uninstalls old 1.0 as asked", ""};
  plan.actions = {remove, bare, install, replacing};
  // A finding the plan cannot answer (written without severity), and the planner's own.
  Finding system = plan.findings[4];
  system.severity = Severity::problem;
  plan.unresolved = {
      system,
      Placeholder{"nvidia-cublas-cu13", "nvidia-cublas", "a placeholder"},
      ConflictingRequirements{
          "nvidia-cudnn-cu12", {"==9.10.2.21 (required by torch)", "<9.6"}, "they disagree"},
      KeptCudaMix{"nvidia-nccl-cu13", {"cupy"}, "cupy requires it"},
      KeptCudaMix{"nvidia-nccl-cu13", {}, "a target would break"},
      ProtectedLayer{"nvidia-cudnn-cu12", "9.10.2.21", "base", "it is in the base prefix"}};
  // A finding about a distribution of the base layer carries its layer.
  plan.findings[0].layer = "base";
  plan.notes = {{"libcuda.so.1 is provided by the driver", DriverLibrary{"libcuda.so.1", {"x.so"}}},
                {"nvidia-nccl-cu12 stays", KeptForeignCuda{"nvidia-nccl-cu12"}},
                {"uninstalling a leaves b's requirement unmet", UnmetByUninstall{"a", "b"}}};
  return plan;
}

TEST(PlanRoundTrip, EveryKindReadsBackToTheSameBytes) {
  const Plan plan = every_kind_plan();
  const std::string text = to_text(plan);
  auto parsed = parse_plan(text, "plan.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(to_text(*parsed), text);
  // The typed data came back, not only the text.
  ASSERT_EQ(parsed->findings.size(), std::size_t{12});
  for (std::size_t i = 0; i < plan.findings.size(); ++i) {
    EXPECT_EQ(parsed->findings[i].kind(), plan.findings[i].kind()) << i;
    EXPECT_EQ(parsed->findings[i].severity, plan.findings[i].severity) << i;
  }
  const auto* mix = parsed->findings[6].as<verify::CudaMix>();
  ASSERT_NE(mix, nullptr);
  EXPECT_EQ(mix->cuda_major, 13);
  EXPECT_TRUE(mix->conflicts);
  EXPECT_EQ(mix->required_by_installed, std::vector<std::string>{"cupy"});
  ASSERT_EQ(parsed->actions.size(), std::size_t{4});
  EXPECT_EQ(std::get<Remove>(parsed->actions[0]).rule, "conflicting-cuda");
  EXPECT_EQ(std::get<Install>(parsed->actions[3]).replaces->version, "12.6.0");
  ASSERT_EQ(parsed->unresolved.size(), std::size_t{6});
  EXPECT_EQ(std::get<ProtectedLayer>(parsed->unresolved[5]).layer, "base");
  EXPECT_EQ(parsed->findings[0].layer, "base");
  const auto* system = std::get_if<Finding>(&parsed->unresolved[0]);
  ASSERT_NE(system, nullptr);
  EXPECT_EQ(system->severity, Severity::problem);  // unresolved entries carry none: a problem
  EXPECT_EQ(soname_of(parsed->unresolved[0]), "libcudnn.so.9");
  EXPECT_EQ(std::get<Placeholder>(parsed->unresolved[1]).use, "nvidia-cublas");
  EXPECT_EQ(std::get<ConflictingRequirements>(parsed->unresolved[2]).requirements.size(), 2u);
  EXPECT_EQ(std::get<KeptCudaMix>(parsed->unresolved[4]).dist, "nvidia-nccl-cu13");
  ASSERT_EQ(parsed->notes.size(), std::size_t{3});
  EXPECT_EQ(std::get<DriverLibrary>(parsed->notes[0].about).soname, "libcuda.so.1");
  EXPECT_EQ(std::get<UnmetByUninstall>(parsed->notes[2].about).required_by, "b");
  EXPECT_EQ(parsed->state_dists, plan.state_dists);
}

TEST(PlanRoundTrip, TheDocumentSpellsTheContractsFields) {
  const nlohmann::json document = to_json(every_kind_plan());
  EXPECT_FALSE(document["unresolved"][0].contains("severity"));
  EXPECT_EQ(document["unresolved"][1]["kind"], "placeholder");
  EXPECT_EQ(document["unresolved"][3]["kind"], "cuda-mix");
  EXPECT_FALSE(document["unresolved"][4].contains("required_by_installed"));
  EXPECT_EQ(document["notes"][0]["provided_by"], "driver");
  EXPECT_EQ(document["notes"][2]["kind"], "unmet-requirement");
  EXPECT_EQ(document["findings"][7]["breaks"], nlohmann::json::array({"libnccl.so.2"}));
  EXPECT_FALSE(document["actions"][0].contains("replaces"));
  EXPECT_TRUE(document["actions"][2]["replaces"].is_null());
  EXPECT_FALSE(document["actions"][1].contains("rule"));
}

// A plan document whose one entry of `list` is `entry`.
std::string with_entry(const char* list, const char* entry) {
  return fmt::format(
      R"({{"schema":"venvfix-plan/1","venv":"/v","state":"s","actions":[],"{}":[{}]}})", list,
      entry);
}

TEST(PlanRoundTrip, RefusesBadEntriesNamingTheEntryAndTheField) {
  struct Case {
    std::string text;
    const char* says;
  } cases[] = {
      {with_entry("findings", R"("x")"), "finding 1 is not an object"},
      {with_entry("findings", R"({"kind":"ghost-files","severity":"problem"})"),
       "finding 1: \"message\" is missing"},
      {with_entry("findings", R"({"kind":"haunted","severity":"problem","message":"m"})"),
       "\"kind\" is \"haunted\""},
      {with_entry("findings", R"({"kind":"ghost-files","severity":"fatal","message":"m"})"),
       "\"severity\" is \"fatal\""},
      {with_entry("findings", R"({"kind":"ghost-files","message":"m"})"),
       "\"severity\" is missing"},
      {with_entry("findings",
                  R"({"kind":"ghost-files","severity":"problem","message":"m","missing":"a"})"),
       "\"missing\" must be an array of strings"},
      {with_entry("findings",
                  R"({"kind":"cuda-mix","severity":"problem","message":"m","cuda_major":"13"})"),
       "\"cuda_major\" must be an integer"},
      {with_entry("findings", R"({"kind":"dist-info","severity":"problem","message":"m"})"),
       "\"anomaly\" is missing"},
      {with_entry("unresolved", R"({"kind":"unresolved-soname","message":"m"})"),
       "unresolved entry 1: \"soname\" is missing"},
      {with_entry("unresolved", R"({"kind":"placeholder","dist":"a","message":"m"})"),
       "\"use\" is missing"},
      {with_entry("unresolved", R"({"kind":"conflicting-requirements","dist":"a","message":"m",)"
                                R"("requirements":[1]})"),
       "\"requirements\" must be an array of strings"},
      {with_entry("notes", R"({"kind":"driver-library","message":"m"})"),
       "note 1: \"soname\" is missing"},
      {with_entry("notes", R"({"kind":"gossip","message":"m"})"), "\"kind\" is \"gossip\""},
      {with_entry("notes", R"({"kind":"kept-foreign-cuda","dist":"a"})"), "\"message\" is missing"},
      {with_entry("state_dists", R"({"dist":"a","version":"1"})"),
       "state_dists entry 1: \"digest\" is missing"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_plan(c.text, "broken.json");
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().code, ExitCode::usage);
    EXPECT_THAT(parsed.error().message, HasSubstr("broken.json is not a valid plan")) << c.text;
    EXPECT_THAT(parsed.error().message, HasSubstr(c.says)) << c.text;
  }
}

}  // namespace
}  // namespace venvfix::plan
