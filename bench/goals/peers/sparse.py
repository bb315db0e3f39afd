"""Sparse callers: the latency of a query that comes after a quiet gap, with the gateway keeping what
queries use warm (suite A, as configured) and without (suite B, `INFAAS_AUTH_CACHE_KEEP_WARM_S=0`).

An app that sends a query every 30 s finds, without it, its key, app and model past the gateway's cache
TTL (10 s) each time, and waits for three registry reads. Two suites run side by side, pinned to the
server core as in `run.py`, the same model registered in each; each round sleeps one gap, then sends one
query to each suite in turn (the order alternating), then a second query right after: the first pays
whatever expired in the gap, the second shows the warm path.

    .venv/bin/python -m bench.goals.peers.sparse --model heavy --gaps 3 12 --rounds 6
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import systems
from bench.goals.peers.infaas_side import start_ab
from bench.goals.peers.systems import MODELS_DIR

SETTING = "INFAAS_AUTH_CACHE_KEEP_WARM_S"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="heavy", choices=list(model_build.SPECS))
    p.add_argument("--gaps", type=float, nargs="+", default=[3.0, 12.0], help="quiet seconds before a query")
    p.add_argument("--rounds", type=int, default=6, help="rounds per gap")
    a = systems.parse_pinned(p)
    _, rows = model_build.prepare(MODELS_DIR)
    suites = start_ab(
        SETTING, "0", a.server_core, a.client_core, ROOT / "var" / "peers" / "sparse", MODELS_DIR, [a.model]
    )
    try:
        clients = {
            label: httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}", headers={"Authorization": f"Bearer {key}"}
            )
            for label, (server, key) in suites.items()
        }
        sent = 0

        def query(label: str) -> float:
            nonlocal sent
            sent += 1
            body = {"inputs": [[float(sent), *rows[sent % len(rows), 1:].tolist()]]}
            t = time.perf_counter()
            answer = clients[label].post(f"/v1/models/{a.model}/infer", json=body)
            answer.raise_for_status()
            return (time.perf_counter() - t) * 1000

        for label in clients:  # warm: connections, first shapes
            for _ in range(20):
                query(label)
        first: dict[tuple[str, float], list[float]] = {}
        then: dict[tuple[str, float], list[float]] = {}
        print(f"A: as configured; B: {SETTING}=0; {a.model}, one query after each gap, then one more")
        for i in range(a.rounds):
            for gap in a.gaps:
                time.sleep(gap)
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                for label in order:
                    first.setdefault((label, gap), []).append(query(label))
                for label in order:
                    then.setdefault((label, gap), []).append(query(label))
        for gap in a.gaps:
            for label in ("A", "B"):
                f, t = first[(label, gap)], then[(label, gap)]
                print(
                    f"  gap {gap:5.1f} s  {label}: first query median {statistics.median(f):6.2f} ms "
                    f"(max {max(f):6.2f}), the next {statistics.median(t):6.2f} ms",
                    flush=True,
                )
    finally:
        for server, _ in suites.values():
            server.stop()


if __name__ == "__main__":
    main()
