"""An instance's first run covers the batch sizes its queries will bring: one row and a full batch on
the CPU, every size up to the maximum on a GPU (cuDNN picks its algorithms per shape)."""

from __future__ import annotations

import numpy as np

from infaas.runtimes.engines import Runtime
from infaas.runtimes.first_run import first_run, warm_batch_sizes


class Recording(Runtime):
    def __init__(self) -> None:
        self.rows: list[int] = []

    def load(self) -> None:
        pass

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        (x,) = inputs.values()
        self.rows.append(x.shape[0])
        return {"y": x}

    def unload(self) -> None:
        pass


def test_the_cpu_warms_one_row_and_a_full_batch() -> None:
    assert warm_batch_sizes(64, every_size=False) == [1, 64]
    assert warm_batch_sizes(1, every_size=False) == [1]
    assert warm_batch_sizes(0, every_size=False) == [1]


def test_a_gpu_warms_every_batch_size() -> None:
    assert warm_batch_sizes(5, every_size=True) == [1, 2, 3, 4, 5]
    assert warm_batch_sizes(0, every_size=True) == [1]


def test_first_run_runs_zeros_of_the_signature_at_each_size() -> None:
    runtime = Recording()
    first_run(runtime, "x:float32:8x8", 4, every_size=True)
    assert runtime.rows == [1, 2, 3, 4]
    runtime = Recording()
    first_run(runtime, "x:float32:?x3", 16)
    assert runtime.rows == [1, 16]


def test_a_string_input_is_not_warmed() -> None:
    runtime = Recording()
    first_run(runtime, "text:object:", 8, every_size=True)
    assert runtime.rows == []
