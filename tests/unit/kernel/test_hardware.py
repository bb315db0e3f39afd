"""Hardware detection and what an executor serves, decided from injected readings: ONNX Runtime's
provider lists, NVML's (a stand-in `pynvml` module) and `nvidia-smi`'s output; nothing here needs a GPU."""

from __future__ import annotations

import ctypes
import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest

from infaas.runtimes.hardware import (
    GpuReading,
    GpuUse,
    Hardware,
    cuda_devices,
    gpu_memory_above,
    gpu_use,
    ort_providers,
    parse_smi,
    read_gpus,
    served_hardware,
    tensorrt_unavailable_reason,
    worker_id,
)
from infaas.runtimes.providers import CUDA, TENSORRT
from services.planner.providers.kubernetes import pod_name

GIB = 1 << 30
H100 = GpuReading(index=0, name="NVIDIA H100 80GB HBM3", memory_bytes=80 * GIB)
L4 = GpuReading(index=1, name="NVIDIA L4", memory_bytes=24 * GIB)
CPU_ONLY = ["CPUExecutionProvider"]
GPU_BUILD = ["TensorrtExecutionProvider", CUDA.name, "CPUExecutionProvider"]


def machine(*gpus: GpuReading) -> Hardware:
    if gpus:
        return Hardware(available=("cpu", "cuda"), cores=16, memory_bytes=128 * GIB, gpus=gpus)
    return Hardware(
        available=("cpu",), cores=2, memory_bytes=8 * GIB, unavailable={"cuda": "NVML lists no GPU"}
    )


def test_cuda_needs_both_a_gpu_and_the_provider() -> None:
    assert cuda_devices(GPU_BUILD, [L4, H100]) == (H100, L4)  # in index order
    assert cuda_devices(GPU_BUILD, []) == "NVML lists no GPU"
    assert "no CUDA execution provider" in str(cuda_devices(CPU_ONLY, [H100]))
    why = "NVML could not start: Driver Not Loaded"
    assert cuda_devices(GPU_BUILD, why) == why


def test_nvidia_smi_output_is_parsed_in_mib() -> None:
    text = "0, NVIDIA H100 80GB HBM3, 81559\n1, NVIDIA L4, 23034\nNo devices were found\n"
    assert parse_smi(text) == [
        GpuReading(0, "NVIDIA H100 80GB HBM3", 81559 << 20),
        GpuReading(1, "NVIDIA L4", 23034 << 20),
    ]
    assert parse_smi("") == []


@dataclass
class _Memory:
    total: int
    used: int = 0


class FakeNvml(types.ModuleType):
    """The calls of `nvidia-ml-py` that detection makes, over a list of readings (or a failing init)."""

    class NVMLError(Exception):
        pass

    def __init__(self, gpus: list[GpuReading], *, fail_init: bool = False) -> None:
        super().__init__("pynvml")
        self.gpus = gpus
        self.fail_init = fail_init
        self.shutdowns = 0

    def nvmlInit(self) -> None:  # noqa: N802 (NVML's own names)
        if self.fail_init:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> GpuReading:  # noqa: N802
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: GpuReading) -> Any:  # noqa: N802
        return handle.name.encode()  # older releases answer bytes

    def nvmlDeviceGetMemoryInfo(self, handle: GpuReading) -> _Memory:  # noqa: N802
        return _Memory(total=handle.memory_bytes)


def test_gpus_are_read_from_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml([H100, L4])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert read_gpus() == [H100, L4]
    assert nvml.shutdowns == 1
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], fail_init=True))
    assert read_gpus() == "NVML could not start: Driver Not Loaded (no NVIDIA driver?)"


def test_auto_serves_the_gpu_when_there_is_one() -> None:
    cpu = served_hardware(machine(), requested="auto", device=0)
    assert (cpu.kind, cpu.device, cpu.memory_bytes) == ("cpu", None, 8 * GIB)
    gpu = served_hardware(machine(H100, L4), requested="auto", device=1)
    assert (gpu.kind, gpu.device, gpu.memory_bytes) == ("cuda", 1, 24 * GIB)  # that GPU's memory
    # Said explicitly, a GPU machine's CPU executor offers the machine's memory, or what it is given.
    assert served_hardware(machine(H100), requested="cpu", device=0).memory_bytes == 128 * GIB
    assert served_hardware(machine(H100), requested="cuda", device=0, memory_bytes=GIB).memory_bytes == GIB


def test_asking_for_a_gpu_that_is_not_there_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="NVML lists no GPU"):
        served_hardware(machine(), requested="cuda", device=0)
    with pytest.raises(ValueError, match=r"no GPU 3 here \(GPUs \[0, 1\]\)"):
        served_hardware(machine(H100, L4), requested="cuda", device=3)
    with pytest.raises(ValueError, match="cpu or cuda"):
        served_hardware(machine(H100), requested="neuron", device=0)


def test_a_worker_id_says_its_kind_and_names_its_pod() -> None:
    wid = worker_id("cuda", "infaas-executor-cuda-7d9f-x2k", 8083)
    assert wid == "cuda-infaas-executor-cuda-7d9f-x2k-8083"
    assert pod_name(wid) == "infaas-executor-cuda-7d9f-x2k"


def test_gpu_memory_above_a_baseline_from_nvml_or_the_device() -> None:
    listed = [(101, 900 << 20), (4242, 1 << 30)]
    base = gpu_use(4242, listed, device_used=30 << 30)
    assert base == GpuUse(process=1 << 30, device=30 << 30)
    # The process's own figure: its CUDA context (already there at the baseline) is not counted again,
    # nor what another process allocated meanwhile.
    now = gpu_use(4242, [(101, 5 << 30), (4242, 3 << 30)], device_used=36 << 30)
    assert gpu_memory_above(base, now) == 2 << 30
    # NVML cannot see the pid (another pid namespace): what the device gained.
    hidden = gpu_use(7, listed, device_used=30 << 30)
    assert hidden.process is None
    assert gpu_memory_above(hidden, gpu_use(7, listed, device_used=31 << 30)) == 1 << 30
    assert gpu_memory_above(hidden, gpu_use(7, listed, device_used=29 << 30)) == 0


def test_tensorrt_is_available_only_where_its_library_loads() -> None:
    # GPU builds of ONNX Runtime list the TensorRT provider whether TensorRT is installed or not: the
    # reason must follow whether libnvinfer really loads on this machine.
    assert TENSORRT.library is not None
    try:
        ctypes.CDLL(TENSORRT.library)
        loads = True
    except OSError:
        loads = False
    reason = tensorrt_unavailable_reason()
    if "TensorrtExecutionProvider" not in ort_providers():
        assert reason is not None and "no TensorRT execution provider" in reason
    elif loads:
        assert reason is None
    else:
        assert reason is not None and TENSORRT.library in reason
