"""What hardware this machine really has, detected rather than configured.

CUDA is usable when ONNX Runtime has its CUDA execution provider and NVML (the `nvidia-ml-py` package of
the `gpu` extra, else `nvidia-smi`) lists a GPU; each GPU is read with its memory, which executors
advertise. Each kind says why it is unavailable when it is, so the API can show it instead of failing
later. Detection is split into readers (ONNX Runtime, NVML, the Neuron SDK) and pure functions of what
they read, so the decisions are tested on any machine.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import psutil

from infaas.runtimes.providers import CUDA, TENSORRT, hardware_kinds

KINDS: tuple[str, ...] = hardware_kinds()


@dataclass(frozen=True)
class GpuReading:
    """One GPU as NVML sees it (`index` is NVML's, which is CUDA's order on a machine that does not
    reorder devices through `CUDA_DEVICE_ORDER`)."""

    index: int
    name: str
    memory_bytes: int


@dataclass(frozen=True)
class Hardware:
    available: tuple[str, ...]
    cores: int
    memory_bytes: int
    unavailable: dict[str, str] = field(default_factory=dict)
    gpus: tuple[GpuReading, ...] = ()
    """The usable CUDA GPUs; empty when `cuda` is unavailable."""


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cuda_devices(
    providers: Sequence[str], readings: Sequence[GpuReading] | str
) -> tuple[GpuReading, ...] | str:
    """The GPUs CUDA variants can run on, or why none: `readings` is what NVML listed (or why it could
    not be read), `providers` what this ONNX Runtime build offers."""
    if isinstance(readings, str):
        return readings
    if not readings:
        return "NVML lists no GPU"
    if CUDA.name not in providers:
        return "this ONNX Runtime build has no CUDA execution provider (install the `gpu` extra)"
    return tuple(sorted(readings, key=lambda g: g.index))


def read_gpus() -> list[GpuReading] | str:
    """The GPUs and their memory from NVML (`nvidia-ml-py`, imported only here: CPU machines need not
    have it), else from `nvidia-smi`; a string says why neither could tell."""
    try:
        import pynvml
    except ImportError:
        return _read_gpus_smi()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML could not start: {exc} (no NVIDIA driver?)"
    try:
        out = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            out.append(
                GpuReading(
                    index=index,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    memory_bytes=int(memory.total),
                )
            )
        return out
    except pynvml.NVMLError as exc:
        return f"NVML failed: {exc}"
    finally:
        pynvml.nvmlShutdown()


def parse_smi(text: str) -> list[GpuReading]:
    """`nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits` (MiB)."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit():
            out.append(GpuReading(index=int(parts[0]), name=parts[1], memory_bytes=int(parts[2]) << 20))
    return out


def _read_gpus_smi() -> list[GpuReading] | str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "no NVIDIA driver on this machine (nvidia-smi not found)"
    query = [smi, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(query, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    if out.returncode != 0:
        return f"nvidia-smi failed: {out.stderr.strip()[:200]}"
    return parse_smi(out.stdout)


def ort_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def cuda_unavailable_reason() -> str | None:
    """None when a CUDA GPU is usable from ONNX Runtime, else why not."""
    found = cuda_devices(ort_providers(), read_gpus())
    return found if isinstance(found, str) else None


def tensorrt_unavailable_reason() -> str | None:
    """None when ONNX Runtime's TensorRT provider can run here. GPU builds of ONNX Runtime always list
    the provider, whether TensorRT itself is installed or not, so its library is loaded to tell."""
    if TENSORRT.name not in ort_providers():
        return "this ONNX Runtime build has no TensorRT execution provider"
    if TENSORRT.library is not None:
        try:
            ctypes.CDLL(TENSORRT.library)
        except OSError:
            return f"TensorRT is not installed ({TENSORRT.library} not found)"
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
    gpus = cuda_devices(ort_providers(), read_gpus())
    if isinstance(gpus, str):
        unavailable["cuda"] = gpus
        gpus = ()
    else:
        available.append("cuda")
    neuron = neuron_unavailable_reason()
    if neuron is None:
        available.append("neuron")
    else:
        unavailable["neuron"] = neuron
    return Hardware(
        available=tuple(available),
        cores=usable_cores(),
        memory_bytes=psutil.virtual_memory().total,
        unavailable=unavailable,
        gpus=gpus,
    )


@dataclass(frozen=True)
class Served:
    """What one executor serves: a hardware kind, its GPU (for `cuda`) and the memory it offers."""

    kind: str
    device: int | None
    memory_bytes: int


def served_hardware(hardware: Hardware, *, requested: str, device: int, memory_bytes: int = 0) -> Served:
    """The kind an executor serves (`auto`: its GPU `device` when CUDA is usable, else the CPU) and the
    memory it offers instances: `memory_bytes` when set, else the GPU's or the machine's. Asking for a
    kind or GPU this machine does not have is refused with the reason, at start rather than at a load."""
    kind = requested
    if requested == "auto":
        kind = "cuda" if any(g.index == device for g in hardware.gpus) else "cpu"
    if kind == "cpu":
        return Served(kind="cpu", device=None, memory_bytes=memory_bytes or hardware.memory_bytes)
    if kind != "cuda":
        raise ValueError(f"executors serve cpu or cuda, not {kind!r}")
    if "cuda" not in hardware.available:
        raise ValueError(f"a cuda executor needs a usable GPU: {hardware.unavailable.get('cuda', 'none')}")
    gpu = next((g for g in hardware.gpus if g.index == device), None)
    if gpu is None:
        raise ValueError(f"no GPU {device} here (GPUs {[g.index for g in hardware.gpus]})")
    return Served(kind="cuda", device=device, memory_bytes=memory_bytes or gpu.memory_bytes)


def worker_id(kind: str, host: str, port: int) -> str:
    """`<kind>-<host>-<port>`: the kind first, so a worker's id says what it serves (the Kubernetes
    provider takes the pod name back out of it)."""
    return f"{kind}-{host}-{port}"


@dataclass(frozen=True)
class GpuUse:
    """One reading: what NVML lists for a process (None when it does not see the pid, as in a container
    with its own pid namespace, or cannot tell) and what the whole device has in use."""

    process: int | None
    device: int


def gpu_use(pid: int, processes: Sequence[tuple[int, int | None]], device_used: int) -> GpuUse:
    listed = next((used for p, used in processes if p == pid), None)
    return GpuUse(process=listed, device=device_used)


def gpu_memory_above(baseline: GpuUse, now: GpuUse) -> int:
    """GPU memory gained since `baseline`: the process's own figure when NVML gave it both times (so the
    CUDA context it already had is not counted again), else the device's, which other processes on the
    GPU can disturb."""
    if baseline.process is not None and now.process is not None:
        return max(0, now.process - baseline.process)
    return max(0, now.device - baseline.device)


class GpuMemoryReader:
    """NVML readings of one GPU's memory, for the profiler's measurements (needs `nvidia-ml-py`)."""

    def __init__(self, device: int) -> None:
        import pynvml

        self._nvml = pynvml
        pynvml.nvmlInit()
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(device)

    def device_used(self) -> int:
        return int(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used)

    def processes(self) -> list[tuple[int, int | None]]:
        listed = self._nvml.nvmlDeviceGetComputeRunningProcesses(self._handle)
        return [(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory)) for p in listed]

    def close(self) -> None:
        self._nvml.nvmlShutdown()
