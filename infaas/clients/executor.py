"""Typed client of an executor's control API (load / unload instances)."""

from __future__ import annotations

import httpx
import numpy as np

from infaas.clients.base import raise_for_error, segment, unavailable
from infaas.core.credentials import internal_headers
from infaas.wire.frames import decode_frame, encode_frame


class ExecutorClient:
    """One pooled client for every executor; the worker's URL is given per call."""

    def __init__(
        self,
        *,
        internal_key: str,
        load_timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(load_timeout_s, connect=2.0),
            transport=transport,
            headers=internal_headers(internal_key),
        )

    async def load(
        self, worker_url: str, variant_id: str, *, slo_ms: float | None = None
    ) -> dict[str, object]:
        """Load an instance of a variant; returns once it is active (or raises). `slo_ms`: the model's
        latency SLO, the instance's overload threshold (SERF's capacity under it)."""
        body: dict[str, object] = {"variant": variant_id}
        if slo_ms is not None:
            body["slo_ms"] = slo_ms
        try:
            response = await self._http.post(f"{worker_url}/v1/instances", json=body)
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        data: dict[str, object] = response.json()
        return data

    async def unload(self, worker_url: str, variant_id: str) -> None:
        try:
            response = await self._http.delete(f"{worker_url}/v1/instances/{segment(variant_id)}")
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)

    async def drain_instance(self, worker_url: str, variant_id: str) -> dict[str, object]:
        """Take one instance out of service after serving every query it was sent (no query dropped);
        answers `{variant, served_after_stop}`."""
        try:
            response = await self._http.post(f"{worker_url}/v1/instances/{segment(variant_id)}/drain")
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        data: dict[str, object] = response.json()
        return data

    async def set_concurrency(self, worker_url: str, variant_id: str, concurrency: int) -> dict[str, object]:
        """How many batches an instance runs at once; answers `{variant, concurrency, previous}`."""
        try:
            response = await self._http.post(
                f"{worker_url}/v1/instances/{segment(variant_id)}/concurrency",
                json={"concurrency": concurrency},
            )
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        data: dict[str, object] = response.json()
        return data

    async def drain_worker(self, worker_url: str, *, exit: bool = True) -> dict[str, object]:
        """Drain every instance of a worker, refuse new ones and (by default) stop its process."""
        try:
            response = await self._http.post(f"{worker_url}/v1/drain", params={"exit": str(exit).lower()})
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        data: dict[str, object] = response.json()
        return data

    async def aclose(self) -> None:
        await self._http.aclose()


class OfflineExecutorClient:
    """Blocking client of an executor's low-priority batch endpoint, for the jobs worker."""

    def __init__(
        self, *, internal_key: str, timeout_s: float = 120.0, http: httpx.Client | None = None
    ) -> None:
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=2.0))
        self._http.headers.update(internal_headers(internal_key))

    def run(self, worker_url: str, variant_id: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run rows of one job chunk on a worker, below its online queries; outputs by name."""
        frame = encode_frame({"variant": variant_id}, inputs)
        try:
            response = self._http.post(
                f"{worker_url}/internal/offline/run",
                content=frame,
                headers={"content-type": "application/octet-stream"},
            )
        except httpx.HTTPError as exc:
            raise unavailable("executor", exc) from exc
        raise_for_error(response)
        _, outputs = decode_frame(response.content)
        return outputs

    def close(self) -> None:
        self._http.close()
