"""What hardware this machine really has, detected rather than configured.

Each kind says why it is unavailable when it is, so the API can show it instead of failing later.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache

import psutil

KINDS: tuple[str, ...] = ("cpu", "cuda", "neuron")


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


def cuda_unavailable_reason() -> str | None:
    """None when a CUDA GPU is usable from ONNX Runtime, else why not."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no NVIDIA driver on this machine (nvidia-smi not found)"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    if out.returncode != 0 or "GPU" not in out.stdout:
        return "nvidia-smi lists no GPU"
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return "this ONNX Runtime build has no CUDA execution provider"
    return None


def neuron_unavailable_reason() -> str | None:
    """AWS Inferentia: the Neuron SDK must be importable and a device present."""
    if importlib.util.find_spec("torch_neuronx") is None:
        return "the AWS Neuron SDK (torch_neuronx) is not installed"
    if not os.path.exists("/dev/neuron0"):
        return "no Inferentia device (/dev/neuron0)"
    return None


@lru_cache(maxsize=1)
def detect_hardware() -> Hardware:
    """Detected once per process (hardware does not change under a running process)."""
    available = ["cpu"]
    unavailable: dict[str, str] = {}
    for kind, check in (("cuda", cuda_unavailable_reason), ("neuron", neuron_unavailable_reason)):
        reason = check()
        if reason is None:
            available.append(kind)
        else:
            unavailable[kind] = reason
    return Hardware(
        available=tuple(available),
        cores=usable_cores(),
        memory_bytes=psutil.virtual_memory().total,
        unavailable=unavailable,
    )
