"""What the gateway's routes share: settings, clients and the auth cache."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.auth import Authenticator
from gateway.selection.store import SelectionStore
from infaas.clients.registry import AsyncRegistryClient
from infaas.clients.scheduler import QueryDispatch
from infaas.core.config import Settings


@dataclass
class GatewayState:
    settings: Settings
    registry: AsyncRegistryClient
    scheduler: QueryDispatch
    auth: Authenticator
    selection: SelectionStore | None = None
    """The selection layer's Redis state (`gateway/selection/store.py`); None without Redis."""
