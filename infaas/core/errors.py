"""One error hierarchy for every service: each class carries its HTTP status and a stable code.

Services raise these; one FastAPI handler (`install_error_handlers`) turns them into
`{"error": {"code", "message", ...details}}` with the right status, so no route formats errors itself.
"""

from __future__ import annotations

from typing import Any, ClassVar


class InfaasError(Exception):
    """Base of every error a client may see."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


class BadRequest(InfaasError):
    status = 400
    code = "bad_request"


class Unauthorized(InfaasError):
    status = 401
    code = "unauthorized"


class Forbidden(InfaasError):
    status = 403
    code = "forbidden"


class NotFound(InfaasError):
    status = 404
    code = "not_found"


class Conflict(InfaasError):
    status = 409
    code = "conflict"


class PayloadTooLarge(InfaasError):
    status = 413
    code = "payload_too_large"


class InvalidInput(InfaasError):
    """The request is well formed but its content is wrong (shape, dtype, file contents)."""

    status = 422
    code = "invalid_input"


class InvalidModel(InvalidInput):
    code = "invalid_model"


class RequirementsUnmet(InfaasError):
    """No variant can meet the query's requirements; details name the closest achievable."""

    status = 422
    code = "requirements_unmet"


class TooManyRequests(InfaasError):
    status = 429
    code = "too_many_requests"


class Unavailable(InfaasError):
    """A service, worker or store cannot serve now. Answered with `Retry-After`: `retry_after_s` when
    given, else `infaas.http.app.DEFAULT_RETRY_AFTER`."""

    status = 503
    code = "unavailable"


class Overloaded(Unavailable):
    """Queues are full: shed instead of queueing without bound (answered with Retry-After)."""

    code = "overloaded"


class DeadlineExceeded(InfaasError):
    status = 504
    code = "deadline_exceeded"


_BY_CODE: dict[str, type[InfaasError]] = {}


def _collect(cls: type[InfaasError]) -> None:
    for sub in cls.__subclasses__():
        _BY_CODE.setdefault(sub.code, sub)
        _collect(sub)


_collect(InfaasError)
_BY_CODE["internal"] = InfaasError


def error_from_body(status: int, body: Any) -> InfaasError:
    """Rebuild the error another service answered with, so it crosses hops unchanged."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = dict(body["error"])
        code = str(err.pop("code", "internal"))
        message = str(err.pop("message", "error"))
        cls = _BY_CODE.get(code)
        if cls is not None and cls.status == status:
            return cls(message, **err)
        generic = _by_status(status)
        exc = generic(message, **err)
        return exc
    return _by_status(status)(f"upstream answered {status}")


def _by_status(status: int) -> type[InfaasError]:
    for cls in _BY_CODE.values():
        if cls.status == status:
            return cls
    return Unavailable if status >= 500 else BadRequest
