// The probe on the test world's pip-made venvs: the real `import torch` of the fake torch (which
// loads its libraries the way torch does) in the venv's own interpreter, in the hermetic view
// (a test ld.so.cache bound over /etc/ld.so.cache in a private mount namespace) and in the
// host's view, compared with the static analysis of the same venv and view.
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/manifests.hpp"
#include "support/paths.hpp"
#include "support/scratch_test.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/elf/ld_cache.hpp"
#include "venvfix/verify/probe.hpp"

namespace venvfix::verify {
namespace {

using ::testing::HasSubstr;

using venvfix::testing::manifests;

enum class View { hermetic, host };

class Probe : public venvfix::testing::ScratchTest {
 protected:
  Probe() : ScratchTest("venvfix-probe-test-") {}

  // The static analysis and the probe, in the same view.
  ProbeResult probe(const fs::path& root, View view, const std::string& statement = "",
                    int timeout = 60) {
    auto venv = env::open_venv_at(root);
    EXPECT_TRUE(venv);
    auto system = elf::SystemView::host(elf::UseLdLibraryPath::no);
    EXPECT_TRUE(system);
    ProbeOptions options;
    options.timeout_seconds = timeout;
    if (view == View::hermetic) {
      const fs::path cache = venvfix::testing::test_world().hermetic_cache;
      auto loaded = elf::LdCache::load(cache);
      EXPECT_TRUE(loaded);
      system->cache = std::move(loaded).value();
      options.ld_cache = cache.string();
    }
    auto analysis = analyze(*venv, manifests(), *system, {});
    EXPECT_TRUE(analysis) << analysis.error().message;
    options.statement = statement.empty() ? default_probe_statement(*analysis) : statement;
    auto run = run_probe(*venv, options);
    EXPECT_TRUE(run) << run.error().message;
    if (view == View::hermetic) {
      EXPECT_EQ(run->view_note, "") << "the private mount namespace failed";
      EXPECT_THAT(run->loader_view, HasSubstr("private mount namespace"));
    }
    return judge_probe(std::move(run).value(), *analysis, manifests());
  }

  // A shared object compiled here with `soname` and C `code`.
  fs::path compile(const std::string& name, const std::string& soname, const std::string& code) {
    fs::path out = path("libs") / name;
    fs::create_directories(out.parent_path());
    std::ofstream(out.string() + ".c") << code;
    auto result = venvfix::testing::run_command({"cc", "-shared", "-fPIC", "-o", out.string(),
                                                 out.string() + ".c", "-Wl,-soname," + soname});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return out;
  }
};

bool hermetic_possible() {
  return ::geteuid() == 0 && venvfix::testing::hermetic_available();
}

std::vector<std::string> kinds(const ProbeResult& result) {
  std::vector<std::string> out;
  for (const ProbeFinding& f : result.findings) {
    out.push_back(std::string(to_string(f.kind)) + " " + f.soname + " " +
                  std::string(to_string(f.severity)));
  }
  return out;
}

const LoadedLibrary* loaded(const ProbeResult& result, std::string_view soname) {
  for (const LoadedLibrary& library : result.loaded) {
    if (library.soname == soname) return &library;
  }
  return nullptr;
}

TEST_F(Probe, SeedFailsWithTheLoadersOwnMessage) {
  if (!hermetic_possible()) GTEST_SKIP() << "the hermetic view needs root and unshare";
  ProbeResult result = probe(scenario("seed"), View::hermetic);
  EXPECT_TRUE(result.run.completed);
  EXPECT_FALSE(result.run.import_ok);
  EXPECT_THAT(
      result.run.error,
      HasSubstr("libcudnn.so.9: cannot open shared object file: No such file or directory"));
  ASSERT_FALSE(result.findings.empty());
  EXPECT_EQ(result.findings.front().kind, ProbeKind::import_failed);
  EXPECT_THAT(result.findings.front().message, HasSubstr("`import torch` failed"));
  EXPECT_TRUE(result.has_problems(Strict::no));
  EXPECT_EQ(loaded(result, "libcudnn.so.9"), nullptr);
}

TEST_F(Probe, HealthyVenvLoadsEveryCudaLibraryFromTheVenv) {
  if (!hermetic_possible()) GTEST_SKIP() << "the hermetic view needs root and unshare";
  fs::path venv = scenario("healthy");
  ProbeResult result = probe(venv, View::hermetic);
  ASSERT_TRUE(result.run.import_ok) << result.run.error << result.run.stderr_tail;
  EXPECT_THAT(kinds(result), ::testing::IsEmpty());
  EXPECT_FALSE(result.has_problems(Strict::yes));
  std::size_t cuda = 0;
  for (const LoadedLibrary& library : result.loaded) {
    if (manifests().providers_of(library.soname, 0).empty()) continue;
    ++cuda;
    EXPECT_TRUE(library.inside_venv) << library.path;
    EXPECT_EQ(library.dists.size(), 1u) << library.path;
    EXPECT_TRUE(library.dists.front().starts_with("nvidia-")) << library.path;
  }
  EXPECT_GE(cuda, 5u);  // cudart, cudnn, cublas, cublasLt, nccl at least
  const LoadedLibrary* cudnn = loaded(result, "libcudnn.so.9");
  ASSERT_NE(cudnn, nullptr);
  EXPECT_EQ(cudnn->dists, std::vector<std::string>{"nvidia-cudnn-cu12"});
  const LoadedLibrary* torch = loaded(result, "libtorch_cuda.so");
  ASSERT_NE(torch, nullptr);
  EXPECT_EQ(torch->dists, std::vector<std::string>{"torch"});
  nlohmann::json document = probe_json(result);
  EXPECT_EQ(document["ok"], true);
  EXPECT_EQ(document["statement"], "import torch");
  EXPECT_TRUE(document["findings"].empty());
}

TEST_F(Probe, HostViewSeedLoadsTheSystemCudnnAnEscapeAtRunTime) {
  std::error_code error;
  if (!fs::exists("/usr/local/cuda-13.0/lib/libcudnn.so.9", error)) {
    GTEST_SKIP() << "this host has no system cuDNN";
  }
  ProbeResult result = probe(scenario("seed"), View::host);
  ASSERT_TRUE(result.run.import_ok) << result.run.error;
  EXPECT_EQ(result.run.loader_view, "host (/etc/ld.so.cache)");
  const LoadedLibrary* cudnn = loaded(result, "libcudnn.so.9");
  ASSERT_NE(cudnn, nullptr);
  EXPECT_FALSE(cudnn->inside_venv);
  EXPECT_TRUE(cudnn->dists.empty());
  EXPECT_THAT(cudnn->path.string(), HasSubstr("/usr/local/cuda"));
  // The real cuDNN answers cudnnGetVersion without a GPU.
  EXPECT_TRUE(cudnn->version.starts_with("9.")) << cudnn->version;
  EXPECT_EQ(cudnn->version_symbol, "cudnnGetVersion");
  EXPECT_THAT(kinds(result), ::testing::Contains("escaped-at-runtime libcudnn.so.9 problem"));
  // torch 2.8.0+cu128 pins cuDNN 9.10.2.21: a newer 9.x minor passes torch's rule, and differs
  // from the pin.
  EXPECT_THAT(kinds(result), ::testing::Contains("version-mismatch libcudnn.so.9 warning"));
  EXPECT_THAT(kinds(result),
              ::testing::Not(::testing::Contains("cudnn-incompatible libcudnn.so.9 problem")));
  EXPECT_TRUE(result.has_problems(Strict::no));
}

TEST_F(Probe, Cu12AndCu13CudartMappedAtOnce) {
  if (!hermetic_possible()) GTEST_SKIP() << "the hermetic view needs root and unshare";
  fs::path venv = scenario("cuda-mix");
  auto site = env::open_venv_at(venv)->purelib;
  fs::path cu13 = site / "nvidia/cu13/lib/libcudart.so.13";
  ASSERT_TRUE(fs::exists(cu13)) << cu13;
  ProbeResult result =
      probe(venv, View::hermetic, "import torch, ctypes\nctypes.CDLL('" + cu13.string() + "')");
  ASSERT_TRUE(result.run.import_ok) << result.run.error;
  ASSERT_NE(loaded(result, "libcudart.so.12"), nullptr);
  ASSERT_NE(loaded(result, "libcudart.so.13"), nullptr);
  EXPECT_THAT(kinds(result), ::testing::Contains("mixed-builds libcudart.so.12 problem"));
  EXPECT_THAT(kinds(result), ::testing::Contains("foreign-cuda-loaded libcudart.so.13 problem"));
  for (const ProbeFinding& f : result.findings) {
    if (f.kind == ProbeKind::foreign_cuda_loaded && f.soname == "libcudart.so.13") {
      EXPECT_EQ(f.cuda_major, 13);
      EXPECT_EQ(f.dists, std::vector<std::string>{"nvidia-cuda-runtime"});
    }
  }
}

TEST_F(Probe, VersionsAreJudgedAgainstThePinsAndTorchsCudnnRule) {
  if (!hermetic_possible()) GTEST_SKIP() << "the hermetic view needs root and unshare";
  // Builds that report versions as the real ones do: cuDNN 9.1.0 (older minor than torch's
  // 9.10), cudart 12.6 (torch pins 12.8.90).
  fs::path cudnn = compile("libcudnn.so.9", "libcudnn.so.9",
                           "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 90100; }\n");
  fs::path cudart = compile("libcudart.so.12", "libcudart.so.12",
                            "int cudaRuntimeGetVersion(int *v) { *v = 12060; return 0; }\n");
  ProbeResult result = probe(scenario("healthy"), View::hermetic,
                             "import torch, ctypes\nctypes.CDLL('" + cudnn.string() +
                                 "')\nctypes.CDLL('" + cudart.string() + "')");
  ASSERT_TRUE(result.run.import_ok) << result.run.error;
  std::map<std::string, std::string> versions;
  for (const LoadedLibrary& library : result.loaded) {
    if (!library.version.empty()) versions[library.path.string()] = library.version;
  }
  EXPECT_EQ(versions[cudnn.string()], "9.1.0");
  EXPECT_EQ(versions[cudart.string()], "12.6");
  auto found = kinds(result);
  EXPECT_THAT(found, ::testing::Contains("cudnn-incompatible libcudnn.so.9 problem"));
  EXPECT_THAT(found, ::testing::Contains("version-mismatch libcudart.so.12 warning"));
  EXPECT_THAT(found, ::testing::Contains("escaped-at-runtime libcudnn.so.9 problem"));
  EXPECT_THAT(found, ::testing::Contains("mixed-builds libcudnn.so.9 problem"));
  for (const ProbeFinding& f : result.findings) {
    if (f.kind == ProbeKind::cudnn_incompatible) {
      EXPECT_EQ(f.version, "9.1.0");
      EXPECT_EQ(f.expected, "9.10.2.21");
    }
  }
}

TEST_F(Probe, ALibraryTheStaticAnalysisCalledUnresolvedButThatLoadedIsNamed) {
  if (!hermetic_possible()) GTEST_SKIP() << "the hermetic view needs root and unshare";
  // The seed venv lacks libcudnn.so.9, so the static analysis calls it unresolved; the probe
  // command opens a build of it by path before the import, so the import finds it loaded.
  fs::path cudnn = compile("libcudnn.so.9", "libcudnn.so.9",
                           "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 91900; }\n");
  const fs::path venv = scenario("seed");
  ProbeResult result = probe(venv, View::hermetic,
                             "import ctypes\nctypes.CDLL('" + cudnn.string() + "')\nimport torch");
  ASSERT_TRUE(result.run.import_ok) << result.run.error;
  const LoadedLibrary* library = loaded(result, "libcudnn.so.9");
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(library->path, cudnn);
  EXPECT_THAT(kinds(result), ::testing::Contains("loaded-though-unresolved libcudnn.so.9 warning"));
  for (const ProbeFinding& f : result.findings) {
    if (f.kind != ProbeKind::loaded_though_unresolved) continue;
    EXPECT_EQ(f.expected, "unresolved");
    EXPECT_EQ(f.paths, std::vector<std::string>{cudnn.string()});
    EXPECT_THAT(f.message, HasSubstr("though the static analysis found it unresolved"));
  }
  // Without the probe command's help the same venv fails: the finding is about this import.
  ProbeResult plain = probe(venv, View::hermetic);
  EXPECT_FALSE(plain.run.import_ok);
  EXPECT_THAT(
      kinds(plain),
      ::testing::Not(::testing::Contains("loaded-though-unresolved libcudnn.so.9 warning")));
}

TEST_F(Probe, AHangingImportIsKilledAtTheTimeLimit) {
  ProbeResult result = probe(scenario("healthy"), View::host, "import time\ntime.sleep(60)", 1);
  EXPECT_FALSE(result.run.completed);
  EXPECT_TRUE(result.run.timed_out);
  EXPECT_FALSE(result.run.import_ok);
  EXPECT_THAT(kinds(result), ::testing::Contains("import-failed  problem"));
  EXPECT_LT(result.run.seconds, 10);
}

TEST_F(Probe, TheChildGetsACleanEnvironment) {
  fs::path venv = scenario("healthy");
  ::setenv("PYTHONPATH", "/nonexistent/venvfix-probe", 1);
  ::setenv("VENVFIX_PROBE_TEST_SECRET", "leaked", 1);
  ProbeResult result = probe(venv, View::host,
                             "import os, sys\n"
                             "assert 'PYTHONPATH' not in os.environ, os.environ\n"
                             "assert 'VENVFIX_PROBE_TEST_SECRET' not in os.environ, os.environ\n"
                             "assert sys.flags.isolated and sys.dont_write_bytecode\n"
                             "assert sys.prefix == os.environ['VIRTUAL_ENV'], sys.prefix");
  ::unsetenv("PYTHONPATH");
  ::unsetenv("VENVFIX_PROBE_TEST_SECRET");
  EXPECT_TRUE(result.run.import_ok) << result.run.error;
}

TEST(ProbeHost, TheVenvsInterpreterRunsHere) {
  auto dir = TempDir::create("venvfix-probe-arch-");
  ASSERT_TRUE(dir);
  fs::path root = dir->path() / "venv";
  auto made =
      venvfix::testing::run_command({"python3", "-m", "venv", "--without-pip", root.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto venv = env::open_venv_at(root);
  ASSERT_TRUE(venv);
  EXPECT_TRUE(interpreter_runs_here(*venv));
  // An interpreter of another machine: an aarch64 ELF header in place of bin/python.
  fs::remove(root / "bin/python");
  fs::remove(root / "bin/python3");
  std::string header(64, '\0');
  header.replace(0, 4,
                 "\x7f"
                 "ELF");
  header[4] = 2;                        // ELFCLASS64
  header[5] = 1;                        // little endian
  header[6] = 1;                        // EV_CURRENT
  header[16] = 2;                       // ET_EXEC
  header[18] = static_cast<char>(183);  // EM_AARCH64
  ASSERT_TRUE(write_file_atomic(root / "bin/python", header, 0755));
  EXPECT_FALSE(interpreter_runs_here(*venv));
}

}  // namespace
}  // namespace venvfix::verify
