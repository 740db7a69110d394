"""Scenario venvs, made with `python3 -m venv` and filled by pip itself from the world's index.

Each scenario is built once as a template under WORLD/scenarios/NAME (under a lock) and copied
with `cp -a` for each caller, so tests may mutate their copy. Copies keep working because
everything in a venv is relative except the console-script shebangs: call
`<venv>/bin/python -m pip`, never `<venv>/bin/pip`, on a copy.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import index_server

READY = ".venvfix-world-scenario"
HEALTHY_TORCH = "torch==2.8.0+cu128"
# What the seed's user installed beside it: the CUDA 13 cuDNN of reference §8 and the cuBLAS it
# pulls in (pinned, so that newer test-world versions do not change the scenarios).
SEED_CU13 = ("nvidia-cudnn-cu13==9.19.0.56", "nvidia-cublas==13.1.0.3")


def pip_env() -> dict[str, str]:
    """An environment in which pip can reach nothing but the index it is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "UV_"))}
    env.update({"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CONFIG_FILE": "/dev/null",
                "PIP_NO_CACHE_DIR": "1", "PYTHONNOUSERSITE": "1", "PIP_ROOT_USER_ACTION": "ignore",
                "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"})
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(k, None)
    return env


def run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, env=pip_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"scenario step failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")



def relocate_venv(venv: Path) -> None:
    """Points a copied venv's scripts at itself, as if pip had made it where it now is.

    A copy (cp -a of a template built elsewhere) keeps the template's absolute paths in bin/:
    pip's scripts' shebangs and activate's VIRTUAL_ENV. Tests that run bin/pip or source
    bin/activate need the copy's own.
    """
    bin_dir = venv / "bin"
    pip = bin_dir / "pip"
    if not pip.is_file():
        return
    first = pip.read_bytes().split(b"\n", 1)[0]
    marker = b"/bin/python"
    if not first.startswith(b"#!") or marker not in first:
        return
    old = first[2:first.index(marker)]
    new = str(venv.resolve()).encode()
    if old == new:
        return
    rewritten: dict[str, bytes] = {}
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if old not in data or b"\0" in data[:4096]:
            continue
        head, _, rest = data.partition(b"\n")
        if head.startswith(b"#!") and b" " in new:
            # A shebang cannot hold a space: pip (distlib) writes this /bin/sh trampoline then.
            python = head[2:].replace(old, new)
            head = b"#!/bin/sh\n'''exec' \"" + python + b"\" \"$0\" \"$@\"\n' '''"
        else:
            head = head.replace(old, new)
        mode = script.stat().st_mode
        written = head + b"\n" + rest.replace(old, new)
        script.write_bytes(written)
        script.chmod(mode)
        rewritten[script.name] = written
    # RECORD lists the scripts with their hash and size: record what is there now, as pip does.
    for record in venv.glob("lib*/python*/site-packages/*.dist-info/RECORD"):
        rows = list(csv.reader(record.read_text().splitlines()))
        changed = False
        for row in rows:
            name = row[0].rsplit("/", 1)[-1] if row and row[0].startswith("../") else None
            if name in rewritten and row[0].endswith("/bin/" + name):
                digest = base64.urlsafe_b64encode(hashlib.sha256(rewritten[name]).digest())
                row[1:3] = ["sha256=" + digest.rstrip(b"=").decode(), str(len(rewritten[name]))]
                changed = True
        if changed:
            with record.open("w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(rows)


class Maker:
    def __init__(self, world: Path) -> None:
        self.world = world
        self.templates = world / "scenarios"
        self.server = None
        self.url = ""

    def index_url(self) -> str:
        if self.server is None:
            self.server, port = index_server.start_in_thread(self.world / "index")
            self.url = f"http://127.0.0.1:{port}/simple"
        return self.url

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # --- helpers -------------------------------------------------------------------------
    def venv(self, path: Path, with_pip: bool = True) -> None:
        cmd = [sys.executable, "-m", "venv"] + ([] if with_pip else ["--without-pip"]) + [str(path)]
        run(cmd)

    def pip(self, venv: Path, *args: str) -> None:
        run([str(venv / "bin" / "python"), "-m", "pip", *args])

    def install(self, venv: Path, *args: str) -> None:
        self.pip(venv, "install", "--index-url", self.index_url(), *args)

    def site(self, venv: Path, lib: str = "lib") -> Path:
        return venv / lib / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"

    def template(self, name: str) -> Path:
        """The ready template of scenario NAME, building it (and what it derives from) if needed."""
        t = self.templates / name
        if (t / READY).is_file():
            return t
        tmp = self.templates / f".{name}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        getattr(self, "make_" + name.replace("-", "_"))(tmp)
        (tmp / READY).write_text(name + "\n")
        if t.exists():
            shutil.rmtree(t)
        tmp.rename(t)
        return t

    def derive(self, base: str, dest: Path) -> None:
        subprocess.run(["cp", "-a", str(self.template(base)), str(dest)], check=True)
        (dest / READY).unlink()
        relocate_venv(dest)

    # --- the scenarios -----------------------------------------------------------------------
    def make_healthy(self, d: Path) -> None:
        self.venv(d)
        self.install(d, HEALTHY_TORCH)

    def make_dual_cudnn(self, d: Path) -> None:
        # The seed one step before its breakage: cu13's cuDNN installed over cu12's (both
        # RECORDs list nvidia/cudnn/lib/*.so.9).
        self.derive("healthy", d)
        self.install(d, *SEED_CU13)

    def make_seed(self, d: Path) -> None:
        # pip overwrites cu12's nvidia/cudnn/lib/*.so.9 with cu13's, then deletes every path in
        # cu13's RECORD: the cu12 dist-info stays, its libraries are gone.
        self.derive("healthy", d)
        self.install(d, *SEED_CU13)
        self.pip(d, "uninstall", "-y", "nvidia-cudnn-cu13")

    def make_torch211_cu130(self, d: Path) -> None:
        self.venv(d)
        self.install(d, "torch==2.11.0+cu130")

    def make_clobbered(self, d: Path) -> None:
        self.derive("torch211-cu130", d)
        self.install(d, "--force-reinstall", "--no-deps", "nvidia-cudnn-cu12==9.10.2.21")

    def make_cuda_mix(self, d: Path) -> None:
        self.derive("healthy", d)
        self.install(d, "nvidia-cublas==13.1.0.3", "nvidia-cuda-runtime==13.0.96", "nvidia-nccl-cu13==2.28.9")

    def make_killed_install(self, d: Path) -> None:
        # pip cannot be made to leave this state deterministically (see docs/test-world.md):
        # the file is deleted by hand, as a killed install/uninstall leaves it.
        self.derive("healthy", d)
        (self.site(d) / "nvidia/cublas/lib/libcublasLt.so.12").unlink()

    def make_no_pip(self, d: Path) -> None:
        # As uv makes them: no pip inside. The outer pip installs with --python (pip >= 22.3).
        self.venv(d, with_pip=False)
        run([sys.executable, "-m", "pip", "--python", str(d / "bin" / "python"), "install",
             "--index-url", self.index_url(), HEALTHY_TORCH])

    def make_split_lib64(self, d: Path) -> None:
        # RHEL/Alma/Fedora pythons put platlib (torch, Root-Is-Purelib: false) in lib64 and
        # purelib (the NVIDIA wheels) in lib. We reproduce it with pip: torch alone with
        # --target into a real lib64/.../site-packages (put on sys.path by a .pth, as those
        # pythons' site.py does), then its dependencies into lib/.../site-packages.
        self.venv(d)
        lib64 = d / "lib64"
        if lib64.is_symlink() or lib64.is_file():
            lib64.unlink()
        plat = self.site(d, "lib64")
        plat.mkdir(parents=True, exist_ok=True)
        rel = os.path.relpath(plat, self.site(d))
        (self.site(d) / "_venvfix_world_lib64.pth").write_text(rel + "\n")
        self.install(d, "--no-deps", "--target", str(plat), HEALTHY_TORCH)
        self.install(d, HEALTHY_TORCH)

    def make_all_nvidia_removed(self, d: Path) -> None:
        self.derive("healthy", d)
        names = sorted(p.name.split("-")[0].replace("_", "-") for p in self.site(d).glob("nvidia_*.dist-info"))
        self.pip(d, "uninstall", "-y", *names)

    # --- variants the manifests do not describe (tests/world/variants.py) -----------------
    def variant_wheel(self, variant: str) -> str:
        wheels = sorted((self.world / "variants" / variant).glob("*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"variant {variant}: expected one wheel, found {len(wheels)}")
        return str(wheels[0])

    def make_unlisted_preload_all(self, d: Path) -> None:
        self.venv(d)
        self.install(d, self.variant_wheel("torch-preload-all"))

    def make_unlisted_preload_none(self, d: Path) -> None:
        self.venv(d)
        self.install(d, self.variant_wheel("torch-preload-none"))

    def make_unlisted_preload_all_norunpath(self, d: Path) -> None:
        self.derive("unlisted-preload-all", d)
        self.install(d, "--no-deps", "--force-reinstall", self.variant_wheel("cudnn-norunpath"))

    def make_unlisted_preload_none_norunpath(self, d: Path) -> None:
        self.derive("unlisted-preload-none", d)
        self.install(d, "--no-deps", "--force-reinstall", self.variant_wheel("cudnn-norunpath"))

    def make_unlisted_seed(self, d: Path) -> None:
        self.derive("unlisted-preload-all", d)
        self.install(d, *SEED_CU13)
        self.pip(d, "uninstall", "-y", "nvidia-cudnn-cu13")

    # --- environments that are not plain venvs (docs/test-world.md "Layouts") ---------------
    def linked_prefix(self, d: Path, python: str) -> Path:
        """A prefix at d whose interpreter is a copy of `python`'s executable and whose standard
        library is symlinks to that python's, except site-packages and dist-packages, which are
        d's own: CPython finds its landmark (lib/pythonX.Y/os.py) in d, so sys.prefix is d and
        pip installs into d, never into the machine's Python."""
        real = Path(os.path.realpath(python))
        home = real.parent.parent
        lib = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        (d / "bin").mkdir(parents=True)
        shutil.copy2(real, d / "bin" / lib)
        (d / "bin" / "python3").symlink_to(lib)
        (d / "lib" / lib).mkdir(parents=True)
        for entry in (home / "lib").glob("libpython*"):  # a shared-libpython build's library
            (d / "lib" / entry.name).symlink_to(entry)
        for entry in (home / "lib" / lib).iterdir():
            if entry.name not in ("site-packages", "dist-packages"):
                (d / "lib" / lib / entry.name).symlink_to(entry)
        return d / "bin" / lib

    def outer_pip(self, python: Path, *args: str, extra_env: dict[str, str] | None = None) -> None:
        env = pip_env()
        env.update(extra_env or {})
        cmd = [sys.executable, "-m", "pip", "--python", str(python), *args]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"scenario step failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")

    def seed_steps(self, python: Path, *extra: str) -> None:
        """The seed with the pip `python` runs: healthy torch, the CUDA 13 cuDNN over it, then
        pip's uninstall of it."""
        self.outer_pip(python, "install", "--index-url", self.index_url(), *extra, HEALTHY_TORCH)
        self.outer_pip(python, "install", "--index-url", self.index_url(), *extra, *SEED_CU13)
        self.outer_pip(python, "uninstall", "-y", *extra, "nvidia-cudnn-cu13")

    def make_prefix_seed(self, d: Path) -> None:
        # `pip install --prefix`: no pyvenv.cfg, no standard library; bin/python3 links to the
        # real interpreter. PYTHONPATH lets pip see what the earlier steps installed.
        site = self.site(d)
        (d / "bin").mkdir(parents=True)
        (d / "bin" / "python3").symlink_to(os.path.realpath(sys.executable))
        env = pip_env()
        env["PYTHONPATH"] = str(site)
        url = self.index_url()
        for args in (["install", "--prefix", str(d), "--index-url", url, HEALTHY_TORCH],
                     ["install", "--prefix", str(d), "--index-url", url, *SEED_CU13],
                     ["uninstall", "-y", "nvidia-cudnn-cu13"]):
            r = subprocess.run([sys.executable, "-m", "pip", *args], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"prefix-seed: pip {' '.join(args)} failed\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")

    def make_debian_seed(self, d: Path) -> None:
        # Debian's own python3 (its site.py and sysconfig are patched for dist-packages) as a
        # linked prefix; its pip installs into local/lib/pythonX.Y/dist-packages (posix_local)
        # and needs --break-system-packages (EXTERNALLY-MANAGED). An apt-installed package is
        # copied into lib/python3/dist-packages as apt left it (RECORD, no INSTALLER).
        debian = Path("/usr/bin") / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        if not debian.is_file():
            raise RuntimeError(f"debian-seed needs Debian's {debian}")
        python = self.linked_prefix(d, str(debian))
        system = d / "lib" / "python3" / "dist-packages"
        system.mkdir(parents=True)
        apt = Path("/usr/lib/python3/dist-packages")
        infos = sorted(apt.glob("blinker-*.dist-info"))
        if not infos or (infos[0] / "INSTALLER").exists():
            raise RuntimeError("debian-seed: no apt-installed blinker-*.dist-info in " + str(apt))
        shutil.copytree(infos[0], system / infos[0].name)
        shutil.copytree(apt / "blinker", system / "blinker", ignore=shutil.ignore_patterns("__pycache__"))
        self.seed_steps(python, "--break-system-packages")

    def layered(self, d: Path) -> tuple[Path, Path]:
        """d/base: a linked prefix of this python; d/venv: `python -m venv --system-site-packages`
        over it (the venv's home is d/base/bin)."""
        python = self.linked_prefix(d / "base", sys.executable)
        run([str(python), "-m", "venv", "--system-site-packages", "--without-pip", str(d / "venv")])
        return python, d / "venv" / "bin" / "python"

    def make_base_ghost(self, d: Path) -> None:
        # torch and the NVIDIA wheels in the base, broken there by the seed; the venv is empty.
        base, _ = self.layered(d)
        self.seed_steps(base)

    def make_venv_ghost(self, d: Path) -> None:
        # A healthy base; in the venv layer a second cu12 cuDNN (pip --ignore-installed, as a
        # user forcing a reinstall does), then the seed there: the venv's ghost shadows the base.
        base, venv = self.layered(d)
        self.outer_pip(base, "install", "--index-url", self.index_url(), HEALTHY_TORCH)
        infos = sorted((d / "base" / "lib" / self.site(d).parent.name / "site-packages").glob("nvidia_cudnn_cu12-*.dist-info"))
        version = infos[0].name[len("nvidia_cudnn_cu12-"):-len(".dist-info")]
        self.outer_pip(venv, "install", "--index-url", self.index_url(), "--ignore-installed", "--no-deps",
                       f"nvidia-cudnn-cu12=={version}")
        self.outer_pip(venv, "install", "--index-url", self.index_url(), *SEED_CU13)
        self.outer_pip(venv, "uninstall", "-y", "nvidia-cudnn-cu13")

    def make_uv_seed(self, d: Path) -> None:
        # The seed as uv leaves it: no pip inside, pyvenv.cfg as uv writes it, INSTALLER "uv"
        # (its RECORD row updated as uv writes it). pip makes the breakage; the shape is uv's.
        self.venv(d, with_pip=False)
        self.seed_steps(d / "bin" / "python")
        cfg = dict(line.split(" = ", 1) for line in (d / "pyvenv.cfg").read_text().splitlines() if " = " in line)
        (d / "pyvenv.cfg").write_text(f"home = {cfg['home']}\nimplementation = CPython\nuv = 0.5.11\n"
                                      f"version_info = {cfg['version']}\ninclude-system-site-packages = false\n")
        import base64, hashlib
        digest = base64.urlsafe_b64encode(hashlib.sha256(b"uv\n").digest()).rstrip(b"=").decode()
        for info in self.site(d).glob("*.dist-info"):
            (info / "INSTALLER").write_text("uv\n")
            rows = (info / "RECORD").read_text().splitlines()
            rows = [f"{info.name}/INSTALLER,sha256={digest},3" if r.startswith(f"{info.name}/INSTALLER,") else r for r in rows]
            (info / "RECORD").write_text("\n".join(rows) + "\n")

    def make_big(self, d: Path) -> None:
        self.derive("healthy", d)
        # --no-compile keeps the file count near a real torch venv's (~30,000, no .pyc twins).
        self.install(d, "--no-deps", "--no-compile", "--force-reinstall", HEALTHY_TORCH)
        self.install(d, "--no-deps", "--no-compile", *[f"bigdist{i}==1.0" for i in range(8)])


def make(name: str, world: Path, out: Path) -> None:
    from world import locked
    m = Maker(world)
    try:
        with locked(world / ".scenarios.lock"):
            t = m.template(name)
    finally:
        m.close()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"world.py: {out} exists and is not empty")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.rmdir()
    subprocess.run(["cp", "-a", str(t), str(out)], check=True)
    (out / READY).unlink()
    relocate(t, out)
    relocate_venv(out)


def relocate(template: Path, out: Path) -> None:
    """A layered scenario's venv names its base by absolute path (pyvenv.cfg's home, bin/python):
    point the copy's venv at the copy's base."""
    venv = out / "venv"
    if not (venv / "pyvenv.cfg").is_file() or not (out / "base").is_dir():
        return
    # The template was built as .NAME.tmp and renamed: its venv names that path.
    built = str(template.parent / f".{template.name}.tmp")
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace(built, str(out)))
    for link in (venv / "bin").iterdir():
        if link.is_symlink() and os.readlink(link).startswith(built):
            target = os.readlink(link).replace(built, str(out), 1)
            link.unlink()
            link.symlink_to(target)
