// entry_points.txt as pip reads it (importlib.metadata's parser, then distlib's export entry),
// and the launcher scripts pip generates for console_scripts and gui_scripts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "venvfix/base/result.hpp"
#include "venvfix/wheel/wheel.hpp"

namespace venvfix::wheel::detail {

struct EntryPointGroups {
  std::vector<EntryPoint> console_scripts;
  std::vector<EntryPoint> gui_scripts;
};

// Sections `[group]`, lines `name = value` (stripped; blank lines and `#` comments skipped).
// A later duplicate name replaces the value and keeps the first position (a Python dict).
// Errors (ExitCode::usage, naming `source_name`): a line without `=` inside a section, a script
// name outside [A-Za-z0-9_.+-] (or "." / ".."), a value that is not `module:attr`.
Result<EntryPointGroups> parse_entry_points(std::string_view text, std::string_view source_name);

// The console scripts pip generates, in its order, with its special cases for pip and
// easy_install (`pip`, `pipX`, `pipX.Y`; `easy_install`, `easy_install-X.Y`), for a Python
// `major.minor` (ENSUREPIP_OPTIONS is taken as unset).
std::vector<EntryPoint> console_scripts_to_generate(const std::vector<EntryPoint>& console,
                                                    int python_major, int python_minor);

// distlib's shebang for `executable`: `#!<exe>\n`, or the /bin/sh trampoline when the path has
// a space or the line would exceed 127 bytes.
std::string launcher_shebang(std::string_view executable);

// The whole launcher script distlib writes for `entry` (shebang included).
std::string launcher_script(std::string_view executable, const EntryPoint& entry);

}  // namespace venvfix::wheel::detail
