// The user reference stays complete: every command and option the real binary's `--help`
// lists (walked recursively through the sub-commands) must appear in docs/cli.md (a command as
// "venvfix CMD") and in the man page docs/venvfix.1 (a command as its own ".SS CMD" section),
// and the man page must render without warnings.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/paths.hpp"
#include "support/world.hpp"

namespace venvfix {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The man page as a reader sees its words: roff's escaped dashes and font changes removed.
std::string man_words(std::string roff) {
  std::string out;
  for (std::size_t i = 0; i < roff.size(); ++i) {
    if (roff[i] == '\\' && i + 1 < roff.size()) {
      char next = roff[i + 1];
      if (next == '-') {
        out += '-';
        ++i;
        continue;
      }
      if (next == '&') {
        ++i;
        continue;
      }
      if (next == 'f' && i + 2 < roff.size()) {
        i += 2;
        continue;
      }
    }
    out += roff[i];
  }
  return out;
}

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// True when `word` occurs in `text` as a whole word (`--probe` is not found in `--probe-cmd`).
bool has_word(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    bool starts = at == 0 || !word_char(text[at - 1]);
    std::size_t end = at + word.size();
    bool ends = end == text.size() || !word_char(text[end]);
    if (starts && ends) return true;
  }
  return false;
}

// What one `--help` lists: the options (each spelling, `-o` and `--output`) and the
// sub-command names.
struct Help {
  std::vector<std::string> options;
  std::vector<std::string> subcommands;
};

// Parses CLI11's help layout: a section header line ("Options:", "Subcommands:"), then entries
// indented by two spaces whose first word is the option list or the sub-command name.
Help parse_help(const std::string& text) {
  Help help;
  std::istringstream lines(text);
  std::string line;
  std::string section;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == ':' && line.front() != ' ') {
      section = line;
      continue;
    }
    if (line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ') continue;
    std::string first = line.substr(2, line.find(' ', 2) - 2);
    if (section == "Options:" && first.front() == '-') {
      std::istringstream names(first);
      std::string name;
      while (std::getline(names, name, ',')) help.options.push_back(name);
    } else if (section == "Subcommands:") {
      help.subcommands.push_back(first);
    }
  }
  return help;
}

struct Surface {
  std::vector<std::string> commands;                         // "doctor", "snapshot create"
  std::vector<std::pair<std::string, std::string>> options;  // (command or "", option)
};

// Runs `venvfix PATH... --help` for every command path, depth first.
void walk(const std::vector<std::string>& path, Surface& surface) {
  std::vector<std::string> argv = {venvfix::testing::venvfix_binary()};
  argv.insert(argv.end(), path.begin(), path.end());
  argv.push_back("--help");
  auto run = venvfix::testing::run_command(argv, {}, 60);
  std::string joined;
  for (const std::string& word : path) joined += (joined.empty() ? "" : " ") + word;
  ASSERT_EQ(run.exit_code, 0) << joined << ": " << run.err;
  Help help = parse_help(run.out);
  ASSERT_FALSE(help.options.empty()) << "no options parsed from `" << joined << " --help`";
  if (!path.empty()) surface.commands.push_back(joined);
  for (const std::string& option : help.options) surface.options.emplace_back(joined, option);
  for (const std::string& sub : help.subcommands) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub);
    walk(deeper, surface);
  }
}

// Every command and option of `surface` that `text` lacks, one line each.
std::vector<std::string> missing(const Surface& surface, std::string_view text,
                                 std::string_view command_prefix) {
  std::vector<std::string> out;
  for (const std::string& command : surface.commands) {
    if (!has_word(text, std::string(command_prefix) + command)) {
      out.push_back("command `" + command + "`");
    }
  }
  std::set<std::string> seen;
  for (const auto& [command, option] : surface.options) {
    if (seen.insert(option).second && !has_word(text, option)) {
      out.push_back("option " + option +
                    (command.empty() ? " (global)" : " (of `venvfix " + command + "`)"));
    }
  }
  return out;
}

std::string lines_of(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += "\n  " + item;
  return out;
}

class CliDocs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_surface = new Surface();
    walk({}, *s_surface);
  }
  static void TearDownTestSuite() {
    delete s_surface;
    s_surface = nullptr;
  }
  static fs::path docs() { return venvfix::testing::source_dir() / "docs"; }
  static Surface* s_surface;
};
Surface* CliDocs::s_surface = nullptr;

TEST_F(CliDocs, HelpIsWalkedThroughEverySubcommand) {
  std::set<std::string> commands(s_surface->commands.begin(), s_surface->commands.end());
  for (const char* expected : {"doctor", "why", "plan", "apply", "uninstall", "run", "snapshot",
                               "snapshot create", "snapshot prune", "rollback", "recover"}) {
    EXPECT_TRUE(commands.count(expected)) << expected;
  }
  std::set<std::string> options;
  for (const auto& entry : s_surface->options) options.insert(entry.second);
  for (const char* expected : {"--venv", "--json", "-o", "--output", "--load-timeout",
                               "--verify-cmd", "--probe-timeout", "--reason", "--keep"}) {
    EXPECT_TRUE(options.count(expected)) << expected;
  }
}

TEST_F(CliDocs, ReferenceNamesEveryCommandAndOption) {
  std::string reference = read_text(docs() / "cli.md");
  ASSERT_FALSE(reference.empty()) << "docs/cli.md is missing or empty";
  auto lacking = missing(*s_surface, reference, "venvfix ");
  EXPECT_TRUE(lacking.empty()) << "docs/cli.md does not mention:" << lines_of(lacking);
}

TEST_F(CliDocs, ManPageNamesEveryCommandAndOption) {
  std::string page = man_words(read_text(docs() / "venvfix.1"));
  ASSERT_FALSE(page.empty()) << "docs/venvfix.1 is missing or empty";
  auto lacking = missing(*s_surface, page, ".SS ");
  EXPECT_TRUE(lacking.empty()) << "docs/venvfix.1 does not mention:" << lines_of(lacking);
}

// The check above can fail: a reference without one option is caught, by name.
TEST_F(CliDocs, AMissingOptionIsReported) {
  std::string reference = read_text(docs() / "cli.md");
  std::string without;
  std::size_t from = 0;
  for (std::size_t at = reference.find("--load-timeout"); at != std::string::npos;
       at = reference.find("--load-timeout", from)) {
    without += reference.substr(from, at - from) + "--load-wait";
    from = at + std::string_view("--load-timeout").size();
  }
  without += reference.substr(from);
  auto lacking = missing(*s_surface, without, "venvfix ");
  ASSERT_EQ(lacking.size(), 1u) << lines_of(lacking);
  EXPECT_EQ(lacking.front(), "option --load-timeout (of `venvfix apply`)");
  EXPECT_FALSE(has_word("--probe-cmd", "--probe"));
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

TEST_F(CliDocs, ManPageRendersWithoutWarnings) {
  const std::string page = (docs() / "venvfix.1").string();
  std::vector<std::string> argv;
  if (on_path("man")) {
    argv = {"man", "--warnings", "-l", page};
  } else if (on_path("groff")) {
    argv = {"groff", "-man", "-Tutf8", "-ww", page};
  } else if (on_path("mandoc")) {
    argv = {"mandoc", "-Tlint", "-Wwarning", page};
  } else {
    GTEST_SKIP() << "neither man, groff nor mandoc is installed";
  }
  auto run = venvfix::testing::run_command(argv, {{"MANPAGER", "cat"}, {"MANWIDTH", "80"}}, 60);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "") << argv.front() << " warned";
  if (argv.front() != "mandoc") {
    EXPECT_NE(run.out.find("venvfix"), std::string::npos) << run.out;
  }
}

}  // namespace
}  // namespace venvfix
