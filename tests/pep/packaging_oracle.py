"""Reference answers from Python `packaging` for the venvfix cross-check test.

Reads cases (one per line, tab-separated, first field the kind) from argv[1] and writes one
answer line per case to argv[2]. Uses the `packaging` vendored inside pip (`pip._vendor`), so
nothing is installed; falls back to a top-level `packaging` only when pip has none.

  V <text>                         -> ok <str> <pre> <post> <dev> <public> <base> <local> | err
  C <a> <b>                        -> -1 | 0 | 1
  S <specifiers> <version> <pre>   -> ok <contains 0|1> <str(SpecifierSet)> | err
  F <specifiers> <v1,v2,..> <pre>  -> ok <filtered, comma-joined> | err
  M <marker> <extra> <env values>  -> ok <0|1|undefined> <str(Marker)> | err
(undefined: the marker parses but packaging raises while evaluating it)
  R <requirement>                  -> ok <name> <extras> <specifier> <url> <marker> | err
<pre> is none, true or false (packaging's prereleases=None/True/False).
"""
import sys

try:
    from pip._vendor.packaging.markers import Marker
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import Specifier, SpecifierSet
    from pip._vendor.packaging.version import Version
    import pip._vendor.packaging as packaging_module
except ImportError:  # pragma: no cover - pip without vendored packaging
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import Specifier, SpecifierSet
    from packaging.version import Version
    import packaging as packaging_module

ENV_KEYS = [
    "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
    "platform_system", "platform_machine", "platform_python_implementation",
    "implementation_name", "implementation_version", "platform_version",
]
PRE = {"none": None, "true": True, "false": False}


def strict_set(text):
    """A SpecifierSet whose clauses are all PEP 440 (no LegacySpecifier fallback)."""
    for clause in text.split(","):
        if clause.strip():
            Specifier(clause)  # raises InvalidSpecifier for non-PEP 440 clauses
    return SpecifierSet(text)


def b(value):
    return "1" if value else "0"


def answer(fields):
    kind = fields[0]
    try:
        if kind == "V":
            v = Version(fields[1])
            return ["ok", str(v), b(v.is_prerelease), b(v.is_postrelease), b(v.is_devrelease),
                    v.public, v.base_version, v.local or ""]
        if kind == "C":
            a, c = Version(fields[1]), Version(fields[2])
            return ["-1" if a < c else "1" if a > c else "0"]
        if kind == "S":
            s = strict_set(fields[1])
            return ["ok", b(s.contains(Version(fields[2]), prereleases=PRE[fields[3]])), str(s)]
        if kind == "F":
            s = strict_set(fields[1])
            versions = [Version(x) for x in fields[2].split(",") if x]
            out = s.filter(versions, prereleases=PRE[fields[3]])
            return ["ok", ",".join(str(x) for x in out)]
        if kind == "M":
            m = Marker(fields[1])
            env = dict(zip(ENV_KEYS, fields[3:]))
            env["extra"] = fields[2]
            try:
                value = b(m.evaluate(env))
            except Exception:  # noqa: BLE001 - packaging defines no value here
                value = "undefined"
            return ["ok", value, str(m)]
        if kind == "R":
            r = Requirement(fields[1])
            for clause in str(r.specifier).split(","):
                if clause:
                    Specifier(clause)
            return ["ok", r.name, ",".join(sorted(r.extras)), str(r.specifier), r.url or "",
                    str(r.marker) if r.marker else ""]
    except Exception:  # noqa: BLE001 - any refusal is an "err" answer
        return ["err"]
    raise SystemExit(f"unknown case kind {kind!r}")


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        out.write(f"packaging {packaging_module.__version__}\n")
        for line in lines:
            out.write("\t".join(answer(line.split("\t"))) + "\n")


if __name__ == "__main__":
    main()
