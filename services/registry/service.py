"""Registry domain logic: apps and keys, model registration, variant reports, workers."""

from __future__ import annotations

import hashlib
import hmac
import io
import secrets
import zipfile
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnx
import redis
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from infaas import store
from infaas.artifacts import ArtifactStore, digest_of
from infaas.costs import PriceTable
from infaas.db import ApiKeyRow, AppRow, ModelRow, VariantRow, WorkerRow, utcnow
from infaas.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    InvalidModel,
    NotFound,
    Unauthorized,
    Unavailable,
)
from infaas.hardware import KINDS
from infaas.runtimes import OnnxRuntime
from infaas.schemas import (
    AppCreate,
    HardwareKind,
    KeyVerify,
    ModelMetadata,
    Principal,
    StatusUpdate,
    WorkerRegistration,
)
from infaas.tensors import Signature, load_onnx, read_signature
from services.registry import repository as repo

SUPPORTED_TASKS = frozenset({"classification"})


class ProfileQueue(Protocol):
    def enqueue(self, model_id: int, hardware: str) -> None: ...


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


def create_app(session: Session, principal: Principal, body: AppCreate) -> tuple[AppRow, str]:
    require_admin(principal)
    if repo.app_by_name(session, body.name) is not None:
        raise Conflict(f"app {body.name!r} already exists", app=body.name)
    app = AppRow(
        name=body.name,
        default_latency_ms=body.default_latency_ms,
        default_min_accuracy=body.default_min_accuracy,
        slo_policy=body.slo_policy,
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


@dataclass(frozen=True)
class CheckedUpload:
    model_bytes: bytes
    validation_bytes: bytes
    signature: Signature
    rows: int
    fmt: str


def check_upload(model_bytes: bytes, validation_bytes: bytes, task: str) -> CheckedUpload:
    """Everything that can be wrong with an upload is found here, before anything is written."""
    if task not in SUPPORTED_TASKS:
        raise InvalidInput(f"task {task!r} is not supported; supported: {sorted(SUPPORTED_TASKS)}")
    if model_bytes[:2] == b"PK":
        raise InvalidModel("PyTorch archives are not accepted yet: export the model to ONNX")
    model = load_onnx(model_bytes)
    signature = read_signature(model)
    arrays = load_validation(validation_bytes, signature)
    smoke_test(model, signature, arrays)
    return CheckedUpload(
        model_bytes=model_bytes,
        validation_bytes=validation_bytes,
        signature=signature,
        rows=len(arrays["y"]),
        fmt="onnx",
    )


def load_validation(data: bytes, signature: Signature) -> dict[str, np.ndarray]:
    """Read a validation `.npz` without ever unpickling, and check it against the signature."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InvalidInput(
            "the validation file is not a NumPy .npz archive (object arrays refused)", reason=str(exc)[:200]
        ) from exc
    if "y" not in arrays:
        raise InvalidInput("the validation set needs labels under key 'y'")
    names = ["x"] if len(signature.inputs) == 1 else [s.name for s in signature.inputs]
    out: dict[str, np.ndarray] = {"y": arrays["y"]}
    for name, spec in zip(names, signature.inputs, strict=True):
        if name not in arrays:
            raise InvalidInput(f"the validation set needs inputs under key {name!r}")
        x = arrays[name]
        if x.ndim != len(spec.shape) or any(
            e is not None and e != g for g, e in zip(x.shape[1:], spec.shape[1:], strict=False)
        ):
            raise InvalidInput(
                f"validation {name!r} has shape {list(x.shape)}, the model expects {list(spec.shape)}"
            )
        if x.dtype.kind not in "fiub":
            raise InvalidInput(f"validation {name!r} must be numeric")
        out[spec.name] = x.astype(spec.dtype, copy=False)
    y = out["y"]
    if y.ndim != 1 or y.dtype.kind not in "iu":
        raise InvalidInput("validation labels 'y' must be a 1-D array of integer class ids")
    if len(y) == 0 or any(len(out[s.name]) != len(y) for s in signature.inputs):
        raise InvalidInput("validation inputs and labels must have the same, non-zero number of rows")
    return out


def smoke_test(model: onnx.ModelProto, signature: Signature, arrays: dict[str, np.ndarray]) -> None:
    """Run the model on two validation rows: a graph the checker accepts can still fail to run."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model.SerializeToString())
        runtime = OnnxRuntime(path, threads=1)
        try:
            runtime.load()
            outputs = runtime.run({s.name: arrays[s.name][:2] for s in signature.inputs})
        except Exception as exc:  # ONNX Runtime raises its own exception types for bad graphs
            raise InvalidModel("the model does not run on the validation set", reason=str(exc)[:300]) from exc
        finally:
            runtime.unload()
    first = next(iter(outputs.values()))
    if first.ndim != 2 or first.shape[0] != 2:
        raise InvalidModel(
            "a classification model must output (batch, classes) scores", got_shape=list(first.shape)
        )


def register_model(
    session: Session,
    artifacts: ArtifactStore,
    queue: ProfileQueue,
    principal: Principal,
    meta: ModelMetadata,
    model_bytes: bytes,
    validation_bytes: bytes,
) -> ModelRow:
    """Validate, store, record and enqueue profiling; on any failure nothing stays behind."""
    app = app_for(session, principal, meta.app)
    if repo.model_by_name(session, meta.name) is not None:
        raise Conflict(f"model {meta.name!r} already exists", model=meta.name)
    checked = check_upload(model_bytes, validation_bytes, meta.task)

    created: list[str] = []
    artifact_digest = _put_new(artifacts, checked.model_bytes, created)
    validation_digest = _put_new(artifacts, checked.validation_bytes, created)
    row = ModelRow(
        onnx_digest=artifact_digest if checked.fmt == "onnx" else None,
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
    try:
        session.add(row)
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        _discard(artifacts, created)
        raise Conflict(f"model {meta.name!r} already exists", model=meta.name) from exc
    try:
        queue.enqueue(row.id, "cpu")
    except Exception as exc:  # broker down: undo, so the caller can simply retry
        session.delete(row)
        session.commit()
        _discard(artifacts, created)
        raise Unavailable(
            "profiling could not be queued; nothing was registered", reason=type(exc).__name__
        ) from exc
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


def set_status(session: Session, model_id: int, update: StatusUpdate) -> None:
    row = repo.model_by_id(session, model_id)
    if row is None:
        raise NotFound(f"no model {model_id}")
    row.status = update.status
    row.status_reason = update.reason
    session.commit()


def delete_model(
    session: Session, r: redis.Redis, artifacts: ArtifactStore, principal: Principal, name: str
) -> None:
    row = model_row(session, principal, name)
    app = session.get(AppRow, row.app_id)
    variant_rows = repo.variants(session, row.id)
    digests = {row.artifact_digest, row.validation_digest, *(v.artifact_digest for v in variant_rows)}
    vids = [v.id for v in variant_rows]
    # Explicit statements, children first: the ORM has no relationship to order the two deletes.
    session.execute(delete(VariantRow).where(VariantRow.model_id == row.id))
    session.execute(delete(ModelRow).where(ModelRow.id == row.id))
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


def reprofile(session: Session, queue: ProfileQueue, row: ModelRow) -> None:
    """Profile a model again (after hardware changed, or to check figures are stable)."""
    if row.status == "profiling" or row.status == "registered":
        raise Conflict(f"model {row.name!r} is being profiled already", status=row.status)
    queue.enqueue(row.id, "cpu")
    row.status = "profiling"
    row.status_reason = None
    session.commit()


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
