"""What hardware this machine really has, detected rather than configured."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

import psutil


@dataclass(frozen=True)
class Hardware:
    available: tuple[str, ...]
    cores: int
    memory_bytes: int
    unavailable: dict[str, str] = field(default_factory=dict)


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _cuda_reason() -> str | None:
    """None when a CUDA GPU is usable, else why not."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no NVIDIA driver (nvidia-smi not found)"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    if out.returncode != 0 or "GPU" not in out.stdout:
        return "nvidia-smi lists no GPU"
    return None


def detect_hardware() -> Hardware:
    kinds = ["cpu"]
    unavailable: dict[str, str] = {}
    reason = _cuda_reason()
    if reason is None:
        kinds.append("cuda")
    else:
        unavailable["cuda"] = reason
    return Hardware(
        available=tuple(kinds),
        cores=usable_cores(),
        memory_bytes=psutil.virtual_memory().total,
        unavailable=unavailable,
    )
