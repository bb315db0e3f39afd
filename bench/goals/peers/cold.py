"""What the query path's NumPy, ONNX Runtime and codec calls cost on cold caches, against warm.

At the low rates a core is shared at, every query meets caches (and TLBs) the rest of the core has
cooled: the same Python runs several times slower than back to back, and a NumPy entry point (array
creation, a ufunc reduction, a reshape) costs tens of µs, most of it fetching its code and data again.
This probe evicts them before each call — it writes one byte in every cache line of a 48 MiB buffer —
then times the call; the pairs it compares run interleaved, in alternating order, so the host's drift
falls on both alike. Each pair is what the path calls now against what it called before
(docs/benchmarks.md, "Cold caches"):

    taskset -c 1 .venv/bin/python -m bench.goals.peers.cold --calls 800

`bench/goals/peers/segments.py` measures the same calls in place, through the running suite.
"""

from __future__ import annotations

import argparse
import math
import statistics
import struct
import time
from collections.abc import Callable

import numpy as np
import orjson

from bench.common import peer_models as model_build
from bench.goals.peers.systems import MODELS_DIR
from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas.wire.frames import decode_frame, encode_frame
from infaas.wire.messages import Order, Reply
from infaas.wire.tensors import TensorSpec, _small_within, coerce_batch
from services.scheduler.prediction_cache import input_digest

_JUNK = np.ones((48 << 20) // 8)
_LEN = struct.Struct(">I")


def evict() -> None:
    _JUNK[::8] += 1.0  # one write per 64-byte line


def measure(calls: dict[str, Callable[[], object]], n: int) -> dict[str, tuple[float, float]]:
    """Per call: (median µs on cold caches, mean µs back to back)."""
    names = list(calls)
    for f in calls.values():
        f()
    cold: dict[str, list[float]] = {k: [] for k in names}
    for i in range(n):
        for k in names if i % 2 == 0 else names[::-1]:
            evict()
            t = time.perf_counter()
            calls[k]()
            cold[k].append(time.perf_counter() - t)
    out = {}
    for k in names:
        f = calls[k]
        t = time.perf_counter()
        for _ in range(2000):
            f()
        out[k] = (statistics.median(cold[k]) * 1e6, (time.perf_counter() - t) / 2000 * 1e6)
    return out


def _old_range(a: np.ndarray, limit: float) -> bool:
    return bool(-limit <= a.min() and a.max() <= limit)


def _old_digest(inputs: dict[str, np.ndarray]) -> str:
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.data)
    return h.hexdigest()


_LE = {n: np.dtype(n).newbyteorder("<") for n in ("float32", "float64", "int64")}
_LE_NAMES = {d: n for n, d in _LE.items()}


def _old_tensor(frame: bytes, offset: int, shape: tuple[int, ...]) -> np.ndarray:
    """A tensor as `decode_frame` made it before: a frombuffer of a memoryview slice, reshaped."""
    size = math.prod(shape) * 4
    return np.frombuffer(memoryview(frame)[offset : offset + size], dtype=_LE["float32"]).reshape(shape)


def _old_encode(header: dict[str, object], tensors: dict[str, np.ndarray]) -> bytes:
    """`encode_frame` as it was: a contiguous copy, its dtype found by hashing, `tobytes`."""
    specs, chunks = [], []
    for name, array in tensors.items():
        contiguous = np.ascontiguousarray(array)
        if contiguous.dtype.byteorder == ">":
            contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))
        dtype = _LE_NAMES.get(contiguous.dtype) or contiguous.dtype.name
        specs.append({"name": name, "dtype": dtype, "shape": list(contiguous.shape)})
        chunks.append(contiguous.tobytes())
    head = orjson.dumps({**header, "tensors": specs})
    return b"".join([_LEN.pack(len(head)), head, *chunks])


def _order_now(x: np.ndarray) -> object:
    """The order as `services/scheduler/sending.py` builds it, and as a worker decodes and reads it."""
    sent = Order(
        "1a",
        "tiny.onnxruntime-extended-fp32-cpu-b64-t1",
        "0" * 64,
        "infaas:reply:d",
        time.time(),
        1.7e9,
        20.0,
        "r",
    )
    order, inputs = Order.decode(sent.encode({"x": x}))
    return order.slo_ms, order.drop_after, order.sent_at, order.digest, inputs


def _order_before(x: np.ndarray) -> object:
    """The order as it was: a dict literal, decoded, its fields read with defaults where they are used."""
    frame = encode_frame(
        {
            "id": "1a",
            "variant": "tiny.onnxruntime-extended-fp32-cpu-b64-t1",
            "digest": "0" * 64,
            "reply": "infaas:reply:d",
            "enqueued_at": time.time(),
            "drop_after": 1.7e9,
            "budget_ms": 20.0,
            "request_id": "r",
        },
        {"x": x},
    )
    header, inputs = decode_frame(frame)
    budget, drop = header.get("budget_ms"), header.get("drop_after")
    enqueued = header.get("enqueued_at")
    return (
        float(budget) if isinstance(budget, int | float) else 20.0,
        drop if isinstance(drop, int | float) else None,
        float(enqueued) if isinstance(enqueued, int | float) else 0.0,
        header.get("digest"),
        inputs,
    )


def _reply_now(outputs: dict[str, np.ndarray]) -> object:
    reply = Reply("1a", "cpu-h-9001", "answered", "tiny.v", 0.0123, 0.0456, 1)
    got, out = Reply.decode(reply.encode(outputs))
    return got.outcome == "refused", got.outcome, got.queue_ms, got.compute_ms, got.worker, out


def _reply_before(outputs: dict[str, np.ndarray]) -> object:
    head = {"id": "1a", "worker": "cpu-h-9001", "variant": "tiny.v", "queue_ms": 0.0123, "compute_ms": 0.0456}
    header, out = decode_frame(encode_frame({**head, "batch_rows": 1}, outputs))
    refused = "refused" in header
    expired, error = header.get("expired"), "error" in header
    return refused, expired, error, header["queue_ms"], header["compute_ms"], header["worker"], out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--calls", type=int, default=800, help="cold calls of each, interleaved")
    a = p.parse_args()
    rng = np.random.default_rng(0)
    raw = orjson.loads(orjson.dumps([rng.random(64).tolist()]))  # one `tiny` row, as JSON parsed it
    x = np.asarray(raw, dtype=np.float32)
    limit = float(np.finfo(np.float32).max)
    wide = np.asarray(raw)
    header = {"id": "1a", "variant": "tiny.onnxruntime-extended-fp32-cpu-b64-t1", "enqueued_at": 1.7e9}
    frame = encode_frame(header, {"x": x})
    offset = len(frame) - x.nbytes
    spec = TensorSpec("x", "float32", (None, 64))
    f32 = np.dtype("float32")
    model_build.prepare(MODELS_DIR)  # the bench's models, built once under var/peers/models
    runtime = OnnxRuntime(MODELS_DIR / "tiny.onnx", threads=1)
    runtime.load()
    session = runtime._session
    assert session is not None
    names = [o.name for o in session.get_outputs()]
    outputs = runtime.run({"x": x})
    pairs: list[tuple[str, dict[str, Callable[[], object]]]] = [
        (
            "range check of a float row (gateway)",
            {
                "sum of magnitudes (now)": lambda: _small_within(raw, wide, f32),
                "NumPy min and max (before)": lambda: _old_range(wide, limit),
            },
        ),
        (
            "a tensor out of a frame (executor, gateway)",
            {
                "np.ndarray over the frame (now)": lambda: np.ndarray([1, 64], f32, frame, offset),
                "frombuffer of a slice, reshape (before)": lambda: _old_tensor(frame, offset, (1, 64)),
            },
        ),
        (
            "a frame of one tensor (gateway, executor)",
            {
                "encode_frame (now)": lambda: encode_frame(header, {"x": x}),
                "contiguous copy, tobytes (before)": lambda: _old_encode(header, {"x": x}),
            },
        ),
        (
            "the prediction cache's digest (gateway)",
            {"input_digest (now)": lambda: input_digest({"x": x}), "before": lambda: _old_digest({"x": x})},
        ),
        (
            "the model's run (executor)",
            {
                "the C++ session (now)": lambda: runtime.run({"x": x}),
                "the Python wrapper (before)": lambda: session.run(names, {"x": x}),
            },
        ),
        (
            "an order out and in (dispatcher → worker)",
            {
                "typed Order, encode and decode (now)": lambda: _order_now(x),
                "header dict, decode_frame, .get (before)": lambda: _order_before(x),
            },
        ),
        (
            "a reply out and in (worker → dispatcher)",
            {
                "typed Reply, encode and decode (now)": lambda: _reply_now(outputs),
                "header dict, decode_frame, .get (before)": lambda: _reply_before(outputs),
            },
        ),
        (
            "whole steps (for scale)",
            {
                "coerce_batch": lambda: coerce_batch(raw, spec, max_rows=64),
                "decode_frame": lambda: decode_frame(frame),
            },
        ),
    ]
    for title, calls in pairs:
        print(title)
        for name, (cold_us, warm_us) in measure(calls, a.calls).items():
            print(f"  {name:42s} cold {cold_us:6.1f} µs   warm {warm_us:5.2f} µs", flush=True)


if __name__ == "__main__":
    main()
