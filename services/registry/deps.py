"""Dependency aliases of the registry's routes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import redis
from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.core.errors import Unauthorized
from infaas.data.artifacts import ArtifactStore
from infaas.schemas.api import Principal
from services.registry.parity.training import ParityQueue
from services.registry.profiles.attempts import ProfileQueue


def _session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


def _principal(
    x_infaas_role: Annotated[str | None, Header()] = None,
    x_infaas_app: Annotated[str | None, Header()] = None,
) -> Principal:
    # Only the suite's own services reach this: every route is behind the internal key
    # (infaas/http/internal_auth.py), so these headers are the gateway vouching for a key it verified.
    if x_infaas_role == "admin":
        return Principal(role="admin")
    if x_infaas_role == "app" and x_infaas_app:
        return Principal(role="app", app=x_infaas_app)
    raise Unauthorized("missing caller identity (call through the gateway)")


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _redis(request: Request) -> redis.Redis:
    client: redis.Redis = request.app.state.redis
    return client


def _artifacts(request: Request) -> ArtifactStore:
    artifacts: ArtifactStore = request.app.state.artifacts
    return artifacts


def _queue(request: Request) -> ProfileQueue:
    queue: ProfileQueue = request.app.state.profile_queue
    return queue


SessionDep = Annotated[Session, Depends(_session)]
PrincipalDep = Annotated[Principal, Depends(_principal)]
SettingsDep = Annotated[Settings, Depends(_settings)]
RedisDep = Annotated[redis.Redis, Depends(_redis)]
ArtifactsDep = Annotated[ArtifactStore, Depends(_artifacts)]
QueueDep = Annotated[ProfileQueue, Depends(_queue)]


def _parity_queue(request: Request) -> ParityQueue:
    queue: ParityQueue = request.app.state.profile_queue
    return queue


ParityQueueDep = Annotated[ParityQueue, Depends(_parity_queue)]
