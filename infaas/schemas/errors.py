"""The one error body of the public API (`{"error": {"code", "message", ...}}`), as the OpenAPI document
describes it; the errors themselves are `infaas.core.errors`, one class per status."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ErrorDetail(BaseModel):
    """`code` is stable (`invalid_input`, `requirements_unmet`, `overloaded`, …); further fields depend on
    the error (e.g. `closest` for `requirements_unmet`, `retry_after_s` when shedding load)."""

    model_config = ConfigDict(extra="allow")

    code: str
    message: str


class ErrorBody(BaseModel):
    """Every `/v1` error: `{"error": {"code", "message", ...details}}`."""

    error: ErrorDetail
