"""Registry domain logic: apps and keys, model registration, variant reports, workers."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import redis
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from infaas.core.costs import PriceTable
from infaas.core.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    Unauthorized,
    Unavailable,
)
from infaas.data import store
from infaas.data.artifacts import ArtifactStore, digest_of
from infaas.data.db import ApiKeyRow, AppRow, ModelRow, ParityModelRow, VariantRow, WorkerRow, utcnow
from infaas.data.events import event_row
from infaas.policy.slo_miss import rule
from infaas.runtimes.hardware import KINDS
from infaas.schemas.api import (
    AppCreate,
    AppUpdate,
    HardwareKind,
    KeyVerify,
    ModelMetadata,
    Principal,
    StatusUpdate,
    WorkerRegistration,
)
from infaas.schemas.parity import Redundancy
from infaas.schemas.selection import Selection
from services.registry import repository as repo
from services.registry.intake.checks import check_upload
from services.registry.parity import publish as parity_publish
from services.registry.parity import training as parity
from services.registry.profiles import attempts as profile_attempts
from services.registry.profiles.attempts import ProfileQueue
from services.registry.selection import candidates


def hash_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(key.encode()).hexdigest()


def new_key(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def ensure_admin_key(session: Session, key: str) -> None:
    """Record the admin key's hash (idempotent); the plain key is never stored."""
    digest = hash_key(key)
    if not repo.admin_key_exists(session, digest):
        session.add(ApiKeyRow(app_id=None, role="admin", key_hash=digest, prefix=key[:8]))
        session.commit()


def verify_key(session: Session, body: KeyVerify) -> Principal:
    row = repo.key_by_hash(session, hash_key(body.key))
    # compare_digest on the hashes keeps the check constant-time in the key.
    if row is None or not hmac.compare_digest(row.key_hash, hash_key(body.key)):
        raise Unauthorized("unknown API key")
    if row.role == "admin":
        return Principal(role="admin")
    app = session.get(AppRow, row.app_id)
    if app is None:
        raise Unauthorized("the key's app no longer exists")
    return Principal(role="app", app=app.name)


def require_admin(principal: Principal) -> None:
    if principal.role != "admin":
        raise Forbidden("this operation needs the admin key")


def app_for(session: Session, principal: Principal, name: str) -> AppRow:
    """The app, if it exists (404) and the caller may see it (403)."""
    app = repo.app_by_name(session, name)
    if app is None:
        raise NotFound(f"no app {name!r}", app=name)
    if principal.role != "admin" and principal.app != name:
        raise Forbidden(f"this key belongs to app {principal.app!r}, not {name!r}")
    return app


def check_slo_policy(policy: str, default_output: object) -> None:
    """An SLO policy that answers the app's default output needs one (`infaas.policy.slo_miss`)."""
    if rule(policy).uses_default_output and not default_output:
        raise InvalidInput(f"slo_policy {policy!r} needs default_output", field="default_output")


def create_app(session: Session, principal: Principal, body: AppCreate) -> tuple[AppRow, str]:
    require_admin(principal)
    check_slo_policy(body.slo_policy, body.default_output)
    if repo.app_by_name(session, body.name) is not None:
        raise Conflict(f"app {body.name!r} already exists", app=body.name)
    app = AppRow(
        name=body.name,
        default_latency_ms=body.default_latency_ms,
        default_min_accuracy=body.default_min_accuracy,
        slo_policy=body.slo_policy,
        default_output=body.default_output,
        cache=body.cache,
        prefer=body.prefer,
        lossy=body.lossy,
        criticality=body.criticality,
        warm_instances=body.warm_instances,
    )
    key = new_key("inf")
    session.add(app)
    try:
        session.flush()
        session.add(ApiKeyRow(app_id=app.id, role="app", key_hash=hash_key(key), prefix=key[:8]))
        session.commit()
    except IntegrityError as exc:  # a concurrent create of the same name
        session.rollback()
        raise Conflict(f"app {body.name!r} already exists", app=body.name) from exc
    return app, key


def register_model(
    session: Session,
    artifacts: ArtifactStore,
    queue: ProfileQueue,
    principal: Principal,
    meta: ModelMetadata,
    model_bytes: bytes,
    validation_bytes: bytes,
    *,
    parity_queue: parity.ParityQueue | None = None,
) -> ModelRow:
    """Validate, store, record and enqueue profiling (and, in an app with parity redundancy, the parity
    training); on any failure nothing stays behind. An app with parity redundancy takes only models
    that can have a parity model (422 naming why)."""
    app = app_for(session, principal, meta.app)
    if repo.model_by_name(session, meta.name) is not None:
        raise Conflict(f"model {meta.name!r} already exists", model=meta.name)
    checked = check_upload(model_bytes, validation_bytes, meta.task)
    redundancy = Redundancy.model_validate(app.redundancy)
    if redundancy.kind == "parity":
        why = parity.ineligible_upload(meta.task, checked.signature, checked.onnx_bytes)
        if why is not None:
            raise InvalidInput(
                f"app {app.name!r} has parity redundancy, and model {meta.name!r} cannot have a parity "
                f"model: {why}",
                model=meta.name,
            )

    created: list[str] = []
    artifact_digest = _put_new(artifacts, checked.model_bytes, created)
    validation_digest = _put_new(artifacts, checked.validation_bytes, created)
    onnx_digest = _put_new(artifacts, checked.onnx_bytes, created) if checked.onnx_bytes else None
    ts_digest = _put_new(artifacts, checked.torchscript_bytes, created) if checked.torchscript_bytes else None
    row = ModelRow(
        onnx_digest=onnx_digest,
        torchscript_digest=ts_digest,
        name=meta.name,
        app_id=app.id,
        task=meta.task,
        format=checked.fmt,
        status="registered",
        artifact_digest=artifact_digest,
        validation_digest=validation_digest,
        size_bytes=len(checked.model_bytes),
        signature=checked.signature.to_json(),
        validation_rows=checked.rows,
    )
    attempt = profile_attempts.start_attempt(row, fresh=True)
    try:
        session.add(row)
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        _discard(artifacts, created)
        raise Conflict(f"model {meta.name!r} already exists", model=meta.name) from exc
    try:
        queue.enqueue(row.id, "cpu", attempt)
    except Exception as exc:  # broker down: undo, so the caller can simply retry
        session.delete(row)
        session.commit()
        _discard(artifacts, created)
        raise Unavailable(
            "profiling could not be queued; nothing was registered", reason=type(exc).__name__
        ) from exc
    if redundancy.kind == "parity" and parity_queue is not None:
        parity.start(session, app, redundancy, parity_queue, artifacts)  # the new model's parity training
    return row


def _put_new(artifacts: ArtifactStore, data: bytes, created: list[str]) -> str:
    """Store bytes, remembering digests this call created so a failure can remove exactly those."""
    digest = digest_of(data)
    if not artifacts.exists(digest):
        artifacts.put(data)
        created.append(digest)
    return digest


def _discard(artifacts: ArtifactStore, digests: list[str]) -> None:
    for digest in digests:
        artifacts.delete(digest)


def model_row(session: Session, principal: Principal, name: str) -> ModelRow:
    row = repo.model_by_name(session, name)
    if row is None:
        raise NotFound(f"no model {name!r}", model=name)
    app = session.get(AppRow, row.app_id)
    if principal.role != "admin" and (app is None or app.name != principal.app):
        raise Forbidden(f"model {name!r} belongs to another app")
    return row


def set_status(session: Session, model_id: int, update: StatusUpdate, *, attempt: int | None = None) -> None:
    row = repo.model_by_id(session, model_id)
    if row is None:
        raise NotFound(f"no model {model_id}")
    profile_attempts.check_attempt(row, attempt)
    row.status = update.status
    row.status_reason = update.reason
    session.commit()


def delete_model(
    session: Session, r: redis.Redis, artifacts: ArtifactStore, principal: Principal, name: str
) -> None:
    row = model_row(session, principal, name)
    in_use = repo.pipelines_using(session, row)
    if in_use:
        raise Conflict(
            f"model {name!r} is a stage of pipelines {in_use}: delete those first", pipelines=in_use
        )
    app = session.get(AppRow, row.app_id)
    variant_rows = repo.variants(session, row.id)
    digests = {row.artifact_digest, row.validation_digest, *(v.artifact_digest for v in variant_rows)}
    parity_row = session.get(ParityModelRow, row.id)
    if parity_row is not None and parity_row.artifact_digest:
        digests.add(parity_row.artifact_digest)
    vids = [v.id for v in variant_rows]
    parity_publish.withdraw(r, name, parity_row)
    # Explicit statements, children first: the ORM has no relationship to order the deletes.
    session.execute(delete(ParityModelRow).where(ParityModelRow.model_id == row.id))
    session.execute(delete(VariantRow).where(VariantRow.model_id == row.id))
    session.execute(delete(ModelRow).where(ModelRow.id == row.id))
    session.add(  # in the deletion's own transaction: no deletion without its event, nor the reverse
        event_row(
            kind="registry",
            action="delete",
            outcome="done",
            reason=(
                f"model {name!r} deleted: {len(vids)} variant(s) withdrawn; executors unload their "
                "instances at their next heartbeat, and its name may be registered again"
            ),
            model=name,
            details={"app": app.name if app else None, "variants": vids},
        )
    )
    session.commit()
    store.remove_variants(r, model=name, app=app.name if app else "", vids=vids)
    for digest in digests:
        if not repo.digest_in_use(session, digest):
            artifacts.delete(digest)


def register_worker(session: Session, body: WorkerRegistration) -> WorkerRow:
    row = session.get(WorkerRow, body.id)
    if row is None:
        row = WorkerRow(id=body.id)
        session.add(row)
    row.hardware = body.hardware
    row.url = body.url
    row.cores = body.cores
    row.memory_bytes = body.memory_bytes
    row.last_seen_at = utcnow()
    session.commit()
    return row


def hardware_kinds(
    session: Session, r: redis.Redis, prices: PriceTable, *, now: float, ttl_s: float
) -> list[HardwareKind]:
    """Each hardware kind: whether anything live has it, and if not, why not."""
    workers = repo.workers(session)
    live_workers = {w.id for w in workers if r.exists(store.worker_key(w.id))}
    profilers = store.live_profilers(r, now=now, ttl_s=ttl_s)
    unit = {"cpu": prices.cpu_vcpu_hour, "cuda": prices.gpu_hour, "neuron": prices.neuron_core_hour}
    out = []
    for kind in KINDS:
        n_workers = sum(1 for w in workers if w.hardware == kind and w.id in live_workers)
        n_profilers = sum(1 for p in profilers.values() if kind in p["kinds"])
        reasons = sorted({p["unavailable"][kind] for p in profilers.values() if kind in p["unavailable"]})
        available = n_workers + n_profilers > 0
        reason = None
        if not available:
            reason = "; ".join(reasons) if reasons else "no live worker or profiler has this hardware"
        out.append(
            HardwareKind(
                kind=kind,
                available=available,
                reason=reason,
                workers=n_workers,
                profilers=n_profilers,
                price_per_hour=unit[kind],
            )
        )
    return out


def update_app(
    session: Session,
    principal: Principal,
    name: str,
    body: AppUpdate,
    *,
    artifacts: ArtifactStore,
    parity_queue: parity.ParityQueue,
    r: redis.Redis | None = None,
) -> AppRow:
    """Change an app's defaults and policies (its own key or the admin key). Turning parity redundancy on
    is refused (422, nothing changed) when a model cannot have a parity model, and queues the trainings."""
    app = app_for(session, principal, name)
    changes = body.model_dump(exclude_unset=True)
    output = changes.get("default_output", app.default_output)
    check_slo_policy(changes.get("slo_policy", app.slo_policy), output)
    if body.redundancy is not None:
        parity.check(session, app, body.redundancy, artifacts)
    if body.selection is not None:
        candidates.check(session, app, body.selection, default_output=output)
    elif "default_output" in changes and not output and Selection.model_validate(app.selection).threshold:
        raise InvalidInput("the app's selection threshold needs a default_output", field="default_output")
    if body.redundancy is not None and r is not None:
        # Checked: the published parity variants stop serving before the app's change is committed.
        for model in repo.models(session, app_id=app.id):
            if body.redundancy.k != app.redundancy.get("k") or body.redundancy.kind == "none":
                parity_publish.withdraw(r, model.name, session.get(ParityModelRow, model.id))
    for field, value in changes.items():
        setattr(app, field, value)
    session.commit()
    if body.redundancy is not None:
        parity.start(session, app, body.redundancy, parity_queue, artifacts)
    return app
