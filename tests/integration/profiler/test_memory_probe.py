"""A variant's memory measured in a fresh process (services/profiler/memory.py), on real models: the
peak grows with the batch where activations do, a large model's weights show, and a probe that cannot
load its model fails with the child's reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infaas.runtimes.base import RuntimeSpec
from infaas_cli.demo_models import DemoModel
from services.profiler.memory import ProbeSpec, measure_memory

BATCHES = [1, 4, 16, 64]


def spec(path: Path) -> ProbeSpec:
    runtime = RuntimeSpec(runtime="onnxruntime", provider="CPUExecutionProvider", optimization="all")
    return ProbeSpec(path=str(path), runtime=runtime)


def test_memory_grows_with_the_batch_and_the_weights(demo_models: list[DemoModel]) -> None:
    small, large, cnn = demo_models
    x = np.load(cnn.validation_path)["x"]
    conv = measure_memory(spec(cnn.onnx_path), {"x": x}, BATCHES)
    assert not conv.gpu and sorted(conv.by_batch) == BATCHES
    steps = [conv.by_batch[b] for b in BATCHES]
    assert steps == sorted(steps), "a high-water mark never goes down"
    # The CNN's activations at 64 rows (16 channels of 8x8 per row and more) take well over what 1 row does.
    assert conv.by_batch[64] > conv.by_batch[1] + (1 << 20)
    assert conv.peak_bytes == conv.by_batch[64]
    mlp_small = measure_memory(spec(small.onnx_path), {"x": x}, BATCHES)
    mlp_large = measure_memory(spec(large.onnx_path), {"x": x}, BATCHES)
    # The large MLP's weights are in memory once loaded; the small one's are a few kB.
    assert mlp_large.by_batch[1] >= large.onnx_path.stat().st_size * 0.9
    assert mlp_large.peak_bytes > mlp_small.peak_bytes


def test_a_probe_that_cannot_load_says_why(tmp_path: Path, demo_models: list[DemoModel]) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx graph")
    x = np.load(demo_models[0].validation_path)["x"]
    with pytest.raises(RuntimeError, match="memory probe exited with 1"):
        measure_memory(spec(broken), {"x": x}, BATCHES)
