"""Benchmarks: scripts that print tables and write plots; their results are in docs/benchmarks.md.

Each script runs as a module from the repository root, `.venv/bin/python -m bench.<kind>.<name>`
(`--help` says what it measures and how), and imports what it shares from `bench.common`:

- `goals/`: the performance goals of the architecture (§9): `peers/` (infaas side by side with the
  servers a user would pick instead, and the probes that explain its numbers), `selection` (the
  `get_variant` decision time), `ilp` (the exact autoscaling ILP's solve time).
- `papers/`: each seed's headline experiment at our scale: INFaaS autoscaling and offline jobs, SERF,
  ParM, FailLite, InferLine, Clipper and Velox.
- `diagnostics/`: measurements of one part of the system that docs/benchmarks.md or a docstring takes a
  number or a design decision from (serving-path overhead, the latency floor, the HTTP lane, OIP, the
  variant space, faults, overload, GPU checks).
- `common/`: what the scripts share: the open-loop load generator, the peer comparison's models, the
  plots drawn from kept output.

Nothing in the product imports `bench` (an import-linter contract says so).
"""
