"""The execution providers: everything the system knows about one provider, in one row.

A variant names its provider (`VariantProfile.provider`); the provider's row says the hardware kind it
runs on, the tag variant ids carry for it, whether it runs on a GPU, whether its batches run at one
shape, and the options its session is given. Runtime plug-ins (registry.py) say which rows they run;
the profiler's variant generators, hardware detection and the executor's loading read the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


def _frozen(options: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(options))


@dataclass(frozen=True)
class ExecutionProvider:
    """One execution provider and what follows from it."""

    name: str
    """As a variant names it (ONNX Runtime's own name for its providers)."""
    hardware: str
    """The hardware kind it runs on (`cpu`, `cuda`, `neuron`)."""
    tag: str
    """Its part of a variant id (`variant_id`'s `hardware`): ids are keys of registered variants, so a
    tag never changes."""
    gpu: bool = False
    """Runs on one CUDA GPU: its runtime is given the GPU's index and loads the CUDA libraries first."""
    one_shape: bool = False
    """Every batch is padded to the variant's max batch (`padded_batch`)."""
    options: Mapping[str, Any] = field(default_factory=lambda: _frozen({}), hash=False)
    """Its ONNX Runtime provider options, whatever the precision."""
    precision_options: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: _frozen({}), hash=False
    )
    """Options that differ by the variant's precision, over `options`."""
    library: str | None = None
    """A shared library it needs that its runtime lists it without (`hardware.py` tries to load it)."""

    def session_options(self, precision: str, device: int) -> dict[str, Any]:
        """The provider options of a session of `precision` on GPU `device` (ignored off a GPU)."""
        options: dict[str, Any] = {"device_id": device} if self.gpu else {}
        options.update(self.options)
        options.update(self.precision_options.get(precision, {}))
        return options


CPU = ExecutionProvider(name="CPUExecutionProvider", hardware="cpu", tag="cpu")

CUDA = ExecutionProvider(
    name="CUDAExecutionProvider",
    hardware="cuda",
    tag="cuda",
    gpu=True,
    one_shape=True,
    options=_frozen(
        {
            # The CUDA provider computes fp32 convolutions and matrix products in TF32 unless told not
            # to (10-bit mantissas: 6e-4 off the CPU's probabilities on the demo CNN); fp32 means fp32
            # (`precision_options`), and the fp16 variants are the lower-precision choice.
            "use_tf32": 1,
            # A new input shape costs a convolution 8-10 ms of planning on an H100 with cuDNN's heuristic
            # against 32-46 ms with ONNX Runtime's default exhaustive search (64-230 ms for the first
            # shape; bench/diagnostics/cuda_first_shapes.py). A served instance sees one shape
            # (`padded_batch`); the profiler's session sees one per batch size.
            "cudnn_conv_algo_search": "HEURISTIC",
        }
    ),
    precision_options=_frozen({"fp32": _frozen({"use_tf32": 0})}),
)

TENSORRT = ExecutionProvider(
    name="TensorrtExecutionProvider",
    hardware="cuda",
    tag="trt",
    gpu=True,
    one_shape=True,
    precision_options=_frozen({"fp16": _frozen({"trt_fp16_enable": True})}),
    # What ONNX Runtime's TensorRT provider (1.20 and later) loads: TensorRT 10. GPU builds of ONNX
    # Runtime list the provider whether TensorRT is installed or not.
    library="libnvinfer.so.10",
)

TORCH_CPU = ExecutionProvider(name="torch-cpu", hardware="cpu", tag="cpu")

# A TorchScript module on CUDA runs batches as they come: the re-planning that `one_shape` avoids is
# ONNX Runtime's.
TORCH_CUDA = ExecutionProvider(name="torch-cuda", hardware="cuda", tag="cuda", gpu=True)

NEURON = ExecutionProvider(name="neuron", hardware="neuron", tag="neuron")

EXECUTION_PROVIDERS: Mapping[str, ExecutionProvider] = MappingProxyType(
    {p.name: p for p in (CPU, CUDA, TENSORRT, TORCH_CPU, TORCH_CUDA, NEURON)}
)
"""Every provider a variant can name, by name."""


class UnknownProvider(ValueError):
    """A variant names a provider that is not in `EXECUTION_PROVIDERS`."""


def execution_provider(name: str) -> ExecutionProvider:
    """The row of provider `name`; `UnknownProvider` names the known ones."""
    try:
        return EXECUTION_PROVIDERS[name]
    except KeyError:
        known = ", ".join(EXECUTION_PROVIDERS)
        raise UnknownProvider(f"no execution provider {name!r} (known: {known})") from None


def hardware_kinds() -> tuple[str, ...]:
    """The hardware kinds the providers run on, `cpu` first."""
    return tuple(dict.fromkeys(p.hardware for p in EXECUTION_PROVIDERS.values()))


def padded_batch(provider: str, max_batch: int) -> int | None:
    """The one batch size a variant's every run is padded to, or None where batches run as they come.

    On a GPU, ONNX Runtime re-plans for each input shape that differs from the previous run's: its CUDA
    convolutions build a new cuDNN frontend plan whenever the input's dimensions change (only the last
    shape is kept, so warming every size at load does not help), 8-10 ms each on an H100 with the
    heuristic search, and TensorRT builds an engine per new shape range. A batcher forms batches of any
    size, so an instance that ran batches as they came paid that cost at every change of batch size
    (the demo CNN's b64 CUDA variant: served p99 13-19 ms where its b1 sibling's was 3-5 ms,
    `bench/diagnostics/overhead.py --slo-hardware cuda`). So a variant of a `one_shape` provider runs at
    one shape, its max batch, and its profile gives every batch size that shape's cost
    (services/profiler/service.py): a batch of 64 rows cost that CNN what one row cost, and where
    padding costs more, selection weighs it against the variants of smaller max batch."""
    return max(1, max_batch) if execution_provider(provider).one_shape else None
