"""The internal key: the shared secret every service of one suite holds, and how it travels.

Internal HTTP requests carry it in `INTERNAL_HEADER` (or as a bearer token, which is what Prometheus's
`authorization` scrape setting sends); push connections send it in their first frame
(`infaas.wire.handshake`). Only the gateway's routes are public; everything else asks for it
(`infaas.http.internal_auth`).
"""

from __future__ import annotations

import hmac

INTERNAL_HEADER = "x-infaas-internal"


def internal_headers(key: str) -> dict[str, str]:
    """The header an internal call carries (none without a key: the callee then refuses it, saying why)."""
    return {INTERNAL_HEADER: key} if key else {}


def key_matches(offered: bytes, key: bytes) -> bool:
    """Whether `offered` is the internal key, in time that does not depend on where they differ. An
    empty key matches nothing: a service without one refuses every internal request."""
    return bool(key) and hmac.compare_digest(offered, key)


def carries_key(header: bytes | None, authorization: bytes | None, key: bytes) -> bool:
    """Whether a request carries the internal key: in `INTERNAL_HEADER` when it has one (then that
    header alone decides), else as a bearer token (Prometheus's scrape setting). The one rule for every
    HTTP surface (`infaas.http.internal_auth` for the services, `infaas.metrics.keyed_server` for the
    profiler's metrics port)."""
    if header is not None:
        return key_matches(header, key)
    if authorization is not None and authorization[:7].lower() == b"bearer ":
        return key_matches(authorization[7:].strip(), key)
    return False
