"""GPU variants on a real GPU: CUDA (fp32, fp16) and TensorRT forms of the demo CNN run, agree with the
original within their tolerance, and profile. Skipped, with the reason, on machines without a GPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.hardware import cuda_unavailable_reason
from infaas.runtimes.registry import build_runtime
from infaas.wire.tensors import Signature, load_onnx, read_signature
from infaas_cli.demo_models import DemoModel
from services.profiler.generators import Candidate, OrtCuda, OrtTensorRT, SourceModel
from services.profiler.profiling import batch_sizes_up_to, measure_session

REASON = cuda_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no usable GPU: {REASON}")]

TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2}


def _source(model: DemoModel) -> tuple[SourceModel, np.ndarray, np.ndarray]:
    data = np.load(model.validation_path)
    signature: Signature = read_signature(load_onnx(model.onnx_path.read_bytes()))
    source = SourceModel(
        name=model.name,
        signature=signature,
        onnx_path=model.onnx_path,
        torchscript_path=None,
        calibration={"x": data["x"][:100]},
    )
    return source, data["x"], data["y"]


@pytest.mark.parametrize("generator", [OrtCuda(), OrtTensorRT()], ids=lambda g: g.name)
def test_gpu_candidates_agree_and_profile(
    generator: OrtCuda, demo_models: list[DemoModel], tmp_path: object
) -> None:
    if generator.unavailable_reason():
        pytest.skip(generator.unavailable_reason() or "")
    cnn = demo_models[2]
    source, x, y = _source(cnn)
    reference = ort.InferenceSession(str(cnn.onnx_path), providers=["CPUExecutionProvider"])
    expected = np.asarray(reference.run(None, {"x": x})[0])
    for i, candidate in enumerate(generator.generate(source)):
        path = tmp_path / f"{i}.onnx"
        path.write_bytes(candidate.data)

        def factory(path: Path = path, c: Candidate = candidate) -> Runtime:
            spec = RuntimeSpec(
                runtime=c.runtime, provider=c.provider, optimization=c.optimization, precision=c.precision
            )
            return build_runtime(path, spec)

        runtime = factory()
        runtime.load()
        out = runtime.run({"x": x})["probabilities"]
        runtime.unload()
        assert np.abs(out - expected).max() <= TOLERANCE[candidate.precision], candidate
        measured = measure_session(
            factory,
            threads=1,
            artifact_bytes=len(candidate.data),
            inputs={"x": x},
            labels=y,
            batch_sizes=batch_sizes_up_to(64),
            seconds_per_point=0.1,
            min_iterations=20,
        )
        assert measured.accuracy == pytest.approx(float((out.argmax(1) == y).mean()), abs=1e-6)
        assert all(p.p50_ms > 0 for p in measured.latencies)
