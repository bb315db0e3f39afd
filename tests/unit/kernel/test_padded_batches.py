"""A GPU variant runs every batch at one shape, its max batch: ONNX Runtime's CUDA convolutions re-plan
whenever the input shape changes (8-10 ms on an H100), so the runtime pads a short batch with zero rows
and drops their outputs, and the profile gives every batch size the padded size's cost and memory.
The padding itself is checked on the CPU provider (the same `OnnxRuntime.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from infaas.core.config import Settings
from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas.runtimes.providers import padded_batch
from infaas.runtimes.registry import runtime_for
from infaas.schemas.api import VariantReport
from infaas.schemas.variants import BatchLatency
from services.profiler.memory import MemoryMeasurement
from services.profiler.profiling import SessionMeasurement, batch_sizes_up_to
from services.profiler.service import _profiled
from tests.factories import variant_profile


class ShapeSpy:
    """Wraps the runtime's call into its session and records the batch size of every run it is given."""

    def __init__(self, run: Any) -> None:
        self.inner = run
        self.rows: list[int] = []

    def run(self, names: list[str], feeds: dict[str, np.ndarray], options: Any = None) -> Any:
        self.rows.append(next(iter(feeds.values())).shape[0])
        return self.inner(names, feeds, options)


def _two_input_model(path: Path) -> Path:
    """y = a @ W + b (two named inputs, one int64), z = row sums of a: row-wise, like a served model."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "W")
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["a", "W"], ["aw"]),
            helper.make_node("Add", ["aw", "bf"], ["y"]),
            helper.make_node("ReduceSum", ["a", "axes"], ["z"], keepdims=0),
        ],
        "padded",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, 4]),
            helper.make_tensor_value_info("b", TensorProto.INT64, [None, 3]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [None]),
        ],
        initializer=[w, numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _runtime(path: Path, pad_to: int | None) -> tuple[OnnxRuntime, ShapeSpy]:
    runtime = OnnxRuntime(path, threads=1, pad_to=pad_to)
    runtime.load()
    spy = ShapeSpy(runtime._run)
    runtime._run = spy.run
    return runtime, spy


def test_runs_go_to_the_sessions_own_run_and_answer_as_its_wrapper_does(tmp_path: Path) -> None:
    """`OnnxRuntime.run` calls the C++ session without the Python wrapper's per-call checks: the same
    outputs, and a feed missing an input is still refused (by the C++ run), as an error of the run."""
    path = _two_input_model(tmp_path / "m.onnx")
    runtime = OnnxRuntime(path, threads=1)
    runtime.load()
    session = runtime._session
    assert session is not None
    assert runtime._run == session._sess.run
    feeds = {"a": np.ones((2, 4), np.float32), "b": np.ones((2, 3), np.int64)}
    got = runtime.run(feeds)
    for name, want in zip(("y", "z"), session.run(None, feeds), strict=True):
        np.testing.assert_array_equal(got[name], want)
    with pytest.raises(Exception, match="a"):
        runtime.run({"b": feeds["b"]})
    runtime.unload()
    with pytest.raises(RuntimeError, match="before load"):
        runtime.run(feeds)


def test_only_gpu_providers_pad_and_a_gpu_variant_pads_to_its_max_batch(tmp_path: Path) -> None:
    assert padded_batch("CUDAExecutionProvider", 64) == 64
    assert padded_batch("TensorrtExecutionProvider", 16) == 16
    assert padded_batch("CUDAExecutionProvider", 0) == 1
    assert padded_batch("CPUExecutionProvider", 64) is None
    cuda = variant_profile(hardware="cuda", provider="CUDAExecutionProvider", max_batch=16)
    runtime = runtime_for(cuda, tmp_path / "m.onnx")
    assert isinstance(runtime, OnnxRuntime) and runtime.pad_to == 16
    cpu = runtime_for(variant_profile(max_batch=16), tmp_path / "m.onnx")
    assert isinstance(cpu, OnnxRuntime) and cpu.pad_to is None


def test_every_short_batch_runs_at_the_padded_shape_with_its_own_answers(tmp_path: Path) -> None:
    path = _two_input_model(tmp_path / "m.onnx")
    padded, spy = _runtime(path, pad_to=8)
    plain, plain_spy = _runtime(path, pad_to=None)
    rng = np.random.default_rng(3)
    for rows in (1, 3, 8, 2, 7):
        feeds = {
            "a": rng.normal(size=(rows, 4)).astype(np.float32),
            "b": rng.integers(-5, 5, size=(rows, 3)).astype(np.int64),
        }
        got, want = padded.run(feeds), plain.run(feeds)
        assert got.keys() == want.keys() == {"y", "z"}
        for name in ("y", "z"):
            assert got[name].shape[0] == rows
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6)
    assert spy.rows == [8, 8, 8, 8, 8]
    assert plain_spy.rows == [1, 3, 8, 2, 7]


def test_a_batch_larger_than_the_pad_or_inputs_of_unequal_rows_run_as_they_are(tmp_path: Path) -> None:
    runtime, spy = _runtime(_two_input_model(tmp_path / "m.onnx"), pad_to=4)
    out = runtime.run({"a": np.ones((6, 4), np.float32), "b": np.zeros((6, 3), np.int64)})
    assert out["y"].shape == (6, 3) and spy.rows == [6]
    # Rows that do not line up are the model's to refuse, not the padding's to hide.
    with pytest.raises(Exception, match="(?i)dimension|shape|broadcast"):
        runtime.run({"a": np.ones((2, 4), np.float32), "b": np.zeros((3, 3), np.int64)})
    assert spy.rows == [6, 2]


def test_batch_sizes_include_each_variants_max_batch() -> None:
    assert batch_sizes_up_to(64, [3, 48, 64, 100, 0]) == [1, 2, 3, 4, 8, 16, 32, 48, 64]
    assert batch_sizes_up_to(4, []) == [1, 2, 4]


def _report(provider: str, hardware: str, max_batch: int) -> VariantReport:
    return VariantReport(
        id=f"m.{hardware}-b{max_batch}",
        runtime="onnxruntime",
        provider=provider,
        optimization="all",
        precision="fp32",
        hardware=hardware,
        max_batch=max_batch,
        threads=1,
        artifact_digest="0" * 64,
        status="profiling",
    )


MEASURED = SessionMeasurement(
    threads=1,
    load_ms=10.0,
    accuracy=0.99,
    latencies=tuple(
        BatchLatency(batch=b, p50_ms=p50, p99_ms=p50 * 1.5)
        for b, p50 in ((1, 0.17), (2, 0.16), (4, 0.17), (8, 0.15), (16, 0.16), (32, 0.14), (64, 0.13))
    ),
    peak_memory_bytes=1 << 20,
)
MEMORY = MemoryMeasurement(
    peak_bytes=150 << 20, by_batch={1: 130 << 20, 4: 132 << 20, 16: 140 << 20, 64: 150 << 20}, gpu=True
)


@pytest.mark.parametrize("max_batch", [4, 16, 64])
def test_a_gpu_variants_profile_gives_every_batch_its_padded_cost(max_batch: int) -> None:
    report = _profiled(_report("CUDAExecutionProvider", "cuda", max_batch), MEASURED, Settings(), MEMORY)
    top = next(p for p in MEASURED.latencies if p.batch == max_batch)
    assert report.latency is not None and [p.batch for p in report.latency][-1] == max_batch
    assert {(p.p50_ms, p.p99_ms) for p in report.latency} == {(top.p50_ms, top.p99_ms)}
    assert {p.memory_bytes for p in report.latency} == {MEMORY.by_batch[max_batch]}
    assert report.peak_memory_bytes == MEMORY.by_batch[max_batch]
    assert report.saturation_qps == pytest.approx(round(max_batch * 1000 / top.p50_ms, 1))


def test_a_cpu_variants_profile_keeps_each_batch_sizes_own_cost() -> None:
    memory = MemoryMeasurement(peak_bytes=8 << 20, by_batch={1: 6 << 20, 16: 8 << 20}, gpu=False)
    report = _profiled(_report("CPUExecutionProvider", "cpu", 16), MEASURED, Settings(), memory)
    assert report.latency is not None
    assert [p.p50_ms for p in report.latency] == [p.p50_ms for p in MEASURED.latencies if p.batch <= 16]
    assert report.peak_memory_bytes == 8 << 20
