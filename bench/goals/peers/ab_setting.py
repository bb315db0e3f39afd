"""One infaas setting, A/B, side by side: two suites pinned to the server core, one as configured and one
with `NAME=VALUE` in its environment, the same model registered in each, then alternating open-loop runs
at one rate (A B B A A B …) so that a noisy stretch of the shared host falls on both. Prints each run's
p50/p99/p99.9 and the gateway's CPU per query. A diagnostic for what `run.py` shows to be slow.

    .venv/bin/python -m bench.goals.peers.ab_setting INFAAS_UI_LOAD_SAMPLE_S=0 --model tiny --rate 100 \
        --rounds 4

`--variant` pins the queries to one of the model's variants (its id after `<model>.`), e.g. delayed
batching (chosen by each instance) against none, on the batching-friendly model's fp32 form:

    .venv/bin/python -m bench.goals.peers.ab_setting INFAAS_MAX_QUEUE_DELAY_MS=0 --model fixed \
        --variant onnxruntime-basic-fp32-cpu-b64-t1 --rate 400 --rounds 4
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from bench.common import peer_models as model_build
from bench.common.paths import ROOT
from bench.goals.peers import measure, systems
from bench.goals.peers.infaas_side import start_ab
from bench.goals.peers.systems import MODELS_DIR


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("setting", help="NAME=VALUE for suite B")
    p.add_argument("--model", default="tiny", choices=list(model_build.SPECS))
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--variant", help="pin the queries to <model>.<VARIANT>")
    a = systems.parse_pinned(p)
    name, sep, value = a.setting.partition("=")
    if not sep:
        p.error("the setting must be NAME=VALUE")
    _, rows = model_build.prepare(MODELS_DIR)
    suites = start_ab(
        name, value, a.server_core, a.client_core, ROOT / "var" / "peers" / "ab", MODELS_DIR, [a.model]
    )
    try:
        runner = measure.Runner(a.server_core, 64, 0.5, {})
        eps = {
            label: systems.endpoints("infaas", s.port, [a.model], {"Authorization": f"Bearer {key}"})[0]
            for label, (s, key) in suites.items()
        }
        if a.variant:
            pinned = f'],"variant":"{a.model}.{a.variant}"}}'.encode()
            eps = {
                label: dataclasses.replace(ep, wrap=lambda text: b'{"inputs":[' + text + pinned)
                for label, ep in eps.items()
            }
        for label, ep in eps.items():  # warm
            runner.open_loop(ep, suites[label][0], rows, a.rate / 2, 2.0)
        p99s: dict[str, list[float]] = {"A": [], "B": []}
        print(f"A: as configured; B: {a.setting}; {a.model} at {a.rate:.0f}/s for {a.seconds:.0f} s per run")
        for i in range(a.rounds):
            for label in ("A", "B") if i % 2 == 0 else ("B", "A"):
                r = runner.open_loop(eps[label], suites[label][0], rows, a.rate, a.seconds)
                gateway = r["server_cpu_s"].get("gateway", 0.0) / max(1, r["ok"]) * 1e6
                total = sum(r["server_cpu_s"].values()) / max(1, r["ok"]) * 1e6
                p99s[label].append(r["p99"])
                print(
                    f"  {label} p50 {r['p50']:7.2f} p99 {r['p99']:7.2f} p99.9 {r['p999']:7.2f} ms  "
                    f"gateway {gateway:5.0f}, all {total:5.0f} µs/query  errors {r['errors'] or 0}  "
                    f"other load on the core {r['other_on_server_core']:.2f}",
                    flush=True,
                )
        print(f"median p99: A {statistics.median(p99s['A']):.2f} ms, B {statistics.median(p99s['B']):.2f} ms")
    finally:
        for server, _ in suites.values():
            server.stop()


if __name__ == "__main__":
    main()
