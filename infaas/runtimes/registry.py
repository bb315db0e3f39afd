"""The runtime plug-ins by name: the one place a variant's `runtime` becomes a class.

Every runtime a variant can name is a `Runtime` subclass (base.py) listed in `RUNTIMES`, which checks
that no two plug-ins share a name or a provider and that every provider is a row of providers.py. The
executor's loading, the profiler's measurements and memory probe, and the variant generators (which
provider a form runs on, hence which plug-in) all go through here. To add a runtime: one module with
its plug-in class and its rows in providers.py, and the class in `RUNTIMES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas.runtimes.providers import EXECUTION_PROVIDERS, ExecutionProvider
from infaas.runtimes.torchscript import TorchScriptRuntime

if TYPE_CHECKING:
    from infaas.schemas.variants import VariantProfile


class UnknownRuntime(ValueError):
    """A variant names a runtime no plug-in is registered under, or a provider its plug-in does not run."""


def registered(*plugins: type[Runtime]) -> Mapping[str, type[Runtime]]:
    """The plug-ins by name; `ValueError` for two of one name, a provider run by two of them, or one
    that is not a row of `EXECUTION_PROVIDERS`."""
    by_name: dict[str, type[Runtime]] = {}
    runs: dict[str, str] = {}
    for plugin in plugins:
        if plugin.name in by_name:
            raise ValueError(f"two runtime plug-ins are named {plugin.name!r}")
        by_name[plugin.name] = plugin
        for provider in plugin.providers:
            if EXECUTION_PROVIDERS.get(provider.name) != provider:
                raise ValueError(f"{plugin.name} runs {provider.name!r}, which is not in EXECUTION_PROVIDERS")
            if provider.name in runs:
                raise ValueError(f"{provider.name} is run by both {runs[provider.name]} and {plugin.name}")
            runs[provider.name] = plugin.name
    return MappingProxyType(by_name)


RUNTIMES = registered(OnnxRuntime, TorchScriptRuntime)
"""Every runtime a variant can name."""

_INPUT_ERRORS = tuple(error for plugin in RUNTIMES.values() for error in plugin.input_errors)


def plugin(name: str) -> type[Runtime]:
    """The plug-in registered as `name`; `UnknownRuntime` names the registered ones."""
    try:
        return RUNTIMES[name]
    except KeyError:
        raise UnknownRuntime(f"no runtime {name!r} (registered: {', '.join(RUNTIMES)})") from None


def plugin_running(provider: ExecutionProvider) -> type[Runtime]:
    """The plug-in that runs `provider` (each provider has one: `registered`)."""
    for candidate in RUNTIMES.values():
        if provider in candidate.providers:
            return candidate
    raise UnknownRuntime(f"no registered runtime runs {provider.name}")


def build_runtime(path: Path, spec: RuntimeSpec) -> Runtime:
    """The (not yet loaded) runtime `spec` names for the artifact at `path`; `UnknownRuntime` for a
    runtime nobody registered or a provider its plug-in does not run."""
    found = plugin(spec.runtime)
    provider = spec.execution_provider
    if provider not in found.providers:
        runs = ", ".join(p.name for p in found.providers)
        raise UnknownRuntime(f"runtime {found.name!r} does not run {provider.name} (it runs {runs})")
    return found.build(path, spec)


def runtime_for(profile: VariantProfile, path: Path, device: int = 0) -> Runtime:
    """The (not yet loaded) runtime of a profiled variant whose artifact is at `path`, on GPU `device`
    when it is a GPU variant, padding its batches where `padded_batch` says so."""
    return build_runtime(path, RuntimeSpec.served(profile, device))


def refuses_input(exc: BaseException) -> bool:
    """Whether a failed run was the query's values, not the instance: one of a plug-in's
    `input_errors` (ONNX Runtime's INVALID_ARGUMENT, a PyTorch module's IndexError). Any other failure
    is the worker's."""
    return isinstance(exc, _INPUT_ERRORS)
