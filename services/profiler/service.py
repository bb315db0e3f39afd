"""Variant generation and profiling of one model (the Celery tasks are thin wrappers over this).

`profile_model` runs on a CPU profiler: it generates every candidate form of the model with the
registered generators, adds the max-batch and thread dimensions, reports all variants as pending,
measures the CPU ones here, and hands each other hardware kind to a profiler that really has it
(`profile.<kind>` queue). Kinds nobody has stay pending with the reason.
"""

from __future__ import annotations

import io
import logging
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np

from infaas.clients.registry import RegistryClient
from infaas.core.costs import cost_per_query
from infaas.core.settings.profiler import ProfilerSettings
from infaas.data.artifacts import ArtifactStore
from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.hardware import usable_cores
from infaas.runtimes.providers import execution_provider, padded_batch
from infaas.runtimes.registry import build_runtime
from infaas.schemas.api import ConcurrencyPoint, LatencyPoint, ModelInternal, StatusUpdate, VariantReport
from infaas.schemas.variants import BatchLatency, variant_id
from infaas.wire.tensors import Signature, validation_keys
from services.profiler.generators import Candidate, SourceModel, registered_generators
from services.profiler.memory import MemoryMeasurement, ProbeSpec, measure_memory
from services.profiler.profiling import SessionMeasurement, batch_sizes_up_to, measure_session, saturation_qps

log = logging.getLogger("infaas.profiler")

Dispatch = Callable[[int, str], None]
"""Send `profile_variants(model_id, hardware)` to the queue of that hardware kind."""


def load_validation(
    model: ModelInternal, signature: Signature, artifacts: ArtifactStore
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    with np.load(io.BytesIO(artifacts.get(model.validation_digest)), allow_pickle=False) as npz:
        labels = npz["y"]
        names = validation_keys(signature)
        inputs = {s.name: npz[n].astype(s.dtype) for n, s in zip(names, signature.inputs, strict=True)}
    return inputs, labels


def thread_counts(configured: list[int], cores: int) -> list[int]:
    """Configured counts capped at the cores, or by default 1, 2, 4, … and the core count itself."""
    if configured:
        return sorted({max(1, min(t, cores)) for t in configured})
    counts = {1 << i for i in range(cores.bit_length()) if 1 << i <= cores}
    return sorted(counts | {cores})


def expand(
    model: str, candidate: Candidate, digest: str, settings: ProfilerSettings, cores: int
) -> list[VariantReport]:
    """The max-batch × threads dimensions of one candidate (threads only matter on the CPU)."""
    threads = thread_counts(settings.profile_threads, cores) if candidate.hardware == "cpu" else [1]
    tag = execution_provider(candidate.provider).tag
    return [
        VariantReport(
            id=variant_id(
                model,
                runtime=candidate.runtime,
                optimization=candidate.optimization,
                precision=candidate.precision,
                hardware=tag,
                max_batch=b,
                threads=t,
            ),
            runtime=candidate.runtime,
            provider=candidate.provider,
            optimization=candidate.optimization,
            precision=candidate.precision,
            hardware=candidate.hardware,
            max_batch=b,
            threads=t,
            artifact_digest=digest,
            status="pending",
        )
        for t in threads
        for b in sorted(settings.profile_batch_sizes)
    ]


def generate(
    model: ModelInternal,
    signature: Signature,
    artifacts: ArtifactStore,
    settings: ProfilerSettings,
    inputs: dict[str, np.ndarray],
) -> tuple[list[VariantReport], list[str]]:
    """Every variant the registered generators make; generator failures are returned as notes."""
    calibration = {n: a[: settings.calibration_rows] for n, a in inputs.items()}
    onnx_path = artifacts.path(model.onnx_digest) if model.onnx_digest else None
    ts_path = artifacts.path(model.torchscript_digest) if model.torchscript_digest else None
    source = SourceModel(
        name=model.name,
        signature=signature,
        onnx_path=onnx_path,
        torchscript_path=ts_path,
        calibration=calibration,
    )
    cores = usable_cores()
    reports: list[VariantReport] = []
    notes: list[str] = []
    for generator in registered_generators():
        if not generator.applies(source):
            continue
        reason = generator.unavailable_reason()
        if reason:
            notes.append(f"{generator.name}: {reason}")
            continue
        try:
            candidates = generator.generate(source)
        except Exception as exc:  # one generator failing (e.g. an op int8 cannot quantize) is a note
            log.exception("generator %s failed on %s", generator.name, model.name)
            notes.append(f"{generator.name} failed: {str(exc)[:200]}")
            continue
        for candidate in candidates:
            reports += expand(model.name, candidate, artifacts.put(candidate.data), settings, cores)
    return reports, notes


def profile_model(
    model_id: int,
    *,
    registry: RegistryClient,
    artifacts: ArtifactStore,
    settings: ProfilerSettings,
    live_kinds: Callable[[], set[str]],
    dispatch: Dispatch,
    attempt: int | None = None,
) -> list[VariantReport]:
    """Generate, report, measure the CPU variants here, and hand the rest to their hardware. Reports
    carry `attempt`: the registry refuses those of an attempt that is no longer current."""
    model = registry.model(model_id)
    registry.set_status(model_id, StatusUpdate(status="profiling"), attempt=attempt)
    signature = Signature.from_json(model.signature)  # once per profile: every step below reads it
    inputs, labels = load_validation(model, signature, artifacts)
    reports, notes = generate(model, signature, artifacts, settings, inputs)
    if not reports:
        reason = "; ".join(notes) or "no variant"
        registry.set_status(model_id, StatusUpdate(status="failed", reason=reason), attempt=attempt)
        return []
    live = live_kinds()
    parked = []
    for r in reports:
        if r.hardware != "cpu" and r.hardware not in live:
            parked.append(
                r.model_copy(
                    update={"status_reason": f"no profiler worker with {r.hardware} hardware is running"}
                )
            )
        else:
            parked.append(r)
    registry.report_variants(model_id, parked, attempt=attempt)
    done = measure(
        model,
        signature,
        [r for r in parked if r.hardware == "cpu"],
        registry=registry,
        artifacts=artifacts,
        settings=settings,
        inputs=inputs,
        labels=labels,
        attempt=attempt,
    )
    for kind in sorted({r.hardware for r in parked if r.hardware != "cpu" and r.hardware in live}):
        if attempt is not None:  # the attempt waits in that kind's queue: the sweeper's queued bound applies
            registry.claim_profile(model_id, attempt=attempt, hardware=kind, worker=None)
        dispatch(model_id, kind)
    return done + [r for r in parked if r.hardware != "cpu"]


def profile_variants(
    model_id: int,
    hardware: str,
    *,
    registry: RegistryClient,
    artifacts: ArtifactStore,
    settings: ProfilerSettings,
    attempt: int | None = None,
) -> list[VariantReport]:
    """Measure a model's variants of one hardware kind on a worker that has it."""
    model = registry.model(model_id)
    variants = [v for v in registry.variants(model_id) if v.hardware == hardware]
    signature = Signature.from_json(model.signature)
    inputs, labels = load_validation(model, signature, artifacts)
    return measure(
        model,
        signature,
        variants,
        registry=registry,
        artifacts=artifacts,
        settings=settings,
        inputs=inputs,
        labels=labels,
        attempt=attempt,
    )


SessionKey = tuple[str, str, str, str, str, int]
"""What variants that share one session share: artifact, runtime, provider, optimization, precision,
threads (they differ only by max batch)."""


def measure(
    model: ModelInternal,
    signature: Signature,
    variants: Iterable[VariantReport],
    *,
    registry: RegistryClient,
    artifacts: ArtifactStore,
    settings: ProfilerSettings,
    inputs: dict[str, np.ndarray],
    labels: np.ndarray,
    attempt: int | None = None,
) -> list[VariantReport]:
    """Measure each session configuration once; its variants differ only by max batch."""
    groups: dict[SessionKey, list[VariantReport]] = {}
    for v in variants:
        key = (v.artifact_digest, v.runtime, v.provider, v.optimization, v.precision, v.threads)
        groups.setdefault(key, []).append(v)
    done: list[VariantReport] = []
    for (digest, runtime, provider, optimization, precision, threads), group in groups.items():
        profiling = [v.model_copy(update={"status": "profiling"}) for v in group]
        registry.report_variants(model.id, profiling, attempt=attempt)
        spec = RuntimeSpec(
            runtime=runtime,
            provider=provider,
            threads=threads,
            optimization=optimization,
            precision=precision,
            input_names=tuple(s.name for s in signature.inputs),
            output_names=tuple(s.name for s in signature.outputs),
        )
        try:
            reports = _measure_group(
                model, group, artifacts.path(digest), spec, settings=settings, inputs=inputs, labels=labels
            )
        except Exception as exc:  # one bad configuration must not sink the other variants
            if not artifacts.exists(digest):  # the model was deleted under us: the task abandons it
                raise
            log.exception("profiling %s (%s, %s threads) failed", model.name, provider, threads)
            reports = [
                v.model_copy(update={"status": "failed", "status_reason": str(exc)[:300]}) for v in group
            ]
        registry.report_variants(model.id, reports, attempt=attempt)
        done.extend(reports)
    return done


def _measure_group(
    model: ModelInternal,
    group: list[VariantReport],
    path: Path,
    spec: RuntimeSpec,
    *,
    settings: ProfilerSettings,
    inputs: dict[str, np.ndarray],
    labels: np.ndarray,
) -> list[VariantReport]:
    """The profiled reports of variants that share the session `spec` builds from `path`: latency,
    accuracy and load time in this process, memory in a fresh one."""

    def factory() -> Runtime:
        return build_runtime(path, spec)

    # Each variant's own max batch too: a padded variant costs what its max batch costs.
    max_batches = [v.max_batch for v in group]
    sizes = batch_sizes_up_to(max(max_batches), max_batches)
    measured = measure_session(
        factory,
        threads=spec.threads,
        artifact_bytes=path.stat().st_size,
        inputs=inputs,
        labels=labels,
        task=model.task,
        batch_sizes=sizes,
        seconds_per_point=settings.profile_seconds_per_point,
        min_iterations=settings.profile_min_iterations,
        max_concurrency=max(1, min(settings.profile_interference_max, usable_cores())),
        concurrency_requests=settings.profile_concurrency_requests,
    )
    memory = _measure_memory(
        ProbeSpec(path=str(path), runtime=spec), inputs, sizes=sizes, floor=path.stat().st_size
    )
    return [_profiled(v, measured, settings, memory) for v in group]


def _measure_memory(
    spec: ProbeSpec, inputs: dict[str, np.ndarray], *, sizes: list[int], floor: int
) -> MemoryMeasurement | None:
    """The variant's memory from a fresh process (services/profiler/memory.py), at least its artifact's
    size; None, and the in-process RSS growth stands, when the probe fails (said in the log)."""
    try:
        memory = measure_memory(spec, inputs, sizes)
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        log.warning("memory probe of %s failed, keeping the in-process estimate: %s", spec.path, exc)
        return None
    by_batch = {b: max(v, floor) for b, v in memory.by_batch.items()}
    return replace(memory, peak_bytes=max(by_batch.values()), by_batch=by_batch)


def _at_padded_size(
    points: tuple[BatchLatency, ...], by_batch: dict[int, int]
) -> tuple[tuple[BatchLatency, ...], dict[int, int]]:
    """Each batch size's latency and memory as the padded size's: the variant's max batch, the
    largest of `points` (measured at it, `batch_sizes_up_to`)."""
    top = max(points, key=lambda p: p.batch, default=None)
    if top is None:
        return points, by_batch
    latency = tuple(replace(p, p50_ms=top.p50_ms, p99_ms=top.p99_ms) for p in points)
    memory = by_batch.get(top.batch)
    return latency, ({p.batch: memory for p in points} if memory is not None else by_batch)


def _profiled(
    v: VariantReport,
    m: SessionMeasurement,
    settings: ProfilerSettings,
    memory: MemoryMeasurement | None = None,
) -> VariantReport:
    points = tuple(p for p in m.latencies if p.batch <= v.max_batch)
    by_batch = memory.by_batch if memory is not None else {}
    if padded_batch(v.provider, v.max_batch) is not None:  # served at one size (providers.py)
        points, by_batch = _at_padded_size(points, by_batch)
    qps = round(saturation_qps(points, v.max_batch), 1)
    per_s = settings.prices.per_second(v.hardware, v.threads)
    return v.model_copy(
        update={
            "status": "ready",
            "status_reason": None,
            "accuracy": round(m.accuracy, 6),
            "load_ms": round(m.load_ms, 3),
            "latency": [
                LatencyPoint(
                    batch=p.batch, p50_ms=p.p50_ms, p99_ms=p.p99_ms, memory_bytes=by_batch.get(p.batch)
                )
                for p in points
            ],
            "saturation_qps": qps,
            # What this variant's largest batch needs, not the largest of its session's siblings.
            "peak_memory_bytes": max(
                (b for size, b in by_batch.items() if size <= v.max_batch), default=m.peak_memory_bytes
            ),
            "interference": [
                ConcurrencyPoint(
                    concurrency=c.concurrency,
                    p50_ms=c.p50_ms,
                    p99_ms=c.p99_ms,
                    qps=c.qps,
                    mean_ms=c.mean_ms,
                    requests=c.requests,
                )
                for c in m.interference
            ],
            "cost_per_s": per_s,
            "cost_per_query": cost_per_query(per_s, qps),
        }
    )
