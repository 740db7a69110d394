"""Real ELF shared objects with chosen DT_SONAME, DT_NEEDED and DT_RPATH/DT_RUNPATH.

How: one C object (a tiny body plus a fixed-size identity string) is compiled once with `cc`;
every library is then linked from it with `ld`, against empty stub libraries that carry only
the wanted sonames, so the linker records exactly the DT_NEEDED list, in order. `--disable-new-dtags`
gives DT_RPATH (torch), `--enable-new-dtags` DT_RUNPATH (NVIDIA). The identity string
(distribution, version, soname) is written into the placeholder afterwards, so two builds of
the same soname never have the same bytes.
"""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

PLACEHOLDER = b"@@VENVFIX_IDENT_PLACEHOLDER@@"
IDENT_SIZE = 256
DLOPENS_PLACEHOLDER = b"@@VENVFIX_DLOPENS_PLACEHOLDER@@"
DLOPENS_SIZE = 1024

# venvfix_open_sublibraries() opens, from the library's own code, the sonames stamped into
# venvfix_dlopens (cuDNN's sub-libraries): glibc then takes this library as the caller, so the
# real loader decides whether its RPATH chain or RUNPATH finds them. The list is a writable
# global so that the compiler cannot fold the placeholder, and hidden so that the first loaded
# library's copy does not interpose on every other library's (they all define the name).
_BODY = f"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
__attribute__((used)) const char venvfix_ident[{IDENT_SIZE}] = "{PLACEHOLDER.decode()}";
__attribute__((used, visibility("hidden"))) char venvfix_dlopens[{DLOPENS_SIZE}] = "{DLOPENS_PLACEHOLDER.decode()}";
static char venvfix_failure[1024];
const char *venvfix_identity(void) {{ return venvfix_ident; }}
const char *venvfix_open_sublibraries(void) {{
    char names[{DLOPENS_SIZE}];
    memcpy(names, venvfix_dlopens, sizeof names);
    names[sizeof names - 1] = 0;
    if (strncmp(names, "@@", 2) == 0) return NULL;
    for (char *name = strtok(names, " "); name != NULL; name = strtok(NULL, " ")) {{
        if (dlopen(name, RTLD_NOW | RTLD_LOCAL) == NULL) {{
            snprintf(venvfix_failure, sizeof venvfix_failure, "%s", dlerror());
            return venvfix_failure;
        }}
    }}
    return NULL;
}}
"""


class ElfFactory:
    """Links libraries into place; `work` holds the object file and the stubs."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.stubs = work / "stubs"
        self.stubs.mkdir(parents=True, exist_ok=True)
        src = work / "body.c"
        src.write_text(_BODY)
        self.obj = work / "body.o"
        subprocess.run(["cc", "-c", "-fPIC", "-O1", "-o", str(self.obj), str(src)], check=True)
        empty = work / "empty.c"
        empty.write_text("")
        self.empty_obj = work / "empty.o"
        subprocess.run(["cc", "-c", "-fPIC", "-o", str(self.empty_obj), str(empty)], check=True)
        self._have: set[str] = set()
        self._lock = threading.Lock()

    def stub(self, soname: str) -> None:
        """An empty library whose only content is DT_SONAME; thread-safe (built once, renamed in)."""
        with self._lock:
            if soname in self._have:
                return
            tmp = self.stubs / f".{soname}.tmp"
            subprocess.run(["ld", "-shared", "-o", str(tmp), str(self.empty_obj), "-soname", soname], check=True)
            tmp.replace(self.stubs / soname)
            self._have.add(soname)

    def link_args(self, soname: str | None, needed: list[str], rpath: str | None, runpath: str | None) -> list[str]:
        for n in needed:
            self.stub(n)
        args = ["-z", "noexecstack"]
        if soname:
            args += ["-soname", soname]
        args += ["--no-as-needed", "-L", str(self.stubs)] + [f"-l:{n}" for n in needed]
        if rpath:
            args += ["--disable-new-dtags", "-rpath", rpath]
        elif runpath:
            args += ["--enable-new-dtags", "-rpath", runpath]
        return args

    def library(self, out: Path, soname: str | None, needed: list[str], ident: str,
                rpath: str | None = None, runpath: str | None = None,
                dlopens: list[str] | None = None) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ld", "-shared", "-o", str(out), str(self.obj)]
                       + self.link_args(soname, needed, rpath, runpath), check=True)
        stamp_identity(out, ident, dlopens or [])

    def extension(self, out: Path, module: str, include_dir: str, needed: list[str], ident: str,
                  rpath: str) -> None:
        """A real CPython extension module `module` (e.g. torch._C) linked like a library."""
        leaf = module.rsplit(".", 1)[-1]
        src = self.work / f"ext_{abs(hash((str(out), ident)))}.c"
        src.write_text(f"""#define PY_SSIZE_T_CLEAN
#include <Python.h>
static const char ident[] = "{ident}";
static PyObject *identity(PyObject *self, PyObject *unused) {{ (void)self; (void)unused; return PyUnicode_FromString(ident); }}
static PyMethodDef methods[] = {{{{"_venvfix_identity", identity, METH_NOARGS, NULL}}, {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, methods, NULL, NULL, NULL, NULL}};
PyMODINIT_FUNC PyInit_{leaf}(void) {{ return PyModule_Create(&def); }}
""")
        out.parent.mkdir(parents=True, exist_ok=True)
        obj = src.with_suffix(".o")
        subprocess.run(["cc", "-c", "-fPIC", "-O1", "-I", include_dir, "-o", str(obj), str(src)], check=True)
        subprocess.run(["ld", "-shared", "-o", str(out), str(obj)] + self.link_args(None, needed, rpath, None),
                       check=True)


def _stamp(data: bytes, path: Path, placeholder: bytes, size: int, raw: bytes) -> bytes:
    at = data.find(placeholder)
    if at < 0:
        raise RuntimeError(f"{path}: placeholder {placeholder.decode()} not found")
    if len(raw) >= size:
        raise RuntimeError(f"{path}: {raw[:40]!r}... does not fit into {size} bytes")
    return data[:at] + raw + b"\0" * (size - len(raw)) + data[at + size:]


def stamp_identity(path: Path, ident: str, dlopens: list[str] | None = None) -> None:
    data = path.read_bytes()
    data = _stamp(data, path, PLACEHOLDER, IDENT_SIZE, ident.encode()[: IDENT_SIZE - 1])
    if dlopens:
        data = _stamp(data, path, DLOPENS_PLACEHOLDER, DLOPENS_SIZE, " ".join(dlopens).encode())
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
