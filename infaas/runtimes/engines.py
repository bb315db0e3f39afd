"""Model runtimes behind one interface: `load / run / unload`.

The executor and the profiler both run variants through these classes, so what is profiled is exactly
what is served (same providers, same thread settings, same graph).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

if TYPE_CHECKING:
    from infaas.schemas.variants import VariantProfile


def refuses_input(exc: BaseException) -> bool:
    """Whether a failed run was the query's values, not the instance: ONNX Runtime's INVALID_ARGUMENT
    (an index past an embedding's table, a value a kernel rejects; shapes and dtypes were checked at
    the gateway) or an `IndexError` from a PyTorch module (`TorchScriptRuntime` raises one for the
    interpreter's wording of it). Any other failure is the worker's."""
    return isinstance(exc, InvalidArgument | IndexError)


class Runtime(ABC):
    """A loaded, runnable model."""

    @abstractmethod
    def load(self) -> None:
        """Load the model; raises on a file that cannot be run."""

    @abstractmethod
    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one batch; every input and output has the batch as its first dimension."""

    @abstractmethod
    def unload(self) -> None:
        """Release what `load` took."""


_LEVELS = {
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


def padded_batch(provider: str, max_batch: int) -> int | None:
    """The one batch size a variant's every run is padded to, or None where batches run as they come.

    On a GPU, ONNX Runtime re-plans for each input shape that differs from the previous run's: its CUDA
    convolutions build a new cuDNN frontend plan whenever the input's dimensions change (only the last
    shape is kept, so warming every size at load does not help), 8-10 ms each on an H100 with the
    heuristic search, and TensorRT builds an engine per new shape range. A batcher forms batches of any
    size, so an instance that ran batches as they came paid that cost at every change of batch size
    (the demo CNN's b64 CUDA variant: served p99 13-19 ms where its b1 sibling's was 3-5 ms,
    `bench/overhead.py --slo-hardware cuda`). So a GPU variant runs at one shape, its max batch, and its
    profile gives every batch size that shape's cost (services/profiler/service.py): a batch of 64 rows
    cost that CNN what one row cost, and where padding costs more, selection weighs it against the
    variants of smaller max batch."""
    return max(1, max_batch) if provider in GPU_PROVIDERS else None


@lru_cache(maxsize=1)
def load_gpu_libraries() -> None:
    """Load the CUDA and cuDNN libraries before the first GPU session of this process.

    onnxruntime-gpu's CUDA provider names them without a search path, and the `gpu` extra installs them
    as NVIDIA's wheels beside it in site-packages, where only ONNX Runtime's own `preload_dlls` (1.21 and
    later) looks; a process that imported torch first has them already. Libraries that cannot be found
    are reported by ONNX Runtime and the session then fails with its own error.
    """
    preload = getattr(ort, "preload_dlls", None)
    if preload is not None:
        preload()


class OnnxRuntime(Runtime):
    """ONNX Runtime on one execution provider with a fixed number of intra-op threads."""

    def __init__(
        self,
        path: Path,
        *,
        threads: int,
        provider: str = "CPUExecutionProvider",
        optimization: str = "basic",
        provider_options: dict[str, Any] | None = None,
        pad_to: int | None = None,
    ) -> None:
        self.path = path
        self.pad_to = pad_to
        self.threads = threads
        self.provider = provider
        self.optimization = optimization
        self.provider_options = provider_options or {}
        self._session: ort.InferenceSession | None = None
        self._output_names: list[str] = []
        self._run: Callable[[list[str], dict[str, np.ndarray], Any], list[Any]] = self._wrapped

    def load(self) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = _LEVELS.get(self.optimization, _LEVELS["basic"])
        # Spinning worker threads burn a core between requests, which would steal CPU from
        # co-located instances; serving prefers giving it back.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        # Only the variant's provider is listed, and we check it was taken: ONNX Runtime would
        # otherwise fall back to the CPU silently and the profile would describe the wrong hardware.
        providers: list[Any] = [(self.provider, self.provider_options)]
        if self.provider in GPU_PROVIDERS:
            load_gpu_libraries()
        self._session = ort.InferenceSession(str(self.path), sess_options=options, providers=providers)
        if self._session.get_providers()[0] != self.provider:
            raise RuntimeError(f"{self.provider} could not be used on this machine")
        self._output_names = [o.name for o in self._session.get_outputs()]
        # The session's C++ run, without the Python wrapper's checks of each call: they read every
        # input's name and type through pybind11 (~8 µs a query on the cold caches of a low rate;
        # docs/benchmarks.md, "Cold caches"), where the inputs were checked against the model's
        # signature at the gateway, and the C++ run refuses a missing input itself. The wrapper's
        # other work, falling back to another provider, is what this class refuses anyway (above).
        direct = getattr(self._session, "_sess", None)
        self._run = direct.run if direct is not None and hasattr(direct, "run") else self._wrapped

    def _wrapped(self, names: list[str], feed: dict[str, np.ndarray], options: Any = None) -> list[Any]:
        assert self._session is not None
        return list(self._session.run(names, feed, options))

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise RuntimeError("run() before load()")
        rows = _batch_rows(inputs) if self.pad_to is not None else None
        if self.pad_to is None or rows is None or not 0 < rows < self.pad_to:
            outputs = self._run(self._output_names, inputs, None)
            return dict(zip(self._output_names, outputs, strict=True))
        padded = {name: _pad_rows(x, self.pad_to) for name, x in inputs.items()}
        outputs = self._run(self._output_names, padded, None)
        return {n: o[:rows] for n, o in zip(self._output_names, outputs, strict=True)}

    def unload(self) -> None:
        self._session = None
        self._run = self._wrapped  # drops the C++ session's reference too


def _batch_rows(inputs: dict[str, np.ndarray]) -> int | None:
    """The batch's rows, or None where the inputs do not share a first dimension (run as they are)."""
    sizes = {x.shape[0] if x.ndim else None for x in inputs.values()}
    return sizes.pop() if len(sizes) == 1 else None


def _pad_rows(x: np.ndarray, rows: int) -> np.ndarray:
    """`x` followed by zero rows up to `rows` (the padding's outputs are dropped)."""
    out = np.zeros((rows, *x.shape[1:]), dtype=x.dtype)
    out[: x.shape[0]] = x
    return out


_INDEX_ERROR = "index out of range in self"


class TorchScriptRuntime(Runtime):
    """A TorchScript module (loaded with the scanned, pickle-safe loader) on CPU or CUDA."""

    def __init__(
        self, path: Path, *, threads: int, device: str, input_names: list[str], output_names: list[str]
    ) -> None:
        self.path = path
        self.threads = threads
        self.device = device
        self.input_names = input_names
        self.output_names = output_names
        self._module: Any = None

    def load(self) -> None:
        import torch

        from infaas.runtimes.pytorch_io import load_torchscript

        # torch's intra-op pool is per process: the last loaded instance's setting wins, which is
        # why the executor hosts torch variants with the same thread count side by side only.
        torch.set_num_threads(self.threads)
        self._module = load_torchscript(self.path.read_bytes()).to(self.device)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        if self._module is None:
            raise RuntimeError("run() before load()")
        with torch.inference_mode():
            args = [
                torch.from_numpy(np.ascontiguousarray(inputs[n])).to(self.device) for n in self.input_names
            ]
            try:
                out = self._module(*args)
            except RuntimeError as exc:
                # The interpreter re-raises an eager IndexError (an id past an embedding's table) as a
                # RuntimeError whose last line says so: the query's values, as eager PyTorch says.
                if _INDEX_ERROR in str(exc):
                    raise IndexError(_INDEX_ERROR) from exc
                raise
        outs = out if isinstance(out, tuple | list) else (out,)
        return {n: o.detach().to("cpu").numpy() for n, o in zip(self.output_names, outs, strict=True)}

    def unload(self) -> None:
        self._module = None


ORT_PROVIDERS = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
}


def make_runtime(
    path: Path,
    *,
    runtime: str,
    hardware: str,
    threads: int,
    optimization: str,
    provider: str = "CPUExecutionProvider",
    precision: str = "fp32",
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
    device: int = 0,
    pad_to: int | None = None,
) -> Runtime:
    """The runtime a variant names; `device`: the GPU a CUDA or TensorRT variant runs on; `pad_to`: the
    batch size every ONNX Runtime run is padded to (`padded_batch`), None to run batches as they come."""
    if runtime == "onnxruntime":
        options: dict[str, Any] = {}
        if provider in GPU_PROVIDERS:
            options["device_id"] = device
        if provider == "CUDAExecutionProvider":
            # The CUDA provider computes fp32 convolutions and matrix products in TF32 unless told not
            # to (10-bit mantissas: 6e-4 off the CPU's probabilities on the demo CNN); fp32 means fp32,
            # and the fp16 variants are the lower-precision choice.
            options["use_tf32"] = 0 if precision == "fp32" else 1
            # A new input shape costs a convolution 8-10 ms of planning on an H100 with cuDNN's heuristic
            # against 32-46 ms with ONNX Runtime's default exhaustive search (64-230 ms for the first
            # shape; bench/cuda_first_shapes.py). A served instance sees one shape (`padded_batch`);
            # the profiler's session sees one per batch size.
            options["cudnn_conv_algo_search"] = "HEURISTIC"
        if provider == "TensorrtExecutionProvider" and precision == "fp16":
            options["trt_fp16_enable"] = True
        return OnnxRuntime(
            path,
            threads=threads,
            provider=provider,
            optimization=optimization,
            provider_options=options,
            pad_to=pad_to,
        )
    if runtime == "torchscript":
        return TorchScriptRuntime(
            path,
            threads=threads,
            device=f"cuda:{device}" if hardware == "cuda" else "cpu",
            input_names=input_names or ["x"],
            output_names=output_names or ["y"],
        )
    raise ValueError(f"no runtime {runtime!r} for {hardware}")


def runtime_for(profile: VariantProfile, path: Path, device: int = 0) -> Runtime:
    """The (not yet loaded) runtime of a profiled variant whose artifact is at `path`, on GPU `device`
    when it is a GPU variant, padding its batches where `padded_batch` says so."""
    return make_runtime(
        path,
        runtime=profile.runtime,
        hardware=profile.hardware,
        threads=profile.threads,
        optimization=profile.optimization,
        provider=profile.provider,
        precision=profile.precision,
        input_names=list(profile.input_names),
        output_names=list(profile.output_names),
        device=device,
        pad_to=padded_batch(profile.provider, profile.max_batch),
    )
