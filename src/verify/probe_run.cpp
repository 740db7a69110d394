// run_probe: the venv's interpreter runs the statement in a child process and reports, on fd 3,
// whether it raised and which files it mapped; default_probe_statement, interpreter_runs_here.
#include <unistd.h>

#include <chrono>
#include <system_error>

#include <nlohmann/json.hpp>

#include "venvfix/base/fs.hpp"
#include "venvfix/base/process.hpp"
#include "venvfix/elf/elf_file.hpp"
#include "venvfix/verify/probe.hpp"

namespace venvfix::verify {

namespace {

// The child's side. Maps are read before ctypes is imported for the version calls (ctypes
// maps _ctypes and libffi itself); RTLD_NOLOAD asks only libraries already loaded. os._exit:
// no atexit handlers of what the import loaded. Python 3.8+.
constexpr const char* k_script = R"PY(import os, sys
def _venvfix_probe():
    ok, error = True, ""
    sys.path[0:0] = [d for d in sys.argv[2:] if d not in sys.path]
    try:
        exec(compile(sys.argv[1], "<venvfix-probe>", "exec"), {"__name__": "__venvfix_probe__"})
    except BaseException as e:
        ok = False
        import traceback
        error = "".join(traceback.format_exception_only(type(e), e)).strip()
    maps, seen = [], set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.rstrip("\n").split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/") and parts[5] not in seen:
                    seen.add(parts[5])
                    maps.append(parts[5])
    except OSError as e:
        error = error or "cannot read /proc/self/maps: %s" % e
    wanted = (("libcudnn.so", "cudnnGetVersion", False), ("libcudart.so", "cudaRuntimeGetVersion", True),
              ("libnccl.so", "ncclGetVersion", True))
    hits = [(p, s, o) for p in maps for (pre, s, o) in wanted if os.path.basename(p).startswith(pre)]
    versions = {}
    if hits:
        try:
            import ctypes
            for path, symbol, out in hits:
                try:
                    fn = getattr(ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY), symbol)
                except (OSError, AttributeError):
                    continue
                if out:
                    value = ctypes.c_int(0)
                    fn.restype = ctypes.c_int
                    if fn(ctypes.byref(value)) == 0:
                        versions[path] = value.value
                else:
                    fn.restype, fn.argtypes = ctypes.c_size_t, []
                    versions[path] = int(fn())
        except Exception:
            pass
    import json
    data = json.dumps({"ok": ok, "error": error, "maps": maps, "versions": versions}).encode()
    while data:
        data = data[os.write(3, data):]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0 if ok else 1)
_venvfix_probe()
)PY";

std::vector<std::string> probe_environment(const env::Venv& venv, const ProbeOptions& options) {
  std::vector<std::string> ours = clean_environment();
  std::vector<std::string> env = {
      "PATH=" + (venv.root / "bin").string() + ":/usr/local/bin:/usr/bin:/bin",
      "VIRTUAL_ENV=" + venv.root.string()};
  for (std::string_view key : {"HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}) {
    if (auto value = environment_value(ours, key)) env.push_back(std::string(key) + "=" + *value);
  }
  if (options.ld_library_path) env.push_back("LD_LIBRARY_PATH=" + *options.ld_library_path);
  return env;
}

// The interpreter of the venv: bin/python, else bin/python3.
std::optional<fs::path> venv_python(const env::Venv& venv) {
  for (const char* name : {"bin/python", "bin/python3"}) {
    std::error_code error;
    if (fs::exists(venv.root / name, error)) return venv.root / name;
  }
  return std::nullopt;
}

ProbeRun parse_run(const ProcessOutcome& outcome, ProbeRun run) {
  run.exit_code = outcome.exit_code;
  run.timed_out = outcome.timed_out;
  run.stderr_tail = outcome.err.substr(outcome.err.size() > 4000 ? outcome.err.size() - 4000 : 0);
  nlohmann::json doc = nlohmann::json::parse(outcome.result, nullptr, false);
  if (!doc.is_object()) {
    run.completed = false;
    run.import_ok = false;
    std::string tail = run.stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    if (auto at = tail.rfind('\n'); at != std::string::npos) tail = tail.substr(at + 1);
    if (outcome.timed_out) {
      run.error = "the import did not finish within the time limit and was killed";
    } else if (outcome.signal != 0) {
      run.error =
          fmt::format("the interpreter died from signal {} during the import", outcome.signal);
    } else {
      run.error = fmt::format("the interpreter exited with status {} without a result{}{}",
                              outcome.exit_code, tail.empty() ? "" : ": ", tail);
    }
    return run;
  }
  run.completed = true;
  run.import_ok = doc.value("ok", false);
  run.error = doc.value("error", std::string());
  const nlohmann::json maps = doc.value("maps", nlohmann::json::array());
  for (const auto& path : maps) {
    if (path.is_string()) run.mapped.push_back(path.get<std::string>());
  }
  const nlohmann::json versions = doc.value("versions", nlohmann::json::object());
  for (const auto& [path, value] : versions.items()) {
    if (value.is_number_integer()) run.versions.emplace_back(path, value.get<long>());
  }
  return run;
}

}  // namespace

std::string default_probe_statement(const Analysis& analysis) {
  for (const std::string& name : analysis.target_list()) {
    if (name == "torch") return "import torch";
  }
  return {};
}

bool interpreter_runs_here(const env::Venv& venv) {
  auto python = venv_python(venv);
  if (!python) return false;
  auto theirs = elf::read_elf(*python);
  auto ours = elf::read_elf("/proc/self/exe");
  if (!theirs || !ours || !theirs->has_value() || !ours->has_value()) return false;
  return (*theirs)->machine == (*ours)->machine && (*theirs)->elf_class == (*ours)->elf_class &&
         (*theirs)->data_encoding == (*ours)->data_encoding;
}

Result<ProbeRun> run_probe(const env::Venv& venv, const ProbeOptions& options) {
  auto python = venv_python(venv);
  if (!python) {
    return make_error(ExitCode::error, "cannot probe {}: it has no bin/python", venv.root.string());
  }
  ProbeRun run;
  run.statement = options.statement;
  run.python = python->string();
  ProcessOptions process;
  process.environment = probe_environment(venv, options);
  process.timeout_ms = options.timeout_seconds * 1000;
  process.result_pipe = true;
  process.max_output = 16u << 20;
  // The view: the host's /etc/ld.so.cache, or another file bound over it in a private mount
  // namespace ("none": an empty file, which ld.so reads as no cache).
  std::optional<TempDir> empty_dir;
  if (options.ld_cache == "none") {
    VENVFIX_TRY_ASSIGN(TempDir dir, TempDir::create("venvfix-probe-"));
    VENVFIX_TRY(write_file_atomic(dir.path() / "ld.so.cache", ""));
    process.bind_mounts.push_back({dir.path() / "ld.so.cache", "/etc/ld.so.cache"});
    empty_dir.emplace(std::move(dir));
    run.loader_view = "no ld.so.cache (private mount namespace)";
  } else if (!options.ld_cache.empty()) {
    std::error_code error;
    fs::path file = fs::absolute(options.ld_cache, error);
    process.bind_mounts.push_back({file, "/etc/ld.so.cache"});
    run.loader_view = "ld-cache " + file.string() + " (private mount namespace)";
  } else {
    run.loader_view = "host (/etc/ld.so.cache)";
  }
  std::vector<std::string> argv = {python->string(), "-I", "-B", "-c", k_script, options.statement};
  // A prefix's interpreter may live elsewhere (a `pip install --prefix` tree): its own
  // site-packages go in front of sys.path, as PYTHONPATH would put them.
  if (venv.kind == env::EnvKind::prefix) {
    for (std::size_t i = 0; i < venv.site_packages.size(); ++i) {
      if (venv.layer_of(venv.site_packages[i]) == env::Layer::own) {
        argv.push_back(venv.site_packages[i].string());
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto outcome = run_process(argv, process);
  if (!outcome && !process.bind_mounts.empty()) {
    run.view_note = fmt::format("{}; the import ran with the host's /etc/ld.so.cache instead",
                                outcome.error().message);
    run.loader_view = "host (/etc/ld.so.cache)";
    process.bind_mounts.clear();
    outcome = run_process(argv, process);
  }
  if (!outcome) return with_context(std::move(outcome).error(), "doctor --probe");
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return parse_run(*outcome, std::move(run));
}

}  // namespace venvfix::verify
