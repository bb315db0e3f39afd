"""The base every runtime plug-in subclasses, and the spec a plug-in builds a runtime from.

A runtime plug-in (SeldonIO/MLServer's `MLModel` shape) is one `Runtime` subclass: `load / run /
unload` on one model, and at class level what is specific to it: its `name` (the `runtime` a variant
names), the execution providers it runs (rows of providers.py), how it is built from a `RuntimeSpec`,
which of its errors mean the query's values were refused, and the small model the profiler's memory
probe warms it up with. The registry (registry.py) finds a plug-in by name.

The executor and the profiler both run variants through these classes, so what is profiled is exactly
what is served (same providers, same thread settings, same graph).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from infaas.runtimes.providers import ExecutionProvider, execution_provider, padded_batch

if TYPE_CHECKING:
    from infaas.schemas.variants import VariantProfile


@dataclass(frozen=True, slots=True)
class RuntimeSpec:
    """How to build one variant's runtime, all but the path of its artifact."""

    runtime: str
    """The plug-in's name (`Runtime.name`)."""
    provider: str
    """The execution provider (`EXECUTION_PROVIDERS`), one of the plug-in's."""
    threads: int = 1
    optimization: str = "basic"
    precision: str = "fp32"
    input_names: tuple[str, ...] = ("x",)
    output_names: tuple[str, ...] = ("y",)
    device: int = 0
    """The GPU a GPU provider's variant runs on (ignored off a GPU)."""
    pad_to: int | None = None
    """The batch size every run is padded to (`padded_batch`); None: batches run as they come."""

    @classmethod
    def served(cls, profile: VariantProfile, device: int = 0) -> RuntimeSpec:
        """A profiled variant as an executor serves it: on GPU `device` when it is a GPU variant, its
        batches padded where `padded_batch` says so."""
        return cls(
            runtime=profile.runtime,
            provider=profile.provider,
            threads=profile.threads,
            optimization=profile.optimization,
            precision=profile.precision,
            input_names=tuple(profile.input_names),
            output_names=tuple(profile.output_names),
            device=device,
            pad_to=padded_batch(profile.provider, profile.max_batch),
        )

    @property
    def execution_provider(self) -> ExecutionProvider:
        return execution_provider(self.provider)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuntimeSpec:
        fields: dict[str, Any] = dict(data)
        for names in ("input_names", "output_names"):
            if names in fields:
                fields[names] = tuple(fields[names])
        return cls(**fields)


class Runtime(ABC):
    """A loaded, runnable model; each runtime plug-in subclasses it."""

    name: ClassVar[str]
    """The `runtime` of the variants this plug-in runs (part of their ids: never renamed)."""
    providers: ClassVar[tuple[ExecutionProvider, ...]]
    """The execution providers it runs; each provider is run by one plug-in."""
    input_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """What its `run` raises when the query's values were refused, not the instance
    (`registry.refuses_input`)."""

    @classmethod
    @abstractmethod
    def build(cls, path: Path, spec: RuntimeSpec) -> Runtime:
        """The runtime of the artifact at `path` as `spec` says, not yet loaded."""

    @classmethod
    @abstractmethod
    def write_warm_model(cls, path: Path) -> None:
        """Write a one-node model this plug-in loads (input `a`, output `b`: float32 rows of 4 columns),
        which the memory probe (services/profiler/memory.py) runs first, so that what any first session
        costs a worker (libraries, thread pools) is in its baseline rather than in the variant's memory."""

    @abstractmethod
    def load(self) -> None:
        """Load the model; raises on a file that cannot be run."""

    @abstractmethod
    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one batch; every input and output has the batch as its first dimension."""

    @abstractmethod
    def unload(self) -> None:
        """Release what `load` took."""
