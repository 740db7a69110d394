// dist-info anomalies and pip stashes end to end: a real venv filled by the real pip from wheels
// the test builds (one with real ELF libraries made by gcc), then the damage: RECORD or METADATA
// emptied or deleted and a dist-info renamed by hand (no pip command leaves these), and the
// '~' stashes that pip itself leaves when it is killed between stashing and committing an
// upgrade or an uninstall (pip's own StashedUninstallPathSet.commit replaced by a SIGKILL). The
// real binary's `doctor --json` names each with its kind and severity; plan and apply repair a
// needed distribution whose RECORD is empty by reinstalling it, and never crash on the rest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

#include "env/test_support.hpp"
#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix {
namespace {

using nlohmann::json;
using test_support::shell_quote;
using test_support::write_text;

// {"name", "version", "requires": [...], "files": {path: text or "@/file/to/copy"}} -> a wheel in
// argv[2]; prints its path.
constexpr const char* k_make_wheel = R"PY(
import base64, hashlib, json, sys, zipfile
spec = json.loads(sys.argv[1])
name, version = spec["name"], spec["version"]
info = f"{name}-{version}.dist-info"
files = {p: (open(c[1:], "rb").read() if c.startswith("@") else c.encode())
         for p, c in spec["files"].items()}
files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" +
    "".join(f"Requires-Dist: {r}\n" for r in spec.get("requires", []))).encode()
files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: venvfix-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
record = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
out = f"{sys.argv[2]}/{name}-{version}-py3-none-any.whl"
with zipfile.ZipFile(out, "w") as z:
    for path, data in files.items():
        z.writestr(zipfile.ZipInfo(path), data)
print(out)
)PY";

// pip itself, killed (SIGKILL) at the moment it would delete its uninstall stash: after an
// upgrade's new files are in place, or after an uninstall's renames.
constexpr const char* k_pip_killed_at_commit = R"PY(
import os, signal, sys
from pip._internal.req import req_uninstall
req_uninstall.StashedUninstallPathSet.commit = lambda self: os.kill(os.getpid(), signal.SIGKILL)
from pip._internal.cli.main import main
sys.exit(main(sys.argv[1:]))
)PY";

struct CliRun {
  int exit_code = -1;
  json document;
  std::string err;
};

class DistInfoCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("venvfix-distinfo-");
    ASSERT_TRUE(dir);
    s_dir = new TempDir(std::move(*dir));
    const fs::path d = s_dir->path();
    write_text(d / "make_wheel.py", k_make_wheel);
    write_text(d / "pip_killed.py", k_pip_killed_at_commit);
    fs::create_directories(d / "wheels");
    fs::create_directories(d / "tmp");
    for (const char* lib : {"needed", "spare"}) {
      write_text(d / (std::string(lib) + ".c"), "int answer(void) { return 42; }\n");
      ASSERT_EQ(
          test_support::run_command("gcc -shared -fPIC -o " +
                                    shell_quote((d / ("lib" + std::string(lib) + ".so")).string()) +
                                    " " + shell_quote((d / (std::string(lib) + ".c")).string()))
              .status,
          0);
    }
    const std::string at = "@" + d.string() + "/";
    make_wheel({{"name", "app"},
                {"version", "1.0"},
                {"requires", {"needed-dep"}},
                {"files", {{"app/__init__.py", "x = 1\n"}, {"shared_ns/app_part.py", "y = 1\n"}}}});
    make_wheel({{"name", "needed_dep"},
                {"version", "1.0"},
                {"files",
                 {{"needed_dep/__init__.py", "z = 1\n"},
                  {"needed_dep/libneeded.so", at + "libneeded.so"}}}});
    make_wheel({{"name", "spare"},
                {"version", "1.0"},
                {"files",
                 {{"shared_ns/spare/__init__.py", "s = 1\n"},
                  {"shared_ns/spare/libspare.so", at + "libspare.so"}}}});
    for (const char* name : {"norecord", "blankmeta", "skew", "same"}) {
      make_wheel({{"name", name},
                  {"version", "1.0"},
                  {"files", {{std::string(name) + "/__init__.py", "n = 1\n"}}}});
    }
    s_template = d / "template";
    ASSERT_TRUE(test_support::make_venv(s_template, test_support::WithPip::yes));
    ASSERT_EQ(pip(s_template, "install --no-index --no-deps --no-compile " +
                                  shell_quote((d / "wheels").string()) + "/*.whl"),
              0);
    // A file:// index serving needed-dep's wheel, for the plan that reinstalls it.
    fs::path wheel = d / "wheels/needed_dep-1.0-py3-none-any.whl";
    auto bytes = read_file(wheel, 1u << 20);
    ASSERT_TRUE(bytes);
    write_text(d / "simple/needed-dep/index.html",
               "<!DOCTYPE html><html><body><a href=\"file://" + wheel.string() +
                   "#sha256=" + to_hex(sha256(*bytes)) +
                   "\">needed_dep-1.0-py3-none-any.whl</a></body></html>\n");
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }

  void SetUp() override {
    static int count = 0;
    m_venv = s_dir->path() / ("venv-" + std::to_string(++count));
    ASSERT_EQ(test_support::run_command("cp -a " + shell_quote(s_template.string()) + " " +
                                        shell_quote(m_venv.string()))
                  .status,
              0);
    auto venv = env::open_venv_at(m_venv);
    ASSERT_TRUE(venv);
    m_site = venv->purelib;
  }

  static void make_wheel(const json& spec) {
    auto out = test_support::run_command(
        "python3 " + shell_quote((s_dir->path() / "make_wheel.py").string()) + " " +
        shell_quote(spec.dump()) + " " + shell_quote((s_dir->path() / "wheels").string()));
    ASSERT_EQ(out.status, 0) << spec.dump();
  }
  static int pip(const fs::path& venv, const std::string& arguments,
                 const std::string& script = "-m pip") {
    // pip's temporaries in the suite's own directory: a pip killed below leaves them behind.
    return test_support::run_command("TMPDIR=" + shell_quote((s_dir->path() / "tmp").string()) +
                                     " " + shell_quote((venv / "bin/python").string()) + " " +
                                     script + " --disable-pip-version-check --no-input -q " +
                                     arguments + " >&2; exit $?")
        .status;
  }
  int pip_killed_at_commit(const std::string& arguments) {
    return pip(m_venv, arguments, shell_quote((s_dir->path() / "pip_killed.py").string()));
  }

  CliRun venvfix(std::vector<std::string> args) {
    std::vector<std::string> argv = {venvfix::testing::venvfix_binary(),
                                     "--venv",
                                     m_venv.string(),
                                     "--json",
                                     "--ld-cache",
                                     "none",
                                     "--cache-dir",
                                     (m_venv.string() + "-cache"),
                                     "--index-url",
                                     "file://" + (s_dir->path() / "simple").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = venvfix::testing::run_command(argv, {{"LD_LIBRARY_PATH", ""}}, 120);
    CliRun run{result.exit_code, json::parse(result.out, nullptr, false), result.err};
    EXPECT_FALSE(run.document.is_discarded()) << result.out << result.err;
    EXPECT_EQ(result.err.find("AddressSanitizer"), std::string::npos) << result.err;
    return run;
  }
  CliRun doctor() { return venvfix({"doctor", "--target", "app"}); }

  // The findings of `kind` (and `anomaly`, when given) about `dist`.
  static std::vector<json> findings(const json& document, std::string_view kind,
                                    std::string_view dist = "", std::string_view anomaly = "") {
    std::vector<json> out;
    for (const json& f : document["findings"]) {
      if (f["kind"] != kind) continue;
      if (!dist.empty() && f.value("dist", "") != dist) continue;
      if (!anomaly.empty() && f.value("anomaly", "") != anomaly) continue;
      out.push_back(f);
    }
    return out;
  }

  static TempDir* s_dir;
  static fs::path s_template;
  fs::path m_venv;
  fs::path m_site;
};

TempDir* DistInfoCli::s_dir = nullptr;
fs::path DistInfoCli::s_template;

TEST_F(DistInfoCli, HealthyVenvHasNoDistInfoFinding) {
  CliRun run = doctor();
  EXPECT_EQ(run.exit_code, 0) << run.document.dump(1);
  EXPECT_TRUE(findings(run.document, "dist-info").empty()) << run.document.dump(1);
  EXPECT_TRUE(findings(run.document, "pip-stash").empty()) << run.document.dump(1);
}

TEST_F(DistInfoCli, EachAnomalyIsNamedWithItsSeverity) {
  write_text(m_site / "needed_dep-1.0.dist-info/RECORD", "");  // needed by the target: problem
  fs::remove(m_site / "norecord-1.0.dist-info/RECORD");
  write_text(m_site / "blankmeta-1.0.dist-info/METADATA", "");
  fs::remove(m_site / "spare-1.0.dist-info/METADATA");
  fs::rename(m_site / "skew-1.0.dist-info", m_site / "skew-1.1.dist-info");
  fs::rename(m_site / "same-1.0.dist-info", m_site / "same-1.0.0.dist-info");  // PEP 440 equal
  CliRun run = doctor();
  EXPECT_EQ(run.exit_code, 3) << run.document.dump(1);
  const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
      {"needed-dep", "record-empty", "problem"},  {"norecord", "record-missing", "warning"},
      {"blankmeta", "metadata-empty", "warning"}, {"spare", "metadata-missing", "warning"},
      {"skew", "version-mismatch", "warning"},
  };
  for (const auto& [dist, anomaly, severity] : expected) {
    auto found = findings(run.document, "dist-info", dist, anomaly);
    ASSERT_EQ(found.size(), 1u) << dist << " " << anomaly << "\n" << run.document.dump(1);
    EXPECT_EQ(found[0]["severity"], severity) << found[0].dump();
    EXPECT_EQ(found[0]["paths"].size(), 1u) << found[0].dump();
    EXPECT_THAT(found[0]["message"].get<std::string>(), ::testing::Not(::testing::HasSubstr("\n")));
  }
  EXPECT_EQ(findings(run.document, "dist-info").size(), expected.size()) << run.document.dump(1);
  EXPECT_EQ(findings(run.document, "dist-info", "skew")[0]["version"], "1.0");
  // METADATA gone or emptied, a dist-info renamed to another version: said once, by the
  // dist-info finding, not again as ghosts of the dist-info's own files. "same-1.0.0" is no
  // anomaly (PEP 440: 1.0.0 == 1.0), so its RECORD rows under "same-1.0.dist-info" stay what
  // they are: ghosts (a warning: nothing needs it).
  auto ghosts = findings(run.document, "ghost-files");
  ASSERT_EQ(ghosts.size(), 1u) << run.document.dump(1);
  EXPECT_EQ(ghosts[0]["dist"], "same");
  EXPECT_EQ(ghosts[0]["severity"], "warning");
  // The libraries of the empty RECORD are still orphans too: named, not folded away.
  EXPECT_EQ(findings(run.document, "orphan-library").size(), 1u) << run.document.dump(1);
  // The human report says the same.
  auto text =
      venvfix::testing::run_command({venvfix::testing::venvfix_binary(), "--venv", m_venv.string(),
                                     "--ld-cache", "none", "doctor", "--target", "app"},
                                    {}, 120);
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_THAT(text.out, ::testing::HasSubstr("has an empty RECORD"));
}

TEST_F(DistInfoCli, NeededDistWithEmptyMetadataIsAProblem) {
  write_text(m_site / "needed_dep-1.0.dist-info/METADATA", "\n");
  CliRun run = doctor();
  EXPECT_EQ(run.exit_code, 3);
  auto found = findings(run.document, "dist-info", "needed-dep", "metadata-empty");
  ASSERT_EQ(found.size(), 1u) << run.document.dump(1);
  EXPECT_EQ(found[0]["severity"], "problem");
}

TEST_F(DistInfoCli, PlanAndApplyReinstallANeededDistWithAnEmptyRecord) {
  write_text(m_site / "needed_dep-1.0.dist-info/RECORD", "");
  CliRun planned = venvfix({"plan", "--target", "app"});
  EXPECT_EQ(planned.exit_code, 3) << planned.err << planned.document.dump(1);
  ASSERT_EQ(planned.document["actions"].size(), 1u) << planned.document.dump(1);
  const json& action = planned.document["actions"][0];
  EXPECT_EQ(action["dist"], "needed-dep") << action.dump();
  EXPECT_EQ(action["version"], "1.0") << action.dump();
  EXPECT_THAT(action.dump(), ::testing::HasSubstr("record-empty"));
  CliRun applied = venvfix({"apply", "-y", "--target", "app"});
  EXPECT_EQ(applied.exit_code, 0) << applied.err << applied.document.dump(1);
  CliRun after = doctor();
  EXPECT_EQ(after.exit_code, 0) << after.document.dump(1);
  EXPECT_TRUE(findings(after.document, "dist-info").empty()) << after.document.dump(1);
  EXPECT_TRUE(findings(after.document, "orphan-library").empty()) << after.document.dump(1);
  auto record = read_file(m_site / "needed_dep-1.0.dist-info/RECORD");
  ASSERT_TRUE(record);
  EXPECT_THAT(*record, ::testing::HasSubstr("needed_dep/libneeded.so,sha256="));
}

TEST_F(DistInfoCli, StashesOfAnUpgradePipWasKilledIn) {
  EXPECT_EQ(pip_killed_at_commit(
                "install --no-index --no-deps --no-compile --force-reinstall " +
                shell_quote((s_dir->path() / "wheels/spare-1.0-py3-none-any.whl").string())),
            128 + 9);
  // What pip's AdjacentTempDirectory made: "~" for the first letter.
  ASSERT_TRUE(fs::is_directory(m_site / "~pare-1.0.dist-info"));
  ASSERT_TRUE(fs::is_regular_file(m_site / "shared_ns/~pare/libspare.so"));
  ASSERT_TRUE(fs::is_regular_file(m_site / "shared_ns/spare/libspare.so"));  // the new install
  CliRun run = doctor();
  EXPECT_EQ(run.exit_code, 0) << run.document.dump(1);
  auto stashes = findings(run.document, "pip-stash");
  ASSERT_EQ(stashes.size(), 2u) << run.document.dump(1);
  std::set<std::string> paths;
  for (const json& f : stashes) {
    EXPECT_EQ(f["severity"], "warning");
    paths.insert(f["paths"][0].get<std::string>());
  }
  EXPECT_EQ(paths, (std::set<std::string>{"shared_ns/~pare", "~pare-1.0.dist-info"}));
  auto info = findings(run.document, "pip-stash", "spare");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0]["version"], "1.0");
  // Not a second "spare", not ghosts, not orphans.
  EXPECT_TRUE(findings(run.document, "ghost-files").empty()) << run.document.dump(1);
  EXPECT_TRUE(findings(run.document, "orphan-library").empty()) << run.document.dump(1);
  EXPECT_TRUE(findings(run.document, "shared-paths").empty()) << run.document.dump(1);
}

TEST_F(DistInfoCli, StashesOfAnUninstallPipWasKilledIn) {
  EXPECT_EQ(pip_killed_at_commit("uninstall -y needed-dep"), 128 + 9);
  ASSERT_TRUE(fs::is_directory(m_site / "~eeded_dep-1.0.dist-info"));
  ASSERT_TRUE(fs::is_directory(m_site / "~eeded_dep"));
  ASSERT_FALSE(fs::exists(m_site / "needed_dep-1.0.dist-info"));
  CliRun run = doctor();
  auto stashes = findings(run.document, "pip-stash");
  EXPECT_EQ(stashes.size(), 2u) << run.document.dump(1);
  EXPECT_EQ(findings(run.document, "pip-stash", "needed-dep").size(), 1u);
  // needed-dep is gone for pip and for venvfix: the requirement is unmet, said as such.
  EXPECT_EQ(findings(run.document, "unmet-requirement").size(), 1u) << run.document.dump(1);
  EXPECT_TRUE(findings(run.document, "orphan-library").empty()) << run.document.dump(1);
  // The planner reads the same analysis and does not crash on it.
  CliRun planned = venvfix({"plan", "--target", "app"});
  EXPECT_TRUE(planned.exit_code == 0 || planned.exit_code == 3) << planned.err;
  EXPECT_EQ(planned.document.value("schema", ""), "venvfix-plan/1") << planned.document.dump(1);
}

}  // namespace
}  // namespace venvfix
