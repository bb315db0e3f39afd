"""Unit tests see no INFAAS_* environment: settings come only from what each test passes."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _no_infaas_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("INFAAS_"):
            monkeypatch.delenv(name)
