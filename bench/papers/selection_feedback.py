"""The selection layer (Clipper) and personalization (Velox) measured on this machine.

1. **Accuracy under feedback.** Three classifiers of different accuracy on scikit-learn's digits (logistic
   regression over all 64 pixels, over 16, over 6; trained on half the rows, queried with the other half)
   answer a stream of single-row queries, the true label fed back after each. `single` (each model alone:
   the best of them is the best single model in hindsight), `exp3` and `exp4` run on the same stream with
   `infaas.policy.bandits`; printed: accuracy per window and overall, and where exp3 sends its queries.
2. **Per-query cost of the layer.** `gateway/selection/layer.py`'s `answer` against a real Redis, with a
   dispatch that returns the models' precomputed outputs at once (so only the layer is timed: parsing the
   inputs, the state read, the draw or the combination, the record write, the JSON), next to the plain
   path's own work for the same query (`v1_json` of one answer); and `feedback.apply` per feedback.
3. **Personalization.** Five users naming the digits their own way (identity, k+1 mod 10, 9−k, pairs
   swapped, a fixed random permutation): a Velox head per user over the 64-pixel model's scores learns from
   n feedbacks; accuracy on the held-out rows, bare model against head; the cost of one Sherman–Morrison
   update (pure) and of writing the head's hot copy to Redis.

Usage:

    .venv/bin/python -m bench.papers.selection_feedback [--queries 3000] [--redis redis://127.0.0.1:6379/9]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from gateway.dataplane.routes import v1_json
from gateway.selection import feedback
from gateway.selection.layer import Selected, answer
from gateway.selection.store import SelectionStore
from infaas.clients.envelope import Answer, Query
from infaas.policy.bandits import (
    BanditConfig,
    SelectionState,
    combine,
    exp3_observe,
    exp3_select,
    exp4_observe,
)
from infaas.policy.personalization import HeadConfig, new_head, predict, update
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.schemas.selection import FeedbackItem, PersonalHead, Selection

PIXELS = {"all64": list(range(64)), "px16": list(range(0, 64, 4)), "px6": [18, 21, 26, 29, 42, 45]}
SIGNATURE = {
    "inputs": [{"name": "pixels", "dtype": "float32", "shape": [None, 64]}],
    "outputs": [{"name": "scores", "dtype": "float32", "shape": [None, 10]}],
}


def models_and_data(seed: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Each model's scores on the held-out rows, those rows, their labels, and the training rows' scores
    of the 64-pixel model (unused rows kept out of every measurement)."""
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[: len(y) // 2], order[len(y) // 2 :]
    scores = {}
    for name, cols in PIXELS.items():
        clf = LogisticRegression(max_iter=2000).fit(x[train][:, cols] / 16, y[train])
        scores[name] = clf.predict_proba(x[test][:, cols] / 16).astype(np.float32)
    return scores, x[test].astype(np.float32), y[test], order


def accuracy_under_feedback(
    scores: dict[str, np.ndarray], y: np.ndarray, queries: int, seed: int
) -> dict[str, Any]:
    names = list(scores)
    rng = random.Random(seed)
    stream = [rng.randrange(len(y)) for _ in range(queries)]
    right: dict[str, list[bool]] = {f"single:{n}": [] for n in names}
    right["exp3"], right["exp4"] = [], []
    config = BanditConfig(eta=0.1, gamma=0.1)
    exp3, exp4 = SelectionState.uniform(len(names)), SelectionState.uniform(len(names))
    chosen: list[str] = []
    for i in stream:
        truth = int(y[i])
        labels = [int(scores[n][i].argmax()) for n in names]
        for n, label in zip(names, labels, strict=True):
            right[f"single:{n}"].append(label == truth)
        k, p = exp3_select(exp3, config, rng.random())
        chosen.append(names[k])
        right["exp3"].append(labels[k] == truth)
        exp3 = exp3_observe(exp3, config, chosen=k, loss=float(labels[k] != truth), probability=p)
        voted = combine(exp4, [scores[n][i : i + 1] for n in names], classes=10)
        right["exp4"].append(int(voted.labels[0]) == truth)
        exp4 = exp4_observe(exp4, config, [float(label != truth) for label in labels])
    window = max(queries // 10, 1)
    return {
        "queries": queries,
        "overall": {k: float(np.mean(v)) for k, v in right.items()},
        "windows": {
            k: [float(np.mean(v[s : s + window])) for s in range(0, queries, window)]
            for k, v in right.items()
        },
        "cumulative": {k: (np.cumsum(v) / np.arange(1, len(v) + 1)).tolist() for k, v in right.items()},
        "exp3_share_last_tenth": {n: chosen[-window:].count(n) / window for n in names},
        "exp4_weights": dict(zip(names, exp4.weights, strict=True)),
    }


class Precomputed:
    """A dispatch that answers at once with the model's precomputed scores for the query's row."""

    def __init__(self, scores: dict[str, np.ndarray], row: int) -> None:
        self.scores, self.row = scores, row

    async def __call__(self, query: Query) -> Answer:
        out = {"scores": self.scores[query.target][self.row : self.row + 1]}
        return Answer(
            out,
            query.target,
            f"{query.target}-v",
            "w",
            "cpu",
            0.0,
            0.0,
            0.0,
            None,
            False,
            False,
            "",
            query.request_id,
        )


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


async def layer_cost(
    scores: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, redis_url: str, n: int
) -> dict[str, Any]:
    redis = aioredis.Redis.from_url(redis_url)
    await redis.flushdb()
    store = SelectionStore(redis)
    models = [
        ModelInternal(
            id=i,
            name=name,
            app="bench",
            format="onnx",
            status="ready",
            artifact_digest=name,
            validation_digest=name,
            signature=SIGNATURE,
        )
        for i, name in enumerate(scores, start=1)
    ]
    out: dict[str, Any] = {}
    plain: list[float] = []
    dispatch = Precomputed(scores, 0)
    for _ in range(n):  # the plain path's own work in the gateway for one answer: render it
        query = Query(
            "model",
            "all64",
            "pixels:float32:64",
            Requirements(),
            {},
            "r",
            "bench",
            "best_effort",
            True,
            "cost",
            None,
            None,
        )
        t0 = time.perf_counter()
        v1_json(await dispatch(query))
        plain.append((time.perf_counter() - t0) * 1e6)
    out["plain_render_us"] = {"p50": pct(plain, 50), "p99": pct(plain, 99)}
    for policy in ("exp3", "exp4"):
        app = AppInternal(
            name="bench", default_latency_ms=None, default_min_accuracy=None, slo_policy="best_effort",
            models=models, selection=Selection(policy=policy, models=list(scores)),
        )  # fmt: skip
        times, fb = [], []
        for q in range(n):
            i = q % len(y)
            selected = Selected(app, x[i : i + 1].tolist(), Requirements(), f"{policy}{q}", None, 64)
            t0 = time.perf_counter()
            await answer(selected, Precomputed(scores, i), store, timeout_s=5)
            times.append((time.perf_counter() - t0) * 1e6)
            t0 = time.perf_counter()
            await feedback.apply(app, [FeedbackItem(query_id=f"{policy}{q}", labels=[int(y[i])])], store)
            fb.append((time.perf_counter() - t0) * 1e6)
        out[policy] = {
            "answer_us": {"p50": pct(times, 50), "p99": pct(times, 99)},
            "feedback_us": {"p50": pct(fb, 50), "p99": pct(fb, 99)},
        }
    await redis.flushdb()
    await redis.aclose()
    return out


USERS = {
    "identity": np.arange(10),
    "shift+1": (np.arange(10) + 1) % 10,
    "9-k": 9 - np.arange(10),
    "pairs swapped": np.array([1, 0, 3, 2, 5, 4, 7, 6, 9, 8]),
    "random": np.random.default_rng(11).permutation(10),
}


async def personalization(scores: np.ndarray, y: np.ndarray, redis_url: str, seed: int) -> dict[str, Any]:
    """Heads learn from the first half of the held-out rows (n of them), are scored on the second half."""
    config = HeadConfig()
    half = len(y) // 2
    counts = [0, 10, 25, 50, 100, 200, 400]
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"feedbacks": counts, "users": {}}
    for user, names in USERS.items():
        truth = names[y]
        curve = []
        for n in counts:
            picked = rng.choice(half, size=n, replace=False) if n else np.array([], dtype=int)
            head = new_head(10, config)
            for i in picked:
                head = update(head, scores[i : i + 1], truth[i : i + 1], config)
            curve.append(float(np.mean(predict(head, scores[half:]) == truth[half:])))
        bare = float(np.mean(scores[half:].argmax(axis=1) == truth[half:]))
        out["users"][user] = {"bare": bare, "head": curve}
    head = new_head(10, config)
    cost = []
    for i in range(2000):
        t0 = time.perf_counter()
        head = update(head, scores[i % half : i % half + 1], y[i % half : i % half + 1], config)
        cost.append((time.perf_counter() - t0) * 1e6)
    out["update_us"] = {"p50": pct(cost, 50), "p99": pct(cost, 99)}
    redis = aioredis.Redis.from_url(redis_url)
    doc = PersonalHead(
        user="u", a_inv=head.a_inv.tolist(), b=head.b.tolist(), error=0, model_error=0, updates=1
    )
    writes = []
    for _ in range(500):
        t0 = time.perf_counter()
        await redis.set("bench:head", doc.model_dump_json())
        writes.append((time.perf_counter() - t0) * 1e6)
    await redis.delete("bench:head")
    await redis.aclose()
    out["redis_write_us"] = {"p50": pct(writes, 50), "p99": pct(writes, 99)}
    return out


def durable_write_cost(admin_url: str, redis_url: str, n: int) -> dict[str, Any]:
    """A head's durable write as the gateway makes it on every personalized feedback: the registry's
    `PUT /internal/models/{id}/heads/{user}` (validation, upsert, commit) on a fresh migrated Postgres
    database, called in-process (FastAPI's TestClient: no loopback socket, so a lower bound)."""
    import io
    import tempfile
    import uuid

    import psycopg
    from fastapi.testclient import TestClient
    from onnx import TensorProto, helper, numpy_helper

    from infaas.core.config import Settings
    from infaas.core.credentials import internal_headers
    from infaas_cli.migrate import upgrade
    from services.registry.app import create_app

    name = f"infaas_bench_sel_{uuid.uuid4().hex[:8]}"
    libpq = admin_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        upgrade(url)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["pixels", "w"], ["scores"])],
            "bench",
            [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [None, 64])],
            [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 10])],
            initializer=[numpy_helper.from_array(np.ones((64, 10), np.float32), "w")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        validation = io.BytesIO()
        np.savez(validation, x=np.zeros((20, 64), np.float32), y=np.arange(20) % 10)
        with tempfile.TemporaryDirectory() as var:
            settings = Settings(
                database_url=url, redis_url=redis_url, var_dir=Path(var), internal_key="int_bench_" + name
            )
            with TestClient(create_app(settings), headers=internal_headers(settings.internal_key)) as client:
                admin = {"x-infaas-role": "admin"}
                assert client.post("/v1/apps", json={"name": "bench"}, headers=admin).status_code == 201
                meta = json.dumps({"name": "bench-digits", "app": "bench", "task": "classification"})
                files = {
                    "file": ("m.onnx", model.SerializeToString()),
                    "validation": ("v.npz", validation.getvalue()),
                }
                accepted = client.post("/v1/models", files=files, data={"metadata": meta}, headers=admin)
                assert accepted.status_code == 202, accepted.text
                model_id = client.get("/internal/models/by-name/bench-digits").json()["id"]
                head = new_head(10, HeadConfig())
                doc = PersonalHead(
                    user="u", a_inv=head.a_inv.tolist(), b=head.b.tolist(), error=0, model_error=0, updates=1
                )
                times = []
                for i in range(n):
                    body = doc.model_copy(update={"user": f"u{i % 50}"}).model_dump()
                    t0 = time.perf_counter()
                    response = client.put(f"/internal/models/{model_id}/heads/u{i % 50}", json=body)
                    times.append((time.perf_counter() - t0) * 1e6)
                    assert response.status_code == 200, response.text
    finally:
        with psycopg.connect(libpq, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return {"p50": pct(times, 50), "p99": pct(times, 99)}


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, curve in result["accuracy"]["cumulative"].items():
        axes[0].plot(np.arange(1, len(curve) + 1), curve, label=name, lw=1.2)
    axes[0].set_xlabel("queries (feedback after each)")
    axes[0].set_ylabel("cumulative accuracy")
    axes[0].set_ylim(0.3, 1.0)
    axes[0].legend(fontsize=8)
    axes[0].set_title("selection under feedback (digits)", fontsize=10)
    p = result["personalization"]
    for user, d in p["users"].items():
        axes[1].plot(p["feedbacks"], d["head"], marker="o", label=f"{user} (bare {d['bare']:.2f})", lw=1.2)
    axes[1].set_xlabel("feedback rows for the user's head")
    axes[1].set_ylabel("held-out accuracy for that user")
    axes[1].legend(fontsize=8)
    axes[1].set_title("Velox heads, per-user label conventions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _us(d: dict[str, float]) -> str:
    return f"p50 {d['p50']:.0f} µs, p99 {d['p99']:.0f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--cost-queries", type=int, default=2000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--database-url",
        default="",
        help="a Postgres server's admin URL (postgresql+psycopg://user@host:port/db): also time a head's "
        "durable write through the registry, in a database of its own created and dropped here",
    )
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    scores, x, y, _ = models_and_data(args.seed)
    result = {
        "accuracy": accuracy_under_feedback(scores, y, args.queries, args.seed),
        "cost": asyncio.run(layer_cost(scores, x, y, args.redis, args.cost_queries)),
        "personalization": asyncio.run(personalization(scores["all64"], y, args.redis, args.seed)),
    }
    if args.database_url:
        result["personalization"]["durable_write_us"] = durable_write_cost(args.database_url, args.redis, 300)
    acc = result["accuracy"]
    print(f"accuracy over {args.queries} queries (feedback after each):")
    for name, value in acc["overall"].items():
        print(
            f"  {name:14s} overall {value:.3f}  per tenth "
            + " ".join(f"{w:.2f}" for w in acc["windows"][name])
        )
    print(
        "  exp3's queries in the last tenth:",
        {k: round(v, 3) for k, v in acc["exp3_share_last_tenth"].items()},
    )
    print("  exp4's weights at the end:", {k: f"{v:.2e}" for k, v in acc["exp4_weights"].items()})
    cost = result["cost"]
    print(f"plain path, rendering one answer: {_us(cost['plain_render_us'])}")
    for policy in ("exp3", "exp4"):
        c = cost[policy]
        print(f"{policy}: layer per query {_us(c['answer_us'])}; feedback {_us(c['feedback_us'])}")
    p = result["personalization"]
    print("personalization: held-out accuracy by feedback rows", p["feedbacks"])
    for user, d in p["users"].items():
        print(f"  {user:14s} bare {d['bare']:.3f}  head " + " ".join(f"{a:.3f}" for a in d["head"]))
    print(f"  head update per feedback row {_us(p['update_us'])}")
    print(f"  Redis hot-copy write of a head {_us(p['redis_write_us'])}")
    if "durable_write_us" in p:
        print(f"  durable write of a head through the registry (in-process) {_us(p['durable_write_us'])}")
    args.out.mkdir(parents=True, exist_ok=True)
    slim = dict(result)
    slim["accuracy"] = {k: v for k, v in acc.items() if k != "cumulative"}
    (args.out / "selection_feedback.json").write_text(json.dumps(slim, indent=1))
    if not args.no_plot:
        plot(result, args.out / "selection_feedback.png")


if __name__ == "__main__":
    main()
