"""Offline jobs: what their producers (planner), workers (jobs worker) and owner (registry) share.

- Celery wiring of the `jobs` queue: tasks are sent by name, so no service imports another.
- The throttle decision the planner publishes in Redis (`infaas:jobs:throttle`).
- Reading a job's input safely (`allow_pickle=False`, size and shape checks) and writing `.npz` results.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from celery import Celery

from infaas.core.errors import InvalidInput
from infaas.data.broker import celery_settings
from infaas.wire.archives import check_npz_bounds
from infaas.wire.tensors import Signature, check_array, validation_keys

RUN_CHUNK = "infaas.run_chunk"
JOBS_QUEUE = "jobs"
THROTTLE_KEY = "infaas:jobs:throttle"
"""JSON `ThrottleState`, written by the planner every tick with a short TTL: no planner, no offline work."""
SUBMITTED_KEY = "infaas:jobs:submitted"
"""A counter the registry increments after committing a new job: the planner's loop, with no job active,
asks the registry for leases only when it moved (or every `job_idle_tick_s`, should a signal be lost)."""

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


def make_jobs_celery(broker_url: str, *, visibility_timeout_s: float = 300.0) -> Celery:
    app = Celery("infaas-jobs", broker=broker_url)
    # Chunks take seconds; a lost worker's message comes back after `visibility_timeout_s`. Postgres
    # leases re-send sooner anyway, and a chunk run twice is harmless (its completion is recorded once).
    app.conf.update(
        **celery_settings(visibility_timeout_s=visibility_timeout_s), task_default_queue=JOBS_QUEUE
    )
    return app


@dataclass(frozen=True, slots=True)
class ThrottleState:
    """The planner's decision: may offline chunks run, on which workers, and why (not)."""

    paused: bool
    reason: str
    eligible: tuple[str, ...]
    at: float

    def to_json(self) -> bytes:
        return orjson.dumps(
            {"paused": self.paused, "reason": self.reason, "eligible": list(self.eligible), "at": self.at}
        )

    @classmethod
    def from_json(cls, blob: bytes | str | None) -> ThrottleState:
        if blob is None:
            return cls(
                paused=True, reason="no throttle decision (is the planner running?)", eligible=(), at=0
            )
        data = orjson.loads(blob)
        return cls(
            paused=bool(data["paused"]),
            reason=str(data["reason"]),
            eligible=tuple(str(w) for w in data["eligible"]),
            at=float(data["at"]),
        )


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed `.npz` of named arrays (readable with `allow_pickle=False`)."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    np.savez(buffer, allow_pickle=False, **named)
    return buffer.getvalue()


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def read_npz(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def parse_job_input(
    data: bytes, signature: Signature, *, max_rows: int, max_bytes: int
) -> dict[str, np.ndarray]:
    """The job's input arrays, one per model input, checked against the signature — or a 422 that says
    what is wrong. A `.npy` feeds a one-input model; a `.npz` holds `x` (one input) or the input names."""
    if data.startswith(_NPY_MAGIC):
        if len(signature.inputs) != 1:
            names = [s.name for s in signature.inputs]
            raise InvalidInput(f"this model has inputs {names}: send a .npz with one array per input")
        raw = {signature.inputs[0].name: _load_npy(data)}
    elif data.startswith(_ZIP_MAGIC):
        raw = _load_npz(data, signature, max_bytes=max_bytes)
    else:
        raise InvalidInput("the input is neither a .npy nor a .npz file")
    checked = {spec.name: check_array(raw[spec.name], spec, max_rows=max_rows) for spec in signature.inputs}
    rows = {name: a.shape[0] for name, a in checked.items()}
    if len(set(rows.values())) != 1:
        raise InvalidInput(f"every input must have the same number of rows; got {rows}", rows=rows)
    return checked


def _load_npy(data: bytes) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as exc:  # truncated, bad header, object dtype (needs pickle): all mean unreadable
        raise InvalidInput("the .npy input is corrupt or holds objects", reason=str(exc)[:200]) from exc
    if not isinstance(array, np.ndarray):
        raise InvalidInput("the .npy input holds no array")
    return array


def _load_npz(data: bytes, signature: Signature, *, max_bytes: int) -> dict[str, np.ndarray]:
    keys = validation_keys(signature)
    try:
        # Declared sizes first: a small, highly compressed member must not expand into all memory.
        check_npz_bounds(data, max_expanded_bytes=max_bytes, what="the .npz input")
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            present = set(archive.files)
            out: dict[str, np.ndarray] = {}
            for key, spec in zip(keys, signature.inputs, strict=True):
                name = key if key in present else spec.name
                if name not in present:
                    raise InvalidInput(
                        f"the .npz has arrays {sorted(present)}; it needs {keys}",
                        expected=keys,
                        got=sorted(present),
                    )
                out[spec.name] = archive[name]
            return out
    except InvalidInput:
        raise
    except Exception as exc:
        raise InvalidInput("the .npz input is corrupt or holds objects", reason=str(exc)[:200]) from exc


def chunk_plan(rows_total: int, chunk_rows: int) -> list[tuple[int, int]]:
    """[row_start, row_end) of each chunk, in order."""
    return [(start, min(start + chunk_rows, rows_total)) for start in range(0, rows_total, chunk_rows)]


def auto_chunk_rows(*, throughput_rows_s: float, max_batch: int, target_s: float, cap: int) -> int:
    """About `target_s` of the variant's work, a whole number of max batches, within [max_batch, cap]:
    short enough that a pause takes effect quickly and a crash re-runs little, long enough to batch."""
    rows = int(throughput_rows_s * target_s) if throughput_rows_s > 0 else max_batch
    rows = max(max_batch, (rows // max_batch) * max_batch)
    return max(1, min(rows, max(cap, max_batch)))
