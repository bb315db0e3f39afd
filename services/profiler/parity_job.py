"""The parity training job (ParM), as the profiler's Celery task runs it: the deployed model and its
validation set from the registry and the artifact store, the training (`parity_training`), progress
reported to the registry as it goes, the parity model stored as an artifact."""

from __future__ import annotations

import logging

from infaas.clients.registry import RegistryClient
from infaas.core.errors import Conflict
from infaas.core.settings.profiler import ProfilerSettings
from infaas.data.artifacts import ArtifactStore
from infaas.runtimes.onnx_torch import UnsupportedGraph
from infaas.schemas.parity import ParityReport
from infaas.wire.tensors import Signature
from services.profiler.parity_training import ParityConfig, train_parity
from services.profiler.service import load_validation

log = logging.getLogger("infaas.profiler.parity")


def train_for_model(
    model_id: int,
    k: int,
    generation: int,
    *,
    registry: RegistryClient,
    artifacts: ArtifactStore,
    settings: ProfilerSettings,
) -> ParityReport:
    """Train model `model_id`'s parity model for groups of `k` (training `generation`) and report it.
    A graph the trainer cannot run ends as `failed`, said why; a training superseded by a newer one
    (the registry answers 409) stops at its next progress report."""
    model = registry.model(model_id)
    signature = Signature.from_json(model.signature)
    config = ParityConfig(k=k, steps=settings.parity_train_steps)
    registry.report_parity(
        model_id, ParityReport(generation=generation, state="training", steps_total=config.steps)
    )
    losses: list[tuple[int, float]] = []

    def progress(step: int, loss: float) -> None:
        losses.append((step, loss))
        registry.report_parity(
            model_id,
            ParityReport(
                generation=generation,
                state="training",
                steps_done=step,
                steps_total=config.steps,
                losses=losses,
            ),
        )

    try:
        inputs, labels = load_validation(model, signature, artifacts)
        digest = model.onnx_digest or model.artifact_digest
        result = train_parity(
            artifacts.get(digest),
            inputs[signature.inputs[0].name],
            labels,
            task=model.task,
            config=config,
            progress=progress,
        )
    except Conflict:
        log.info("parity training %s of model %s was superseded; stopped", generation, model_id)
        raise
    except (UnsupportedGraph, ValueError) as exc:
        failed = ParityReport(generation=generation, state="failed", reason=str(exc)[:300], losses=losses)
        registry.report_parity(model_id, failed)
        return failed
    except Exception as exc:  # any other failure still ends the training as failed, said why
        log.exception("parity training %s of model %s failed", generation, model_id)
        reason = f"{type(exc).__name__}: {exc}"[:300]
        try:
            registry.report_parity(
                model_id, ParityReport(generation=generation, state="failed", reason=reason, losses=losses)
            )
        except Exception:
            log.exception("could not report the failed parity training of model %s", model_id)
        raise
    done = ParityReport(
        generation=generation,
        state="ready",
        steps_done=config.steps,
        steps_total=config.steps,
        losses=result.losses,
        metric="accuracy" if result.metric == "accuracy" else "r2",
        deployed_score=result.deployed_score,
        degraded_score=result.degraded_score,
        holdout_rows=result.holdout_rows,
        train_rows=result.train_rows,
        train_seconds=result.train_seconds,
        artifact_digest=artifacts.put(result.onnx_bytes),
    )
    registry.report_parity(model_id, done)
    return done
