// A main() for the libFuzzer targets without libFuzzer, so that the suite runs each target's
// invariants on every change, with whatever compiler and sanitizers the build has: every seed
// file named on the command line (or held by a directory named there), then a fixed number of
// deterministic mutations of each (bits flipped, bytes set to edge values, ranges cut, doubled
// or spliced from another seed, the input truncated). Not a fuzzer (no coverage feedback):
// docs/fuzzing.md says how to run the real one. A failed invariant aborts, as under libFuzzer;
// the input that made it is written to <program>-failure.bin in the working directory first
// (fuzz_smoke-failure.bin where the program's name is too long).
//
//   <target>_smoke [--mutations N] PATH...
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// The input being run and where it goes when it fails, for the abort handler (which may only
// make async-signal-safe calls).
const Bytes* g_current = nullptr;
std::array<char, 256> g_failure_file{};

extern "C" void write_failing_input(int signal_number) {
  if (g_current != nullptr) {
    const int fd = ::open(g_failure_file.data(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)!::write(fd, g_current->data(), g_current->size());
      ::close(fd);
    }
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// xorshift64*: the same sequence on every machine, so a failure reproduces.
class Random {
 public:
  explicit Random(std::uint64_t seed) : m_state(seed == 0 ? 0x9e3779b97f4a7c15ULL : seed) {}
  std::uint64_t next() {
    m_state ^= m_state >> 12;
    m_state ^= m_state << 25;
    m_state ^= m_state >> 27;
    return m_state * 0x2545f4914f6cdd1dULL;
  }
  // In [0, bound); 0 when bound is 0.
  std::size_t below(std::size_t bound) { return bound == 0 ? 0 : next() % bound; }

 private:
  std::uint64_t m_state;
};

constexpr std::array<std::uint8_t, 14> k_edge_bytes = {0x00, 0x01, 0x7f, 0x80, 0xff, '\n', ' ',
                                                       '"',  '/',  '.',  '0',  '9',  '\\', 0xc3};

// One mutation of `input` in place; `others` are the other seeds, for splicing.
void mutate_once(Bytes& input, const std::vector<Bytes>& others, Random& random) {
  const std::size_t size = input.size();
  const std::size_t at = random.below(size + 1);
  switch (random.below(7)) {
    case 0:  // flip one bit
      if (size != 0) input[random.below(size)] ^= static_cast<std::uint8_t>(1U << random.below(8));
      break;
    case 1:  // an edge value
      if (size != 0) input[random.below(size)] = k_edge_bytes[random.below(k_edge_bytes.size())];
      break;
    case 2: {  // cut a range
      const std::size_t length = 1 + random.below(random.below(2) == 0 ? 16 : size / 4 + 1);
      const std::size_t end = std::min(size, at + length);
      input.erase(input.begin() + static_cast<std::ptrdiff_t>(std::min(at, size)),
                  input.begin() + static_cast<std::ptrdiff_t>(end));
      break;
    }
    case 3: {  // double a range
      const std::size_t from = random.below(size + 1);
      const std::size_t length = std::min(size - from, 1 + random.below(64));
      const Bytes copy(input.begin() + static_cast<std::ptrdiff_t>(from),
                       input.begin() + static_cast<std::ptrdiff_t>(from + length));
      input.insert(input.begin() + static_cast<std::ptrdiff_t>(at), copy.begin(), copy.end());
      break;
    }
    case 4:  // a few random bytes
      for (std::size_t n = 1 + random.below(8); n > 0; --n) {
        input.insert(input.begin() + static_cast<std::ptrdiff_t>(random.below(input.size() + 1)),
                     static_cast<std::uint8_t>(random.next()));
      }
      break;
    case 5:  // truncate
      input.resize(random.below(size + 1));
      break;
    default: {  // splice a range of another seed over this one's tail
      const Bytes& other = others[random.below(others.size())];
      const std::size_t from = random.below(other.size() + 1);
      input.resize(std::min(at, input.size()));
      input.insert(input.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
      break;
    }
  }
}

void run(const Bytes& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

bool read_seeds(const fs::path& path, std::vector<Bytes>& seeds) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    // Sorted: the mutations of a seed depend on its place, and a directory's order on its
    // filesystem.
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      if (!read_seeds(file, seeds)) return false;
    }
    return !error;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz smoke: cannot read %s\n", path.c_str());
    return false;
  }
  seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mutations = 20000;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--mutations" && i + 1 < argc) {
      mutations = std::strtoull(argv[++i], nullptr, 10);
    } else if (!read_seeds(argv[i], seeds)) {
      return 2;
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] SEED_FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  const std::string failure = fs::path(argv[0]).filename().string() + "-failure.bin";
  std::snprintf(
      g_failure_file.data(), g_failure_file.size(), "%s",
      failure.size() < g_failure_file.size() ? failure.c_str() : "fuzz_smoke-failure.bin");
  std::signal(SIGABRT, write_failing_input);
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    run(seeds[s]);
    Random random(s + 1);
    for (std::size_t m = 0; m < mutations; ++m) {
      Bytes input = seeds[s];
      for (std::size_t stacked = 1 + random.below(4); stacked > 0; --stacked) {
        mutate_once(input, seeds, random);
      }
      run(input);
    }
  }
  std::printf("fuzz smoke: %zu seeds, %zu mutations each: no invariant failed\n", seeds.size(),
              mutations);
  return 0;
}
