"""A pipeline's graph checked against its models' signatures before anything is stored: one root,
no cycle, every input fed exactly once by an output that fits it, branches only on a classifier's
predicted classes. Pure: a 422 (`InvalidInput`) names what is wrong."""

from __future__ import annotations

from typing import Any

from infaas.core.errors import InvalidInput
from infaas.schemas.pipelines import PipelineCreate, PipelineEdge


def check_graph(spec: PipelineCreate, signatures: dict[str, dict[str, Any]]) -> list[str]:
    """The stages root first, or a 422 naming what is wrong: a duplicate stage, an edge to an unknown
    stage, a cycle, more than one root, a stage fed by two edges, an input left unfed, or a source output
    whose dtype or shape does not fit the input it feeds. `signatures`: model name → its signature JSON
    (every stage's model is in it: unknown models were refused before)."""
    names = [s.name for s in spec.stages]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInput(f"stage names must be unique: {dupes} appear twice", stages=dupes)
    model_of = {s.name: s.model for s in spec.stages}
    for edge in spec.edges:
        for end in (edge.source, edge.target):
            if end not in model_of:
                raise InvalidInput(f"edge {edge.source} -> {edge.target} names no stage {end!r}", stage=end)
    cycle = _cycle(names, spec.edges)
    if cycle:
        raise InvalidInput(f"the stages form a cycle: {' -> '.join(cycle)}", cycle=cycle)
    parents: dict[str, list[str]] = {n: [] for n in names}
    for edge in spec.edges:
        parents[edge.target].append(edge.source)
    roots = [n for n in names if not parents[n]]
    if len(roots) != 1:
        raise InvalidInput(
            f"a pipeline has exactly one root stage (fed by the query); found {roots}", roots=roots
        )
    fed_twice = [n for n in names if len(parents[n]) > 1]
    if fed_twice:
        raise InvalidInput(f"stage {fed_twice[0]!r} is fed by more than one edge", stage=fed_twice[0])
    for edge in spec.edges:
        _check_edge(edge, signatures[model_of[edge.source]], signatures[model_of[edge.target]])
    return _order(roots[0], spec.edges)


def _cycle(names: list[str], edges: list[PipelineEdge]) -> list[str]:
    """One cycle as the stages along it (first stage repeated at the end), or [] when there is none."""
    children: dict[str, list[str]] = {n: [] for n in names}
    for edge in edges:
        children[edge.source].append(edge.target)
    color = dict.fromkeys(names, 0)  # 0 unseen, 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        color[node] = 1
        path.append(node)
        for child in children[node]:
            if color[child] == 1:
                return [*path[path.index(child) :], child]
            if color[child] == 0 and (found := visit(child)):
                return found
        path.pop()
        color[node] = 2
        return []

    for name in names:
        if color[name] == 0 and (found := visit(name)):
            return found
    return []


def _order(root: str, edges: list[PipelineEdge]) -> list[str]:
    """Breadth first from the root: every stage after the one that feeds it."""
    order, frontier = [root], [root]
    while frontier:
        frontier = [e.target for s in frontier for e in edges if e.source == s]
        order.extend(frontier)
    return order


def _check_edge(edge: PipelineEdge, source: dict[str, Any], target: dict[str, Any]) -> None:
    outputs = {o["name"]: o for o in source["outputs"]}
    inputs = {i["name"]: i for i in target["inputs"]}
    where = f"edge {edge.source} -> {edge.target}"
    unfed = sorted(set(inputs) - set(edge.inputs))
    unknown = sorted(set(edge.inputs) - set(inputs))
    if unfed or unknown:
        raise InvalidInput(
            f"{where}: inputs must name every input of {edge.target!r} exactly",
            edge=[edge.source, edge.target],
            expected=sorted(inputs),
            missing=unfed,
            unexpected=unknown,
        )
    for name, output in edge.inputs.items():
        if output not in outputs:
            raise InvalidInput(
                f"{where}: {edge.source!r} has no output {output!r}",
                edge=[edge.source, edge.target],
                outputs=sorted(outputs),
            )
        out, inp = outputs[output], inputs[name]
        if out["dtype"] != inp["dtype"]:
            raise InvalidInput(
                f"{where}: output {output!r} holds {out['dtype']} but input {name!r} takes {inp['dtype']}",
                edge=[edge.source, edge.target],
            )
        if not _shapes_fit(out["shape"], inp["shape"]):
            raise InvalidInput(
                f"{where}: output {output!r} has shape {out['shape']}, input {name!r} takes {inp['shape']}",
                edge=[edge.source, edge.target],
            )
    if edge.when is not None:
        cond = outputs.get(edge.when.output)
        if cond is None:
            raise InvalidInput(f"{where}: the branch condition names no output of {edge.source!r}")
        width = cond["shape"][-1] if len(cond["shape"]) >= 2 else None
        if isinstance(width, int) and any(not 0 <= c < width for c in edge.when.classes):
            raise InvalidInput(f"{where}: branch classes must lie in [0, {width}) of {edge.when.output!r}")


def _shapes_fit(out: list[int | None], inp: list[int | None]) -> bool:
    """Same rank and every known dimension equal (None, the batch or a dynamic axis, fits anything)."""
    return len(out) == len(inp) and all(
        a is None or b is None or a == b for a, b in zip(out, inp, strict=True)
    )


def check_branches(spec: PipelineCreate, tasks: dict[str, str]) -> None:
    """A branch (`when`) takes the rows whose predicted class (the argmax of the scores) it lists: only a
    classifier's output has classes; a 422 for a branch on another task's stage (`tasks`: stage → task)."""
    for edge in spec.edges:
        task = tasks[edge.source]
        if edge.when is not None and task != "classification":
            raise InvalidInput(
                f"edge {edge.source} -> {edge.target}: a branch on predicted classes needs a "
                f"classification stage; {edge.source!r} is a {task} model",
                edge=[edge.source, edge.target],
            )
