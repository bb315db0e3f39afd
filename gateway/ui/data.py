"""What the admin UI shows, gathered from the system: the registry (typed client), Redis (instance
details), the serving processes' `/metrics`, and the gateway's own API for resources other services
serve (jobs, events), called in-process so the UI shows exactly what API clients see. All of it is read
as the admin, with what the gateway process holds: nothing the browser sends is passed on."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import redis.asyncio as aioredis
from fastapi import Request

from gateway.state import GatewayState
from gateway.ui import live, timeline
from infaas.clients.scheduler import SchedulerClient
from infaas.core.credentials import internal_headers
from infaas.data import store
from infaas.data.heartbeats import InstanceReport, instance_reports
from infaas.metrics.exposition import exposition, families
from infaas.schemas.api import ADMIN, Worker

SCRAPE_TIMEOUT = httpx.Timeout(2.0, connect=0.5)


def gateway_state(request: Request) -> GatewayState:
    state: GatewayState = request.app.state.gateway
    return state


@dataclass(frozen=True)
class InstanceRow:
    worker: str
    variant: str
    state: str
    reason: str | None
    pending: int | None
    batch_limit: int | None
    batch_delay_ms: float | None = None
    """How long its short batches wait for batch mates, and why (`batch_delay`: chosen by the instance)."""
    batch_delay: str | None = None
    concurrency: int | None = None
    """Batches it runs at once (the planner's SERF configuration)."""


async def instances(state: GatewayState, workers: list[Worker]) -> list[InstanceRow]:
    """Every instance the workers report, with the reason for its state (from their heartbeats in
    Redis; the registry's worker list has the state alone)."""
    details: dict[str, dict[str, InstanceReport]] = {}
    if state.settings.redis_url:
        r = aioredis.Redis.from_url(state.settings.redis_url)
        try:
            pipe = r.pipeline(transaction=False)
            for w in workers:
                pipe.hgetall(store.instances_key(w.id))
            for w, found in zip(workers, await pipe.execute(), strict=True):
                try:
                    details[w.id] = instance_reports(found)
                except ValueError:  # a record this version cannot read: its state alone is shown
                    details[w.id] = {}
        finally:
            await r.aclose()
    rows = []
    for w in workers:
        for vid, instance_state in sorted(w.instances.items()):
            report = details.get(w.id, {}).get(vid)
            if report is None:  # not in the heartbeat (gone since the registry's list was read)
                rows.append(InstanceRow(w.id, vid, instance_state, None, None, None))
                continue
            rows.append(
                InstanceRow(
                    worker=w.id,
                    variant=vid,
                    state=instance_state,
                    reason=report.reason,
                    pending=report.pending,
                    batch_limit=report.batch_limit,
                    batch_delay_ms=report.batch_delay_ms,
                    batch_delay=report.batch_delay,
                    concurrency=report.concurrency,
                )
            )
    return rows


@dataclass
class Scrape:
    samples: live.Samples
    sources: list[str] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)


async def scrape(state: GatewayState, workers: list[Worker], http: httpx.AsyncClient | None = None) -> Scrape:
    """Merged `/metrics` of this gateway (with its embedded scheduler), the scheduler service when it
    runs apart, and every live executor. `http`: a client kept by the caller (the load sampler: a new
    client per sample built an SSL context on the event loop, ~95 ms every 5 s, in the query path's
    process); without one, a client for this scrape only."""
    targets = {f"executor {w.id}": f"{w.url}/metrics" for w in workers if w.live}
    if isinstance(state.scheduler, SchedulerClient):  # the scheduler is a service of its own
        targets["scheduler"] = f"{state.settings.service_url('scheduler')}/metrics"
    result = Scrape(samples={}, sources=["gateway"])
    parts = [live.parse(exposition().decode())]
    if http is None:
        async with scrape_client(state) as own:
            answers = await asyncio.gather(*(own.get(u) for u in targets.values()), return_exceptions=True)
    else:
        answers = await asyncio.gather(*(http.get(u) for u in targets.values()), return_exceptions=True)
    for name, answer in zip(targets, answers, strict=True):
        if isinstance(answer, httpx.Response) and answer.status_code == 200:
            parts.append(live.parse(answer.text))
            result.sources.append(name)
        else:
            result.unreachable.append(name)
    result.samples = live.merge(parts)
    return result


def scrape_client(state: GatewayState) -> httpx.AsyncClient:
    # Services' /metrics are behind the internal key (infaas/http/internal_auth.py).
    return httpx.AsyncClient(timeout=SCRAPE_TIMEOUT, headers=internal_headers(state.settings.internal_key))


def load_sampler(state: GatewayState) -> timeline.LoadSampler:
    """The sampler behind the load page's charts: instances per variant (the embedded dispatcher's
    snapshot, or the workers as the admin reads them when the scheduler runs apart), and the chart
    series from this process and, when it runs apart, the scheduler service, over one client kept for
    all its samples (closed when the sampler stops)."""
    http: httpx.AsyncClient | None = None

    async def serving() -> dict[str, int]:
        # The embedded dispatcher's snapshot holds them: no registry request (an HTTP call, a thread
        # and SQL there) every sample, on the cores that serve queries.
        held = state.scheduler.serving()
        return held if held is not None else timeline.serving_instances(await state.registry.workers(ADMIN))

    async def samples() -> live.Samples:
        # Only the series a chart point needs, read where they are: this process's own collected
        # families (no text rendered or parsed), and the scheduler service's when it runs apart (its
        # text filtered before parsing). Rendering, scraping and parsing every process's full exposition
        # took ~15 ms of the query path's event loop every sample (bench/goals/peers/ab_setting.py).
        nonlocal http
        own = live.collected(families(), live.CHART_SAMPLES)
        if not isinstance(state.scheduler, SchedulerClient):
            return own
        if http is None:
            http = scrape_client(state)
        answer = await http.get(f"{state.settings.service_url('scheduler')}/metrics")
        answer.raise_for_status()
        return live.merge([own, live.parse_only(answer.text, live.CHART_SAMPLES)])

    async def close() -> None:
        if http is not None:
            await http.aclose()

    return timeline.LoadSampler(
        instances=serving,
        scrape=samples,
        interval_s=state.settings.ui_load_sample_s,
        history_s=state.settings.ui_load_history_s,
        on_stop=close,
    )


def load_charts(request: Request) -> timeline.LoadCharts | None:
    """Charts of the last minutes from this process's sampler; None when sampling is off."""
    sampler: timeline.LoadSampler | None = getattr(request.app.state, "ui_load", None)
    if sampler is None or sampler.interval_s <= 0:
        return None
    settings = gateway_state(request).settings
    return timeline.charts(
        sampler.ring.points, time.time(), interval_s=sampler.interval_s, history_s=settings.ui_load_history_s
    )


def history(request: Request) -> live.ScrapeHistory:
    found: live.ScrapeHistory | None = getattr(request.app.state, "ui_scrapes", None)
    if found is None:
        found = request.app.state.ui_scrapes = live.ScrapeHistory()
    return found


@dataclass(frozen=True)
class LoadPage:
    window: live.Load | None
    since_start: live.Load
    scrape: Scrape


async def load_page(request: Request, workers: list[Worker]) -> LoadPage:
    now = time.monotonic()
    result = await scrape(gateway_state(request), workers)
    base = history(request).add(now, result.samples)
    window = None
    if base is not None:
        window = live.load(live.difference(result.samples, base[1]), now - base[0])
    return LoadPage(window=window, since_start=live.load(result.samples, None), scrape=result)


@dataclass(frozen=True)
class ApiAnswer:
    """A gateway API resource as the UI got it: the JSON, or why there is none."""

    status: int
    body: Any

    @property
    def available(self) -> bool:
        return self.status == 200


async def api_get(request: Request, path: str, params: dict[str, str] | None = None) -> ApiAnswer:
    """GET one of this gateway's own API routes in-process, with the admin key this gateway is
    configured with (`INFAAS_ADMIN_KEY`): nothing the browser sent is used to call the API."""
    key = gateway_state(request).settings.admin_key
    if not key:
        message = "this gateway has no admin key to read it with: set INFAAS_ADMIN_KEY"
        return ApiAnswer(503, {"error": {"code": "unavailable", "message": message}})
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://gateway.internal", timeout=10.0
    ) as client:
        response = await client.get(path, params=params, headers={"Authorization": f"Bearer {key}"})
    try:
        body = response.json()
    except ValueError:
        body = None
    return ApiAnswer(response.status_code, body)
