"""Variants that the manifests do not describe, so that tests do not inherit their assumptions.

The main world is generated from manifests/ (what venvfix believes); these wheels vary what
those beliefs rest on, and tests judge venvfix against what the real loader does with them:
- torch builds that manifests/torch.json does not list (`UNLISTED_TORCH`), once as a stand-in
  that preloads its whole table after a successful import and once as one that preloads nothing;
- nvidia-cudnn-cu12 without any DT_RUNPATH (the real wheels have `$ORIGIN`: reference §8), so
  that its sub-libraries are found only through an RPATH inherited from torch's libraries.

They are written to WORLD/variants/<name>/, not into the index: a scenario installs them by
file path (pip install <wheel>), with the index for their dependencies.
"""
from __future__ import annotations

import copy
from pathlib import Path

# A build that is not in manifests/torch.json: 2.9.1+cu128 (the one that showed seven false
# problems on venvs built elsewhere), with the cu128 pins and libraries of 2.8.0+cu128.
UNLISTED_TORCH = "2.9.1+cu128"
BASE_BUILD = "2.8.0+cu128"
CUDNN = ("nvidia-cudnn-cu12", "9.10.2.21")

# variant directory -> how the unlisted stand-in behaves after a successful import
TORCH_VARIANTS = {"torch-preload-all": "all", "torch-preload-none": []}
CUDNN_NO_RUNPATH = "cudnn-norunpath"


def unlisted_build(torch_manifest: dict, on_success) -> dict:
    base = next(b for b in torch_manifest["builds"] if b["version"] == BASE_BUILD)
    build = copy.deepcopy(base)
    build["version"] = UNLISTED_TORCH
    build["preload_on_success"] = on_success
    build.pop("preload_exclude", None)
    return build


def build(builder, out: Path) -> None:
    for name, on_success in TORCH_VARIANTS.items():
        (out / name).mkdir(parents=True, exist_ok=True)
        builder.torch_wheel(unlisted_build(builder.torch, on_success), out / name)
    (out / CUDNN_NO_RUNPATH).mkdir(parents=True, exist_ok=True)
    builder.nvidia_wheel(*CUDNN, dest=out / CUDNN_NO_RUNPATH, runpath=False)
