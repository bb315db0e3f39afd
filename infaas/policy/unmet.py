"""Why no variant meets a query, with the real numbers: the 422 that selection (`selection.py`) answers
with names which requirement no variant meets on its own, and the fastest and the most accurate variants
with their latency and accuracy, so the caller knows what to ask for instead."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from infaas.core.errors import RequirementsUnmet
from infaas.schemas.variants import VariantProfile

if TYPE_CHECKING:
    from infaas.policy.selection import Requirements


def requirements_unmet(req: Requirements, rows: int, pool: list[VariantProfile]) -> RequirementsUnmet:
    """The refusal: which requirement no variant meets, and the real numbers of the fastest and the
    most accurate variants, so the caller knows what to ask for instead."""
    if not pool:
        return RequirementsUnmet("no profiled variant serves this query yet", closest=None)
    fast_enough = [v for v in pool if req.slo_ms is None or v.profiled_ms(rows) <= req.slo_ms]
    accurate_enough = [v for v in pool if req.min_accuracy is None or v.accuracy >= req.min_accuracy]
    cheapest = min(v.cost_per_query for v in pool) * rows
    fastest = min(pool, key=lambda v: (v.profiled_ms(rows), -v.accuracy, v.id))
    most_accurate = max(pool, key=lambda v: (v.accuracy, -v.profiled_ms(rows), v.id))
    unmet = [
        name
        for name, met in (
            ("latency", bool(fast_enough)),
            ("accuracy", bool(accurate_enough)),
            ("cost", req.max_cost is None or cheapest <= req.max_cost),
        )
        if not met
    ]
    closest: dict[str, object] = {
        "unmet": unmet,
        "fastest": _named(fastest, rows),
        "most_accurate": _named(most_accurate, rows),
        "best_accuracy": round(most_accurate.accuracy, 4),
        "best_latency_ms": _ms(fastest.profiled_ms(rows)),
        "min_cost": cheapest,
    }
    if fast_enough and req.slo_ms is not None:
        best_within = max(fast_enough, key=lambda v: (v.accuracy, v.id))
        closest["max_accuracy_within_latency"] = round(best_within.accuracy, 4)
        closest["variant_for_accuracy"] = best_within.id
    if accurate_enough and req.min_accuracy is not None:
        fastest_at = min(accurate_enough, key=lambda v: (v.profiled_ms(rows), v.id))
        if not math.isinf(fastest_at.profiled_ms(rows)):
            closest["min_latency_ms_at_accuracy"] = _ms(fastest_at.profiled_ms(rows))
            closest["variant_for_latency"] = fastest_at.id
    asked: list[str] = []
    if req.slo_ms is not None:
        asked.append(f"latency <= {req.slo_ms:g} ms")
    if req.min_accuracy is not None:
        asked.append(f"accuracy >= {req.min_accuracy:g}")
    if req.max_cost is not None:
        asked.append(f"cost <= ${req.max_cost:g}")
    what = (
        f"no variant meets {' or '.join(unmet)} on its own"
        if unmet
        else "each requirement is met by some variant, but none meets them together"
    )
    return RequirementsUnmet(
        f"no variant meets {' and '.join(asked) or 'the query'} for a batch of {rows} ({what}); "
        f"fastest: {_describe(fastest, rows)}; most accurate: {_describe(most_accurate, rows)}",
        closest=closest,
    )


def _named(variant: VariantProfile, rows: int) -> dict[str, object]:
    return {
        "variant": variant.id,
        "model": variant.model,
        "latency_ms": _ms(variant.profiled_ms(rows)),
        "accuracy": round(variant.accuracy, 4),
    }


def _describe(variant: VariantProfile, rows: int) -> str:
    latency = _ms(variant.profiled_ms(rows))
    at = "latency not profiled" if latency is None else f"{latency:g} ms"
    return f"{variant.id} ({at}, accuracy {variant.accuracy:.4f})"


def _ms(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 4)
