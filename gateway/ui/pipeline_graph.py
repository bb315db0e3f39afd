"""A pipeline drawn as SVG on the server: a box per stage (its model and, once planned, its variant,
batch × replicas, scale factor s_m and $/s), an arrow per edge (labelled with its branch condition).
Stages are laid out in columns by depth, root on the left. Pure; every text is escaped."""

from __future__ import annotations

from markupsafe import Markup, escape

from gateway.ui.svg import PALETTE
from infaas.schemas.pipelines import Pipeline

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 210, 84, 70, 24, 12


def pipeline_svg(pipeline: Pipeline) -> Markup:
    parent = {e.target: e for e in pipeline.edges}
    depth: dict[str, int] = {}
    for name in pipeline.order:  # parents come first in `order`
        edge = parent.get(name)
        depth[name] = 0 if edge is None else depth[edge.source] + 1
    columns: dict[int, list[str]] = {}
    for name in pipeline.order:
        columns.setdefault(depth[name], []).append(name)
    at = {
        name: (PAD + d * (BOX_W + GAP_X), PAD + i * (BOX_H + GAP_Y))
        for d, names in columns.items()
        for i, name in enumerate(names)
    }
    width = PAD * 2 + len(columns) * BOX_W + (len(columns) - 1) * GAP_X
    height = PAD * 2 + max(len(n) for n in columns.values()) * (BOX_H + GAP_Y) - GAP_Y
    planned = {s.stage: s for s in pipeline.plan.stages} if pipeline.plan else {}
    model_of = {s.name: s.model for s in pipeline.stages}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="pipeline {escape(pipeline.name)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for edge in pipeline.edges:
        (x0, y0), (x1, y1) = at[edge.source], at[edge.target]
        ax, ay, bx, by = x0 + BOX_W, y0 + BOX_H / 2, x1, y1 + BOX_H / 2
        parts.append(
            f'<line class="edge" x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#555" '
            f'marker-end="url(#arrow)"><title>{escape(edge.source)} → {escape(edge.target)}: '
            f"{escape(', '.join(f'{i} ← {o}' for i, o in edge.inputs.items()))}</title></line>"
        )
        if edge.when is not None:
            label = f"{edge.when.output} ∈ {edge.when.classes}"
            parts.append(
                f'<text class="condition" x="{(ax + bx) / 2}" y="{(ay + by) / 2 - 6}" font-size="10" '
                f'text-anchor="middle" fill="#555">{escape(label)}</text>'
            )
    for name, (x, y) in at.items():
        stage = planned.get(name)
        colour = PALETTE[0] if stage is not None else "#888"
        lines = [f"{name}", f"model {model_of[name]}"]
        if stage is not None:
            lines += [
                f"{stage.variant.removeprefix(model_of[name] + '.')}",
                f"b{stage.batch} × {stage.replicas}   s={stage.scale:.2f}   ${stage.cost_per_s:.3g}/s",
            ]
        else:
            lines.append("not planned")
        parts.append(
            f'<g class="stage"><rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="white" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        for i, text in enumerate(lines):
            weight = ' font-weight="bold"' if i == 0 else ""
            parts.append(
                f'<text x="{x + 8}" y="{y + 18 + i * 17}" font-size="{12 if i == 0 else 10.5}"{weight}>'
                f"{escape(text)}</text>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))
