// Choosing the wheel to install from a project page, as pip would for the venv's interpreter:
// - yanked files (PEP 592) only when the requirement pins a version with == or ===, and then
//   only when no file that is not yanked fits;
// - files whose requires-python excludes the target Python are skipped (an unparsable
//   requires-python is ignored, as pip does);
// - the newest version satisfying the specifier (pre-releases only when a clause asks for them,
//   or when there is no clause and no final release fits), then the best tag for the target
//   (pep's order).
// Source distributions are never chosen: venvfix installs wheels only.
#pragma once

#include <string>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/index/project_page.hpp"
#include "venvfix/pep/specifier.hpp"
#include "venvfix/pep/tags.hpp"
#include "venvfix/pep/wheel_filename.hpp"

namespace venvfix::index {

struct Candidate {
  IndexFile file;
  pep::WheelFilename wheel;
};

// Why each file was passed over, for `-v` output.
struct SelectionLog {
  struct Skipped {
    std::string filename;
    std::string reason;  // one phrase: "yanked (reason)", "requires Python >=3.13", …
  };
  std::vector<Skipped> skipped;
};

// The wheel to install. When nothing fits, an Error (ExitCode::network) naming the project,
// the index page, the specifier, the newest version considered with its tags, and the best
// tags the target accepts.
Result<Candidate> select_wheel(const ProjectPage& page, const pep::SpecifierSet& specifier,
                               const pep::TargetPython& target,
                               SelectionLog* why_skipped = nullptr);

}  // namespace venvfix::index
