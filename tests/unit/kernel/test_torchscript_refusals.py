"""A TorchScript module refuses an id past its embedding's table with a RuntimeError (the interpreter
re-raises the eager IndexError): the runtime says it as an IndexError, the query's error, not the
worker's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infaas.runtimes.base import RuntimeSpec
from infaas.runtimes.registry import build_runtime, refuses_input
from tests.token_model import VOCAB, counted_token_model, token_rows


def test_an_id_past_the_table_is_the_querys_error(tmp_path: Path) -> None:
    model = counted_token_model(tmp_path)
    spec = RuntimeSpec(
        runtime="torchscript",
        provider="torch-cpu",
        optimization="none",
        input_names=("ids", "mask"),
        output_names=("output_0", "output_1"),
    )
    runtime = build_runtime(model.torchscript, spec)
    runtime.load()
    ids, mask, _ = token_rows()
    good = runtime.run({"ids": ids[:3], "mask": mask[:3]})
    assert good["output_0"].shape == (3, 10)
    for bad_id in (VOCAB + 5, -1000):
        bad = ids[:3].copy()
        bad[2, 7] = bad_id
        with pytest.raises(IndexError) as refused:
            runtime.run({"ids": bad, "mask": mask[:3]})
        assert refuses_input(refused.value)
    np.testing.assert_array_equal(
        runtime.run({"ids": ids[:3], "mask": mask[:3]})["output_0"], good["output_0"]
    )
