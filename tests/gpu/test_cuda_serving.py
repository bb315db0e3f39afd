"""The accelerator path on a real GPU: detection reads each GPU with its memory, the memory probe reads
NVML, and the whole suite started by the launcher runs a CUDA executor per GPU that registers as `cuda`
with its GPU's memory, refuses CPU variants, and serves the wine model's CUDA variants (and TensorRT's
where that provider loads) with the CPU's outputs within a stated tolerance. Skipped, with the reason,
where there is no usable GPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from infaas.clients.executor import OfflineExecutorClient
from infaas.core.credentials import internal_headers
from infaas.runtimes.base import RuntimeSpec
from infaas.runtimes.hardware import (
    cuda_unavailable_reason,
    detect_hardware,
    served_hardware,
    tensorrt_unavailable_reason,
)
from infaas_cli.demo_models import DemoModel
from services.profiler.memory import ProbeSpec, measure_memory
from tests.e2e.conftest import _settings, own_suite
from tests.e2e.wine import register_wine

REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no usable GPU: {REASON}")]

# Logits of the wine model against ONNX Runtime on the CPU: fp32 kernels differ in summation order only;
# fp16 keeps ~3 significant digits of logits of magnitude ~10.
TOLERANCE = {"fp32": 1e-3, "fp16": 5e-2}


def test_each_gpu_is_detected_with_its_memory() -> None:
    hardware = detect_hardware()
    assert "cuda" in hardware.available and hardware.gpus
    assert all(g.memory_bytes > 1 << 30 for g in hardware.gpus)
    served = served_hardware(hardware, requested="auto", device=hardware.gpus[0].index)
    assert (served.kind, served.memory_bytes) == ("cuda", hardware.gpus[0].memory_bytes)


def test_the_memory_probe_reads_gpu_memory_from_nvml(demo_models: list[DemoModel]) -> None:
    cnn = demo_models[2]
    x = np.load(cnn.validation_path)["x"]
    runtime = RuntimeSpec(runtime="onnxruntime", provider="CUDAExecutionProvider", optimization="all")
    spec = ProbeSpec(path=str(cnn.onnx_path), runtime=runtime)
    memory = measure_memory(spec, {"x": x}, [1, 16, 64])
    assert memory.gpu
    assert memory.by_batch[64] >= memory.by_batch[1] > 0
    assert memory.peak_bytes == max(memory.by_batch.values())


def test_the_suite_serves_cuda_variants_on_its_gpu_executor(tmp_path: Path) -> None:
    gpu = detect_hardware().gpus[0]
    settings = _settings(tmp_path / "var", executors=1, gpu_executors=1)
    with own_suite(settings) as running:
        cpu_url = f"http://127.0.0.1:{running.suite.port('executor')}"
        cuda_url = f"http://127.0.0.1:{running.suite.port('executor-2')}"
        created = running.admin.post("/v1/apps", json={"name": "cellar", "cache": False})
        assert created.status_code == 201, created.text
        with running.client(created.json()["api_key"]) as client:
            assert register_wine(client, tmp_path, app="cellar").status_code == 202
        assert running.wait_ready("wine", timeout_s=600)["status"] == "ready"

        workers = {w["url"]: w for w in running.admin.get("/v1/workers").json()}
        assert workers[cuda_url]["hardware"] == "cuda" and workers[cuda_url]["id"].startswith("cuda-")
        assert workers[cuda_url]["memory_bytes"] == gpu.memory_bytes
        assert workers[cpu_url]["hardware"] == "cpu"

        variants = running.admin.get("/v1/models/wine/variants", params={"hardware": "cuda"}).json()
        ready = [v for v in variants if v["status"] == "ready"]
        assert any(v["provider"] == "CUDAExecutionProvider" for v in ready), variants
        for v in ready:  # GPU memory from NVML per batch size, and the load time
            assert all(p["memory_bytes"] and p["memory_bytes"] > 0 for p in v["latency"]), v
            assert v["load_ms"] > 0

        data = np.load(tmp_path / "wine.npz")
        rows = {"chem": data["chem"][:32], "color": data["color"][:32]}
        reference = ort.InferenceSession(str(tmp_path / "wine.onnx"), providers=["CPUExecutionProvider"])
        expected = reference.run(None, rows)[0]
        headers = internal_headers(settings.internal_key)
        offline = OfflineExecutorClient(internal_key=settings.internal_key)
        served = set()
        try:
            refused = running.admin.post(
                f"{cpu_url}/v1/instances", json={"variant": ready[0]["id"]}, headers=headers
            )
            assert refused.status_code == 409, refused.text
            for v in ready:
                loaded = running.admin.post(
                    f"{cuda_url}/v1/instances", json={"variant": v["id"]}, headers=headers
                )
                assert loaded.status_code == 200, (v["id"], loaded.text)
                outputs = offline.run(cuda_url, v["id"], rows)
                np.testing.assert_allclose(outputs["logits"], expected, atol=TOLERANCE[v["precision"]])
                served.add(v["provider"])
        finally:
            offline.close()
        assert "CUDAExecutionProvider" in served
        if tensorrt_unavailable_reason() is None:
            assert "TensorrtExecutionProvider" in served
