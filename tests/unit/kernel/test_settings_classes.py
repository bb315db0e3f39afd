"""Settings by service: each field defined in one class only, each with its docstring, all composed."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import infaas.core.settings as settings_package
from infaas.core.config import Settings
from infaas.core.settings.common import CommonSettings


def _settings_classes() -> list[type[CommonSettings]]:
    found: list[type[CommonSettings]] = []
    for module_info in pkgutil.iter_modules(settings_package.__path__):
        module = importlib.import_module(f"{settings_package.__name__}.{module_info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, CommonSettings) and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def _own_fields(cls: type) -> set[str]:
    return {name for name in vars(cls).get("__annotations__", {}) if name != "model_config"}


def test_every_field_is_defined_in_exactly_one_settings_class() -> None:
    owners: dict[str, list[str]] = {}
    for cls in _settings_classes():
        for name in _own_fields(cls):
            owners.setdefault(name, []).append(cls.__name__)
    twice = {name: classes for name, classes in owners.items() if len(classes) > 1}
    assert not twice, f"fields defined in more than one settings class: {twice}"
    assert set(owners) == set(Settings.model_fields)
    assert not _own_fields(Settings), "Settings only composes the per-service classes"


def test_settings_composes_every_per_service_class() -> None:
    classes = _settings_classes()
    assert len(classes) >= 9
    assert all(issubclass(Settings, cls) for cls in classes)


def test_every_field_has_a_docstring() -> None:
    undocumented = [
        name for name, field in Settings.model_fields.items() if not (field.description or "").strip()
    ]
    assert not undocumented, f"settings without a docstring: {undocumented}"
