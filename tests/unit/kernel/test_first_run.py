"""An instance's first run covers one row and a full batch (a GPU variant pads both to its one shape)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.first_run import first_run, warm_batch_sizes
from infaas.runtimes.providers import CPU


class Recording(Runtime):
    """Records the rows of each run and answers with its input."""

    name = "recording"
    providers = (CPU,)

    def __init__(self) -> None:
        self.rows: list[int] = []

    @classmethod
    def build(cls, path: Path, spec: RuntimeSpec) -> Recording:  # noqa: ARG003 (it runs no artifact)
        return cls()

    @classmethod
    def write_warm_model(cls, path: Path) -> None:
        path.write_bytes(b"")

    def load(self) -> None:
        pass

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        (x,) = inputs.values()
        self.rows.append(x.shape[0])
        return {"y": x}

    def unload(self) -> None:
        pass


def test_one_row_and_a_full_batch_are_warmed() -> None:
    assert warm_batch_sizes(64) == [1, 64]
    assert warm_batch_sizes(1) == [1]
    assert warm_batch_sizes(0) == [1]


def test_first_run_runs_zeros_of_the_signature_at_each_size() -> None:
    runtime = Recording()
    first_run(runtime, "x:float32:?x3", 16)
    assert runtime.rows == [1, 16]


def test_a_string_input_is_not_warmed() -> None:
    runtime = Recording()
    first_run(runtime, "text:object:", 8)
    assert runtime.rows == []
