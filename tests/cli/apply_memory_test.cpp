// Bounded memory and mid-stream refusals (issue 13), end to end. `venvfix apply` of a wheel whose
// members are hundreds of MiB runs inside a cgroup v1 memory group limited to 512 MiB, and its peak
// resident set stays within the 256 MiB goal. Whole-member inflate buffers (two 320 MiB members on
// two threads) would not fit. The group is made here, as root, and removed afterwards; without root
// or a memory controller the test is skipped, saying why.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <variant>

#include <gtest/gtest.h>

#include "cli/wheel_file_plan.hpp"
#include "support/paths.hpp"
#include "support/world.hpp"
#include "venvfix/base/fs.hpp"
#include "venvfix/base/sha256.hpp"
#include "wheel/wheel_test_support.hpp"

namespace venvfix {
namespace {

namespace wheel_testing = venvfix::wheel::testing;
using venvfix::testing::CommandResult;
using venvfix::testing::run_command;

constexpr const char* k_memory_root = "/sys/fs/cgroup/memory";
constexpr std::uint64_t k_limit = 512ull << 20;

// A child memory group, removed (it must be empty by then) on destruction.
class MemoryGroup {
 public:
  // The group, or the reason why none can be made here.
  static std::variant<MemoryGroup, std::string> create(std::uint64_t limit) {
    if (::geteuid() != 0) return std::string("not root: cannot create a memory cgroup");
    struct stat st {};
    const fs::path root(k_memory_root);
    if (::stat((root / "cgroup.procs").c_str(), &st) != 0) {
      return std::string("no cgroup v1 memory controller at ") + k_memory_root;
    }
    const fs::path dir = root / ("venvfix-test-" + std::to_string(::getpid()));
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return "cannot create " + dir.string() + ": " + errno_message(errno);
    }
    MemoryGroup group(dir);
    std::ofstream(dir / "memory.limit_in_bytes") << limit;
    if (group.read("memory.limit_in_bytes") != std::to_string(limit)) {
      return "cannot set memory.limit_in_bytes in " + dir.string();
    }
    return group;
  }
  MemoryGroup(MemoryGroup&& other) noexcept : m_dir(std::exchange(other.m_dir, fs::path())) {}
  MemoryGroup& operator=(MemoryGroup&&) = delete;
  ~MemoryGroup() {
    if (!m_dir.empty()) ::rmdir(m_dir.c_str());
  }
  const fs::path& dir() const { return m_dir; }
  std::string read(const std::string& file) const {
    auto text = read_file(m_dir / file, 1 << 16);
    if (!text) return "";
    std::string out = *text;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

 private:
  explicit MemoryGroup(fs::path dir) : m_dir(std::move(dir)) {}
  fs::path m_dir;
};

// A wheel with two members of `mib` MiB each, about 2:1 under deflate as real libraries are
// (each MiB half random bytes, half one 4 KiB block repeated), with its RECORD.
const char* const k_make_wheel = R"(
import base64, hashlib, os, sys, zipfile
out, mib = sys.argv[1], int(sys.argv[2])
block = os.urandom(4096)
pool = [os.urandom(512 << 10) for _ in range(8)]
def b64(d): return base64.urlsafe_b64encode(d).rstrip(b"=").decode()
rows, hexes = [], []
path = os.path.join(out, "bigmem-1.0-py3-none-manylinux2014_x86_64.whl")
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
    for i in range(2):
        name = "bigmem/lib/libbig%d.so" % i
        sha = hashlib.sha256()
        zi = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        try: zi.compress_level = 1
        except AttributeError: zi._compresslevel = 1
        with z.open(zi, "w", force_zip64=True) as f:
            for k in range(mib):
                chunk = pool[k % len(pool)] + block * 128
                f.write(chunk); sha.update(chunk)
        rows.append("%s,sha256=%s,%d" % (name, b64(sha.digest()), mib << 20))
        hexes.append("%s %s" % (name, sha.hexdigest()))
    for name, text in [("bigmem-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bigmem\nVersion: 1.0\n"),
                       ("bigmem-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux2014_x86_64\n")]:
        z.writestr(name, text)
        rows.append("%s,sha256=%s,%d" % (name, b64(hashlib.sha256(text.encode()).digest()), len(text)))
    rows.append("bigmem-1.0.dist-info/RECORD,,")
    z.writestr("bigmem-1.0.dist-info/RECORD", "\n".join(rows) + "\n")
print(path)
print("\n".join(hexes))
)";

// An empty venv and the plan that installs one wheel file into it.
class ApplyMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("venvfix-apply-memory-");
    ASSERT_TRUE(dir);
    m_dir.emplace(std::move(*dir));
    venvfix::testing::make_empty_venv(venv());
  }
  fs::path venv() const { return m_dir->path() / "venv"; }
  std::string cache() const { return (m_dir->path() / "cache").string(); }

  // The empty venv's plan, with an install action for `wheel` (a demo_pkg or bigmem wheel).
  fs::path plan_for(const fs::path& wheel, const std::string& dist) {
    fs::path plan_file = m_dir->path() / "plan.json";
    venvfix::testing::write_plan_installing(venv(), cache(), wheel, dist, plan_file);
    return plan_file;
  }

  std::optional<TempDir> m_dir;
};

// A zip bomb whose headers and RECORD say 2 MiB while its stream holds 256 MiB is refused
// while it inflates, end to end: exit 2, one sentence naming the member, the venv unchanged.
TEST_F(ApplyMemory, AZipBombFoundWhileInflatingLeavesTheVenvUnchanged) {
  const fs::path wheel = wheel_testing::test_wheels() / "stream-bomb/demo_pkg-1.0-py3-none-any.whl";
  const fs::path plan_file = plan_for(wheel, "demo-pkg");
  // The venv's own files; .venvfix/ is venvfix's state (its lock, its hash cache).
  auto venv_files = [&] {
    auto tree = wheel_testing::tree_of(venv());
    std::erase_if(tree, [](const auto& item) { return item.first.starts_with(".venvfix"); });
    return tree;
  };
  const auto before = venv_files();
  CommandResult applied =
      run_command({venvfix::testing::venvfix_binary(), "--venv", venv().string(), "--cache-dir",
                   cache(), "-q", "apply", plan_file.string(), "--yes"});
  EXPECT_EQ(applied.exit_code, 2) << applied.out << applied.err;
  EXPECT_NE(applied.err.find("demo_pkg/zeros.bin holds more bytes than its recorded size"),
            std::string::npos)
      << applied.err;
  EXPECT_NE(applied.err.find("unchanged"), std::string::npos) << applied.err;
  EXPECT_TRUE(venv_files() == before);
}

TEST_F(ApplyMemory, BigMembersApplyUnderA512MiBCgroupWithin256MiBResident) {
  auto made = MemoryGroup::create(k_limit);
  if (auto* reason = std::get_if<std::string>(&made)) GTEST_SKIP() << *reason;
  MemoryGroup& group = std::get<MemoryGroup>(made);
  CommandResult wheel = run_command({"python3", "-c", k_make_wheel, m_dir->path().string(), "320"});
  ASSERT_EQ(wheel.exit_code, 0) << wheel.err;
  const fs::path wheel_path(wheel.out.substr(0, wheel.out.find('\n')));
  const fs::path plan_file = plan_for(wheel_path, "bigmem");
  const fs::path venv = this->venv();
  const std::string cache = this->cache();
  std::error_code error;

  // The shell joins the group, then becomes /usr/bin/time, whose child is venvfix.
  const fs::path rss_file = m_dir->path() / "rss";
  const std::string command =
      "echo $$ > " + (group.dir() / "cgroup.procs").string() + " && exec /usr/bin/time -f %M -o " +
      rss_file.string() + " " + venvfix::testing::venvfix_binary() + " --venv " + venv.string() +
      " --cache-dir " + cache + " -q apply " + plan_file.string() + " --snapshot --yes";
  CommandResult applied = run_command({"/bin/sh", "-c", command}, {}, 600);
  const std::string peak_usage = group.read("memory.max_usage_in_bytes");
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err
                                  << "\nmemory.oom_control: " << group.read("memory.oom_control");
  auto rss = read_file(rss_file);
  ASSERT_TRUE(rss);
  const std::uint64_t peak_kib = std::stoull(*rss);
  std::cout << "peak RSS " << (peak_kib >> 10) << " MiB; the group's peak usage (page cache "
            << "included) " << (std::stoull(peak_usage) >> 20) << " MiB\n";
  EXPECT_LE(peak_kib, 256u << 10);

  // Every installed byte is the wheel's.
  fs::path site_packages;
  for (auto it = fs::directory_iterator(venv / "lib", error);
       !error && it != fs::directory_iterator(); it.increment(error)) {
    site_packages = it->path() / "site-packages";
  }
  std::istringstream lines(wheel.out);
  std::string line;
  std::getline(lines, line);  // the wheel's path
  int checked = 0;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));
    auto installed = sha256_file(site_packages / name);
    ASSERT_TRUE(installed) << installed.error().message;
    EXPECT_EQ(to_hex(*installed), line.substr(line.find(' ') + 1)) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace venvfix
