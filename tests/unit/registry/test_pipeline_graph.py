"""The pipeline graph check on hand-made signatures: order, and each refusal naming its problem."""

from __future__ import annotations

from typing import Any

import pytest

from infaas.core.errors import InvalidInput
from infaas.schemas.pipelines import PipelineCreate
from services.registry.pipelines.graph import check_graph


def sig(
    inputs: dict[str, tuple[str, list[int | None]]], outputs: dict[str, tuple[str, list[int | None]]]
) -> Any:
    def specs(d: dict[str, tuple[str, list[int | None]]]) -> list[dict[str, Any]]:
        return [{"name": n, "dtype": t, "shape": s} for n, (t, s) in d.items()]

    return {"inputs": specs(inputs), "outputs": specs(outputs)}


SIGS = {
    "detect": sig(
        {"image": ("float32", [None, 64])}, {"boxes": ("float32", [None, 8]), "kind": ("float32", [None, 3])}
    ),
    "classify": sig({"crop": ("float32", [None, 8])}, {"label": ("float32", [None, 5])}),
    "count": sig({"kinds": ("float32", [None, 3])}, {"n": ("float32", [None, 1])}),
    "ints": sig({"crop": ("int64", [None, 8])}, {"label": ("float32", [None, 5])}),
}


def pipeline(stages: list[tuple[str, str]], edges: list[tuple[str, str, dict[str, str]]]) -> PipelineCreate:
    return PipelineCreate(
        name="p",
        app="a",
        slo_ms=50,
        stages=[{"name": n, "model": m} for n, m in stages],  # type: ignore[misc]
        edges=[{"source": s, "target": t, "inputs": i} for s, t, i in edges],  # type: ignore[misc]
    )


def test_a_tree_runs_root_first() -> None:
    spec = pipeline(
        [("c", "count"), ("k", "classify"), ("d", "detect")],
        [("d", "k", {"crop": "boxes"}), ("d", "c", {"kinds": "kind"})],
    )
    assert check_graph(spec, SIGS) == ["d", "k", "c"]


@pytest.mark.parametrize(
    ("stages", "edges", "message"),
    [
        (
            [("d", "detect"), ("k", "ints")],
            [("d", "k", {"crop": "boxes"})],
            "holds float32 but input 'crop' takes int64",
        ),
        (
            [("d", "detect"), ("k", "classify")],
            [("d", "k", {"crop": "kind"})],
            "shape [None, 3], input 'crop'",
        ),
        ([("d", "detect"), ("d", "classify")], [], "unique"),
        ([("d", "detect"), ("k", "classify")], [("d", "x", {"crop": "boxes"})], "names no stage 'x'"),
        (
            [("d", "detect"), ("k", "classify"), ("k2", "classify")],
            [("d", "k", {"crop": "boxes"}), ("k", "k2", {"crop": "label"}), ("k2", "k", {"crop": "label"})],
            "cycle: k -> k2 -> k",
        ),
    ],
)
def test_refusals_name_the_problem(
    stages: list[tuple[str, str]], edges: list[tuple[str, str, dict[str, str]]], message: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_graph(pipeline(stages, edges), SIGS)
    assert message in caught.value.message
