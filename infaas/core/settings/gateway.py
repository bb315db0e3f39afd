"""Settings the gateway reads: its bind address, request limits, auth caches and the admin UI."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class GatewaySettings(CommonSettings):
    """Fields of the public gateway (`gateway/`)."""

    gateway_host: str = "0.0.0.0"
    """Bind address of the gateway, the single public port."""

    scheduler_mode: Literal["embedded", "remote"] = "embedded"
    """`embedded`: each gateway process runs the scheduler's dispatcher itself (one HTTP hop less per
    query; see docs/benchmarks.md); `remote`: the gateway calls the scheduler service over HTTP."""

    auth_failures_per_minute: int = 30
    """Failed key verifications the gateway takes from one client address per minute (a burst of as
    many, refilled evenly); beyond that it answers 429 with `Retry-After` to every keyed request from it."""

    max_request_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    """Largest query body the gateway accepts (413 above). The scheduler's and executors' push frames
    are bounded by a multiple of it."""

    max_query_rows: int = Field(default=1024, ge=1)
    """Largest batch one online query may carry (422 above)."""

    auth_cache_ttl_s: float = Field(default=10.0, ge=0)
    """How long the gateway trusts a verified key (and a known model signature) before asking again.
    The planner drains a re-planned pipeline's superseded instances only after it, when every gateway
    serves the new plan."""

    auth_cache_keep_warm_s: float = Field(default=300.0, ge=0)
    """A key, app, model or pipeline a query used within this long is re-verified in the background
    before its `auth_cache_ttl_s` runs out, so that an app sending a query every minute does not wait
    for the registry on each one. 0: reloaded only when a query finds it old or expired."""

    auth_stale_max_s: float = Field(default=300.0, ge=0)
    """While the registry cannot be reached (refused, timed out, 5xx), the gateway still answers with a
    key, app or model the registry confirmed at most this long ago (past `auth_cache_ttl_s`), and says
    so in `x-infaas-stale-auth`; a key never seen, or answered unknown, is not served. 0: never stale."""

    ui_session_ttl_s: float = Field(default=8 * 3600, gt=0)
    """Lifetime of an admin UI session from sign-in (kept in Redis; the cookie's Max-Age too): after it,
    or after signing out, the browser is sent back to sign in."""

    ui_load_sample_s: float = Field(default=5.0, ge=0)
    """How often each gateway process samples the serving processes' metrics for the admin UI's load
    charts (0: never; the load page then shows only its own window)."""

    ui_load_history_s: float = Field(default=600.0, gt=0)
    """How far back the load charts reach: the in-memory ring holds this many seconds of samples."""
