"""The model repository over HTTP, for executors and profilers on machines that do not share the
registry's artifact directory (`infaas.data.artifacts.CachedArtifactStore` on their side).

Artifacts are named by digest: a download is verified by the receiver, an upload here, so neither side
trusts the network or the other with the bytes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from infaas.core.errors import InvalidInput, PayloadTooLarge
from infaas.data.artifacts import digest_of
from services.registry.deps import ArtifactsDep, SettingsDep

router = APIRouter(prefix="/internal/artifacts", include_in_schema=False)

Digest = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$")]


@router.get("/{digest}")
def download(digest: Digest, artifacts: ArtifactsDep) -> FileResponse:
    # Served from the file, in chunks: a model of hundreds of MB never sits in this process's memory.
    return FileResponse(artifacts.path(digest), media_type="application/octet-stream")


@router.head("/{digest}")
def exists(digest: Digest, artifacts: ArtifactsDep) -> Response:
    return Response(status_code=200 if artifacts.exists(digest) else 404)


@router.put("/{digest}", status_code=204)
async def upload(
    digest: Digest, request: Request, artifacts: ArtifactsDep, settings: SettingsDep
) -> Response:
    """A profiler's new variant or a job chunk's outputs. Variants are built from a model under
    `max_model_bytes` and an optimized graph may grow a little (constant folding); a chunk's outputs are
    a slice of a job's, so the larger of twice the one and the job input limit bounds both."""
    limit = max(2 * settings.max_model_bytes, settings.job_max_input_bytes)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"the artifact is larger than {limit} bytes", limit=limit)
    data = bytes(body)
    if digest_of(data) != digest:
        raise InvalidInput("the artifact's bytes do not hash to its digest", digest=digest, size=len(data))
    await run_in_threadpool(artifacts.put, data)
    return Response(status_code=204)
