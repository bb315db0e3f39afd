"""Where an infaas query's time goes at a low rate: the whole suite pinned to the server core with one
model registered, an open-loop Poisson run from the client core, and every answer's own account
(`latency_ms`) set against the latency the client saw:
- `compute`: the model's run on the executor;
- `queue`: from the dispatcher's send (the frame's `enqueued_at`) to the executor picking the query up:
  the gateway-to-executor hop, the executor's read and decode, its event loop's turn;
- `server total` less both: the gateway's work before the send and after the answer, the answer's way
  back;
- `client − server total`: the client's connection, the gateway's HTTP parsing and response, the
  client's own reading.

    .venv/bin/python -m bench.goals.peers.breakdown --model heavy --rate 20 --seconds 60

Prints percentiles of each part, then the slowest 2 % of queries part by part.
"""

from __future__ import annotations

import argparse

import numpy as np
import orjson

from bench.common import loadgen as lg
from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import start_infaas
from bench.goals.peers.systems import LOW_RATE, MODELS_DIR


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="heavy", choices=list(model_build.SPECS))
    p.add_argument("--rate", type=float, help="queries per second (default: run.py's low rate)")
    p.add_argument("--seconds", type=float, default=60.0)
    a = systems.parse_pinned(p)
    rate = a.rate or LOW_RATE.get(a.model, 20.0)
    _, rows = model_build.prepare(MODELS_DIR)
    server, key = start_infaas(
        a.server_core, a.client_core, ROOT / "var" / "peers" / "breakdown", MODELS_DIR, [a.model]
    )
    try:
        ep = systems.endpoints("infaas", server.port, [a.model], {"Authorization": f"Bearer {key}"})[0]
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        runner.open_loop(ep, server, rows, rate, 3.0)  # warm, not recorded
        schedule = lg.poisson_schedule(rate, a.seconds, 1)
        target = lg.Target("127.0.0.1", ep.port, f"127.0.0.1:{ep.port}")
        r = lg.run(
            lg.run_open_loop(
                target,
                runner._requests(ep, rows, len(schedule)),  # numbers the warm-up did not use
                schedule,
                connections=64,
                drain_s=5.0,
                keep_bodies=True,
                duration_s=a.seconds,
            )
        )
        client = np.asarray(r.ok_latencies_ms)  # in the order of `r.bodies`
        said = [orjson.loads(body) for body in r.bodies]
        part = {k: np.asarray([s["latency_ms"][k] for s in said]) for k in ("total", "queue", "compute")}
        parts = {
            "client": client,
            "server total": part["total"],
            "queue (send → picked up)": part["queue"],
            "compute": part["compute"],
            "server total − queue − compute": part["total"] - part["queue"] - part["compute"],
            "client − server total": client - part["total"],
        }
        variants = sorted({str(s.get("variant")) for s in said})
        print(f"{a.model} at {rate:g}/s for {a.seconds:g} s: {len(client)} answered by {variants}")
        for name, x in parts.items():
            cells = "  ".join(f"p{q:g} {np.percentile(x, q):7.3f}" for q in (50, 90, 99))
            print(f"  {name:32s} {cells}  max {x.max():7.3f} ms")
        print("the slowest 2 %, ms: " + " / ".join(parts))
        for i in np.argsort(client)[-max(5, len(client) // 50) :]:
            print("  " + "  ".join(f"{x[i]:7.2f}" for x in parts.values()))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
