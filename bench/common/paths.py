"""Where the benchmarks read and write: the repository they run from, its `var/` and `docs/img/`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout these scripts belong to (not the working directory)."""
VAR = ROOT / "var"
DOCS_IMG = ROOT / "docs" / "img"
"""Plots and the JSON of the runs docs/benchmarks.md quotes."""
