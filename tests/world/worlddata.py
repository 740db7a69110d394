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
    ("cuda-bindings", "12.9.4", "cuda.bindings", []),
    ("cuda-bindings", "13.0.3", "cuda.bindings", []),
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
    # Variants the manifests do not describe (tests/world/variants.py): torch 2.9.1+cu128 is
    # not in manifests/torch.json; "all"/"none": what the stand-in preloads after import;
    # "norunpath": nvidia-cudnn-cu12 rebuilt without DT_RUNPATH.
    "unlisted-preload-all": "torch 2.9.1+cu128 (unlisted) that preloads its whole table after import",
    "unlisted-preload-none": "torch 2.9.1+cu128 (unlisted) that preloads nothing after import",
    "unlisted-preload-all-norunpath": "unlisted-preload-all, with a cuDNN whose libraries have no DT_RUNPATH",
    "unlisted-preload-none-norunpath": "unlisted-preload-none, with a cuDNN whose libraries have no DT_RUNPATH",
    "unlisted-seed": "unlisted-preload-all, then pip install and pip uninstall -y nvidia-cudnn-cu13",
}
