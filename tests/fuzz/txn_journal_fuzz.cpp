// libFuzzer target: parse_journal over arbitrary bytes. `recover` replays what a journal says
// after a crash, so a damaged or edited one must be refused, never followed out of the venv. For
// what parses: every step's path stays inside the venv and outside .venvfix, the staging
// directory inside .venvfix; written back (to_json_text) it reads as the same journal, and that
// text is a fixed point. A step whose path is not UTF-8 goes through "path_hex".
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "txn/paths.hpp"
#include "venvfix/txn/journal.hpp"

namespace {

using venvfix::txn::Journal;

bool same_journal(const Journal& a, const Journal& b) {
  if (a.id != b.id || a.reason != b.reason || a.created != b.created || a.pid != b.pid ||
      a.staging != b.staging || a.staging_owned != b.staging_owned || a.relink != b.relink ||
      a.consumes != b.consumes || a.steps.size() != b.steps.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    const auto& x = a.steps[i];
    const auto& y = b.steps[i];
    if (x.op != y.op || x.path != y.path || x.mode != y.mode) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(venvfix::fuzz::as_text(data, size));
  auto parsed = venvfix::txn::parse_journal(text, "fuzz");
  if (!parsed) {
    VENVFIX_FUZZ_CHECK(parsed.error().message.starts_with("fuzz is not a valid venvfix journal"));
    return 0;
  }
  VENVFIX_FUZZ_CHECK(venvfix::txn::is_safe_relative(parsed->staging));
  VENVFIX_FUZZ_CHECK(parsed->staging.starts_with(".venvfix/"));
  for (const auto& step : parsed->steps) {
    VENVFIX_FUZZ_CHECK(venvfix::txn::is_safe_relative(step.path));
    VENVFIX_FUZZ_CHECK(!venvfix::txn::is_state_path(step.path));
    VENVFIX_FUZZ_CHECK(step.mode <= 07777);
  }
  const std::string written = venvfix::txn::to_json_text(*parsed);
  auto again = venvfix::txn::parse_journal(written, "written");
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(same_journal(*parsed, *again));
  VENVFIX_FUZZ_CHECK(venvfix::txn::to_json_text(*again) == written);
  return 0;
}
