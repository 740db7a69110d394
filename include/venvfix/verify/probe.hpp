// `doctor --probe`: the venv's own interpreter runs `import <target>` in a child process, with
// a time limit, a clean environment and the loader view the static analysis used, and reports
// from /proc/self/maps which shared objects it mapped. judge_probe compares that live answer
// with the static one (docs/doctor.md, "The probe").
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "venvfix/base/result.hpp"
#include "venvfix/env/venv.hpp"
#include "venvfix/manifest/manifests.hpp"
#include "venvfix/verify/analysis.hpp"
#include "venvfix/verify/report.hpp"

namespace venvfix::verify {

struct ProbeOptions {
  std::string statement;  // Python statement(s); empty: default_probe_statement(analysis)
  int timeout_seconds = 120;
  // The loader cache the child must see at /etc/ld.so.cache, as --ld-cache: empty for the
  // host's own, "none" for no cache, else a cache file.
  std::string ld_cache;
  // LD_LIBRARY_PATH of the child (--use-ld-library-path); nullopt: unset.
  std::optional<std::string> ld_library_path;
};

// What the child reported, before any judgement.
struct ProbeRun {
  std::string statement;
  std::string python;       // the interpreter run
  std::string loader_view;  // "host", "ld-cache FILE (private mount namespace)", …
  std::string view_note;    // why the host view was used instead of the one asked for
  bool completed = false;   // the child wrote its result
  bool import_ok = false;
  std::string error;  // the exception text (last line first), or what happened to the child
  int exit_code = -1;
  bool timed_out = false;
  std::vector<std::string> mapped;                     // absolute paths, in /proc/self/maps order
  std::vector<std::pair<std::string, long>> versions;  // path -> the number its *GetVersion gave
  std::string stderr_tail;
  double seconds = 0;
};

struct LoadedLibrary {
  std::string soname;  // DT_SONAME, else the file name
  fs::path path;
  std::vector<std::string> dists;  // owning distributions (normalised names)
  bool inside_venv = false;
  std::string version;  // from cudnnGetVersion & co., "9.10.2"; empty when none
  std::string version_symbol;
};

// Finding kinds of the probe (the static kinds are in finding.hpp).
enum class ProbeKind {
  import_failed,             // the statement raised, or the child died or timed out
  escaped_at_runtime,        // loaded from outside the venv; a venv distribution should provide it
  foreign_cuda_loaded,       // a library of another CUDA major than the target's
  mixed_builds,              // two files of one library family mapped at once
  loaded_though_unresolved,  // the static analysis called it unresolved; it loaded
  version_mismatch,          // its reported version is not the one the target pins
  cudnn_incompatible,        // torch's cuDNN rule broken (major differs, or minor too old)
};
std::string_view to_string(ProbeKind kind);

struct ProbeFinding {
  ProbeKind kind = ProbeKind::import_failed;
  Severity severity = Severity::problem;
  std::string message;  // one sentence
  std::string soname;
  std::vector<std::string> paths;  // absolute
  std::vector<std::string> dists;
  std::string version;   // what the library reported
  std::string expected;  // what the target pins / the static answer
  int cuda_major = 0;
  std::string error;  // import_failed: the exception text
};

struct ProbeResult {
  ProbeRun run;
  std::vector<LoadedLibrary> loaded;  // shared objects mapped, sorted by soname
  std::vector<ProbeFinding> findings;
  bool has_problems(Strict strict) const;
};

// "import torch" when torch is a target; empty when no target has a known import name.
std::string default_probe_statement(const Analysis& analysis);

// True when the venv's interpreter (bin/python) is an ELF executable of this host's machine
// and class, so it can run here.
bool interpreter_runs_here(const env::Venv& venv);

// Runs the statement in the venv's interpreter (`python -I -c …`). Errors: the interpreter
// cannot be started at all. A failing import, a crash or a timeout is a ProbeRun.
Result<ProbeRun> run_probe(const env::Venv& venv, const ProbeOptions& options);

// Compares the live process with the static analysis of the same venv and view.
ProbeResult judge_probe(ProbeRun run, const Analysis& analysis,
                        const manifest::Manifests& manifests);

// The `probe` object of `venvfix-doctor/1`; and the text section of the doctor report.
nlohmann::json probe_json(const ProbeResult& result);
void print_probe_report(const ProbeResult& result, std::ostream& out, Colors colors);

}  // namespace venvfix::verify
