"""Settings the registry reads: model intake limits and the sweep of profiles whose profiler is gone."""

from __future__ import annotations

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class RegistrySettings(CommonSettings):
    """Fields of the registry (`services/registry/`); its job intake reads `JobsSettings`."""

    max_model_bytes: int = 512 * 1024 * 1024
    """Largest model or validation file the registry accepts (413 above). The gateway bounds uploads it
    passes through by it."""

    max_validation_expanded_bytes: int = 256 * 1024 * 1024
    """Largest size a validation `.npz` may expand to, read from the sizes it declares before anything is
    decompressed (422 above; so is an archive above 16 MiB expanded that expands more than 64 times its
    size: `infaas.wire.archives`)."""

    profile_lease_grace_s: float = Field(default=5.0, ge=0)
    """How long a claimed model's lease must stay missing before the registry profiles it again: longer
    than a renewal plus a Redis reconnect, so Redis restarted empty does not look like a dead profiler."""

    profile_queued_max_s: float = Field(default=600.0, gt=0)
    """A model queued this long that no profiler took, while no profiler is busy with any model, is
    queued again: its task was lost (Redis restarted empty) or no profiler was running."""

    profile_max_attempts: int = Field(default=3, ge=1)
    """Profiling a model is tried at most this many times in a row; then the model is `failed`."""

    profile_sweep_interval_s: float = Field(default=1.0, gt=0)
    """How often the registry looks for profiles whose profiler is gone."""
