"""Test-world data that is not product knowledge (so it lives here, not in manifests/)."""

# Wheel tags: the CUDA 13 wheels' real tags from reference §8 [V]; the rest use the
# manylinux_2_27 tag that most NVIDIA wheels carry (§8, e.g. nvidia-cublas, nvidia-cudnn-cu13).
_T2014 = ["py3-none-manylinux2014_x86_64", "py3-none-manylinux_2_17_x86_64"]
_T2010 = ["py3-none-manylinux2010_x86_64", "py3-none-manylinux_2_12_x86_64"]
NVIDIA_TAGS = {
    "nvidia-cublas": ["py3-none-manylinux_2_27_x86_64"],
    "nvidia-cuda-runtime": _T2014,
    "nvidia-cuda-nvrtc": _T2010,
    "nvidia-cuda-cupti": ["py3-none-manylinux_2_25_x86_64"],
    "nvidia-cufft": _T2014,
    "nvidia-curand": ["py3-none-manylinux_2_27_x86_64"],
    "nvidia-cusolver": ["py3-none-manylinux_2_27_x86_64"],
    "nvidia-cusparse": _T2014,
    "nvidia-nvjitlink": _T2010,
    "nvidia-nvtx": ["py3-none-manylinux1_x86_64", "py3-none-manylinux_2_5_x86_64"],
    "nvidia-nvvm": _T2010,
    "nvidia-cudnn-cu13": ["py3-none-manylinux_2_27_x86_64"],
    "nvidia-nccl-cu13": ["py3-none-manylinux_2_18_x86_64"],
}
DEFAULT_NVIDIA_TAGS = ["py3-none-manylinux_2_27_x86_64"]

# Versions newer than any torch pin, so a planner that picks "the newest" instead of the pin
# is caught. 9.22.0.52 also has a different soname set (+ tensor_ir, + ext; reference §3.4).
NEWER_VERSIONS = [("nvidia-cudnn-cu12", "9.22.0.52"), ("nvidia-cublas-cu12", "12.9.1.4")]

# CUDA 13 as the index serves it now (reference §9, issue 11 part 7), beside the versions the
# torch builds pin: (name, version, tags or None for NVIDIA_TAGS, yanked reason or None).
# Real versions: nvidia-cublas 13.1.1.3 (cuda-toolkit 13.0.3, §1.5 [V]; the top of torch
# 2.12's range nvidia-cublas>=13.1.0.3,<=13.1.1.3). The rest are test-world versions chosen so
# that a planner which does not choose as pip does is caught: newer than every pin or range,
# a pre-release, a wheel for another platform only and a yanked file inside a cuda-toolkit
# ==X.* pin. (Unpinned installs take the newest: `pip install nvidia-cudnn-cu13` gets 9.20.0.48,
# torch 2.12.1's pin, and nvidia-cublas 13.2.0.9, as on the real index.)
_AARCH64 = ["py3-none-manylinux_2_27_aarch64"]
CUDA13_VERSIONS = [
    ("nvidia-cublas", "13.1.1.3", None, None),
    ("nvidia-cublas", "13.2.0.9", None, None),            # above every pin and range
    ("nvidia-cuda-runtime", "13.0.96.1rc1", None, None),  # in ==13.0.96.*, a pre-release
    ("nvidia-cufft", "12.0.0.61.1", _AARCH64, None),      # in ==12.0.0.61.*, no x86_64 wheel
    ("nvidia-curand", "10.4.0.35.1", None, "test world: yanked"),  # in ==10.4.0.35.*, yanked
]

# The suffixed names of the CUDA 13 toolkit components: 0.0.1 source-only stubs whose build
# exits with an error (reference §9 [V2]); served as sdists, never installable.
CUDA13_STUBS = ["nvidia-cublas-cu13", "nvidia-cuda-runtime-cu13", "nvidia-cuda-nvrtc-cu13",
                "nvidia-cuda-cupti-cu13", "nvidia-cufft-cu13", "nvidia-curand-cu13",
                "nvidia-cusolver-cu13", "nvidia-cusparse-cu13", "nvidia-nvjitlink-cu13",
                "nvidia-nvtx-cu13", "nvidia-cufile-cu13"]
STUB_VERSION = "0.0.1"

# Pure-Python stand-ins for torch's other requirements: (name, version, module, requires).
STAND_INS = [
    ("filelock", "3.18.0", "filelock", []),
    ("typing-extensions", "4.14.1", "typing_extensions", []),
    ("sympy", "1.14.0", "sympy", ["mpmath<1.4,>=1.1.0"]),
    ("mpmath", "1.3.0", "mpmath", []),
    ("networkx", "3.5", "networkx", []),
    ("jinja2", "3.1.6", "jinja2", ["MarkupSafe>=2.0"]),
    ("markupsafe", "3.0.2", "markupsafe", []),
    ("fsspec", "2025.7.0", "fsspec", []),
    ("triton", "3.4.0", "triton", []),
    ("triton", "3.5.1", "triton", []),
    ("triton", "3.6.0", "triton", []),
    ("triton", "3.7.0", "triton", []),
    ("cuda-bindings", "12.9.4", "cuda.bindings", []),
    ("cuda-bindings", "13.0.3", "cuda.bindings", []),
    # torch requires setuptools on Python >= 3.12 (the worlds built by pyenv's 3.12 and 3.13).
    ("setuptools", "80.9.0", "setuptools", []),
]

# The scenarios (names are fixed: the C++ tests use them) -> one line for --help.
SCENARIOS = {
    "healthy": "torch 2.8.0+cu128 with all its pins, installed by pip",
    "dual-cudnn": "healthy, then pip install nvidia-cudnn-cu13 (the seed before its uninstall)",
    "seed": "healthy, then pip install nvidia-cudnn-cu13, then pip uninstall -y nvidia-cudnn-cu13 (ghost cu12 cuDNN)",
    "clobbered": "torch 2.11.0+cu130, then pip install --force-reinstall --no-deps nvidia-cudnn-cu12==9.10.2.21",
    "cuda-mix": "healthy, then pip install nvidia-cublas==13.1.0.3 nvidia-cuda-runtime==13.0.96 nvidia-nccl-cu13==2.28.9",
    "killed-install": "healthy, then nvidia/cublas/lib/libcublasLt.so.12 deleted (by hand: see docs/test-world.md)",
    "no-pip": "venv --without-pip, torch 2.8.0+cu128 installed by the outer pip with --python",
    "split-lib64": "torch in lib64/pythonX.Y/site-packages, NVIDIA wheels in lib/pythonX.Y/site-packages",
    "torch211-cu130": "torch 2.11.0+cu130 with cuda-toolkit[...]==13.0.2 and its other pins",
    "all-nvidia-removed": "healthy, then pip uninstall -y of every nvidia-* distribution",
    # Environments that are not plain venvs (docs/test-world.md "Layouts"); the layered ones hold
    # base/ (a prefix) and venv/ (include-system-site-packages = true over it).
    "prefix-seed": "the seed in a `pip install --prefix` tree whose bin/python3 links to the interpreter",
    "debian-seed": "the seed in a Debian-style prefix (dist-packages; an apt-made package in lib/python3/dist-packages)",
    "uv-seed": "the seed in a venv shaped as uv makes it (uv = in pyvenv.cfg, INSTALLER uv, no pip)",
    "base-ghost": "base/ holds torch and the seed's ghost; venv/ sees it with --system-site-packages",
    "venv-ghost": "base/ holds a healthy torch; venv/ holds the seed's ghost cu12 cuDNN, shadowing the base's",
    # Variants the manifests do not describe (tests/world/variants.py): torch 2.9.1+cu128 is
    # not in manifests/torch.json; "all"/"none": what the stand-in preloads after import;
    # "norunpath": nvidia-cudnn-cu12 rebuilt without DT_RUNPATH.
    "unlisted-preload-all": "torch 2.9.1+cu128 (unlisted) that preloads its whole table after import",
    "unlisted-preload-none": "torch 2.9.1+cu128 (unlisted) that preloads nothing after import",
    "unlisted-preload-all-norunpath": "unlisted-preload-all, with a cuDNN whose libraries have no DT_RUNPATH",
    "unlisted-preload-none-norunpath": "unlisted-preload-none, with a cuDNN whose libraries have no DT_RUNPATH",
    "unlisted-seed": "unlisted-preload-all, then pip install and pip uninstall -y nvidia-cudnn-cu13",
}
