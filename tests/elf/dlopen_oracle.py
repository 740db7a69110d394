"""glibc as the oracle for venvfix's resolver (tests/elf/differential_test.cpp).

Run by a venv's own python:  python dlopen_oracle.py CASES.jsonl PREFIX

Each line of CASES is one case: {"case": N, "steps": [[KIND, ...], ...], "names": [...]}, with
steps ["preload", PATH] (ctypes.CDLL(PATH, RTLD_NOW); a failure is ignored, as torch does),
["root", PATH] (the same; when it fails the remaining steps are skipped) and
["call", FILE, NAME] (vfd_open(NAME) in the loaded object that is FILE, by device and inode:
dlopen(NAME, RTLD_NOW) from inside that object, so glibc takes it as the caller).

Every case runs in a child forked from this process (the interpreter and libpython already
loaded, as when torch runs its preload). For each case one JSON line is printed:
{"case": N, "steps": [{"ok": true} | {"error": DLERROR} | {"no_caller": true} | {"skipped":
true}], "names": {NAME: l_name or null}, "objects": [l_name...], "maps": [file...]}: for every
name what dlopen(NAME, RTLD_NOLOAD) binds to now (the loader's own l_name), the l_name of
every loaded object under PREFIX, and every file under PREFIX in /proc/self/maps.
"""

import ctypes
import json
import os
import sys


class LinkMap(ctypes.Structure):
    pass


LinkMap._fields_ = [
    ("l_addr", ctypes.c_size_t),
    ("l_name", ctypes.c_char_p),
    ("l_ld", ctypes.c_void_p),
    ("l_next", ctypes.POINTER(LinkMap)),
    ("l_prev", ctypes.POINTER(LinkMap)),
]

RTLD_DI_LINKMAP = 2
LIBC = ctypes.CDLL(None)
LIBC.dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
LIBC.dlinfo.restype = ctypes.c_int


def link_map_of(handle):
    out = ctypes.POINTER(LinkMap)()
    if LIBC.dlinfo(handle, RTLD_DI_LINKMAP, ctypes.byref(out)) != 0:
        return None
    return out


def loaded_names():
    """Every l_name in the main namespace, in load order."""
    node = link_map_of(LIBC._handle)
    while node and node.contents.l_prev:
        node = node.contents.l_prev
    names = []
    while node:
        names.append(os.fsdecode(node.contents.l_name or b""))
        node = node.contents.l_next
    return names


def bound_to(name):
    """What dlopen(name, RTLD_NOLOAD) binds to: the l_name of that object, or None."""
    try:
        handle = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    except OSError:
        return None
    node = link_map_of(handle._handle)
    return os.fsdecode(node.contents.l_name) if node else None


def find_by_file(path):
    """The l_name of the loaded object that is the file at path (device and inode), or None."""
    try:
        want = os.stat(path)
    except OSError:
        return None
    for name in loaded_names():
        try:
            st = os.stat(name)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino):
            return name
    return None


def call(caller_file, name):
    l_name = find_by_file(caller_file)
    if l_name is None:
        return {"no_caller": True}
    # A handle of that very object: dlsym then finds its own vfd_open first.
    handle = ctypes.CDLL(l_name, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    vfd_open = handle.vfd_open
    vfd_open.argtypes = [ctypes.c_char_p]
    vfd_open.restype = ctypes.c_char_p
    error = vfd_open(os.fsencode(name))
    return {"ok": True} if error is None else {"error": os.fsdecode(error)}


def run_case(case, prefix):
    steps = []
    stop = False
    for step in case["steps"]:
        if stop:
            steps.append({"skipped": True})
            continue
        if step[0] in ("preload", "root"):
            try:
                ctypes.CDLL(step[1], mode=os.RTLD_NOW)
                steps.append({"ok": True})
            except OSError as error:
                steps.append({"error": str(error)})
                stop = step[0] == "root"
        else:
            steps.append(call(step[1], step[2]))
    names = {name: bound_to(name) for name in case["names"]}
    objects = [n for n in loaded_names() if n.startswith(prefix)]
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if path.startswith(prefix) and path not in maps:
                    maps.append(path)
    return {"case": case["case"], "steps": steps, "names": names, "objects": objects,
            "maps": maps}


def main():
    cases_file, prefix = sys.argv[1], sys.argv[2]
    with open(cases_file) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    out = sys.stdout.buffer
    for case in cases:
        out.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                text = json.dumps(run_case(case, prefix))
            except BaseException as error:  # reported, never hidden
                text = json.dumps({"case": case["case"], "crash": repr(error)})
            data = (text + "\n").encode()
            while data:
                data = data[os.write(write_end, data):]
            os._exit(0)
        os.close(write_end)
        chunks = []
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        data = b"".join(chunks)
        if not data.endswith(b"\n"):
            data = (json.dumps({"case": case["case"], "crash": "status %d" % status}) +
                    "\n").encode()
        out.write(data)
    out.flush()


if __name__ == "__main__":
    main()
