"""The artifact store a process that is not the registry uses, as `artifact_source` says."""

from __future__ import annotations

from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.data.artifacts import ArtifactStore, CachedArtifactStore, LocalArtifactStore


def artifact_store(settings: Settings) -> ArtifactStore:
    """The model repository on this disk (`local`), or a verified cache of the registry's (`registry`)."""
    local = LocalArtifactStore(settings.resolved_artifact_dir)
    if settings.artifact_source == "local":
        return local
    registry = RegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
    return CachedArtifactStore(local, registry)
