"""Prometheus exposition that stays right when a service runs as several processes.

prometheus_client keeps metric values in process memory unless `PROMETHEUS_MULTIPROC_DIR` is set
*before it is imported*; then every process writes its values to memory-mapped files in that
directory, and a scrape merges them (`MultiProcessCollector`). The launcher gives each service its own
directory under `<var_dir>/metrics/<process>` and empties it before the process starts (files of dead
processes would otherwise be added to the new ones). Gauges declare how to merge
(`multiprocess_mode`): `livesum` for amounts that belong to live processes only.
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from infaas.metrics.buffer import BUFFER

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST


def multiproc_dir() -> Path | None:
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


def prepare_multiproc_dir(path: Path) -> Path:
    """Create `path` empty (values of an earlier run must not be added to this one's)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def collector_registry() -> CollectorRegistry:
    """The registry to expose: every process of this service merged, or this process alone."""
    directory = multiproc_dir()
    if directory is None:
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry


def families() -> Iterable[Metric]:
    """What a scrape would render, as metric families (this process's buffered updates written first):
    for a reader in this process that needs a few series, without rendering and parsing the text."""
    BUFFER.flush()
    return collector_registry().collect()


def exposition() -> bytes:
    """The text a `/metrics` scrape answers (this process's buffered updates written first)."""
    BUFFER.flush()
    return generate_latest(collector_registry())


def process_exited(pid: int | None = None) -> None:
    """Drop an exited process's `live*` gauge values (its counters and histograms stay counted)."""
    directory = multiproc_dir()
    if directory is not None:
        mark_process_dead(pid or os.getpid(), str(directory))  # type: ignore[no-untyped-call]


def forget_at_exit() -> None:
    """Have this process drop its live gauge values when it exits (no-op outside multiprocess mode)."""
    if multiproc_dir() is not None:
        atexit.register(process_exited, os.getpid())
