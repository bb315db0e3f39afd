"""The ONNX Runtime plug-in: one session on one execution provider with a fixed number of intra-op
threads; GPU variants run every batch padded to one shape (`providers.padded_batch`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.providers import CPU, CUDA, TENSORRT, execution_provider

_LEVELS = {
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


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

    name = "onnxruntime"
    providers = (CPU, CUDA, TENSORRT)
    # INVALID_ARGUMENT: an index past an embedding's table, a value a kernel rejects (shapes and dtypes
    # were checked at the gateway).
    input_errors = (InvalidArgument,)

    def __init__(
        self,
        path: Path,
        *,
        threads: int,
        provider: str = CPU.name,
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

    @classmethod
    def build(cls, path: Path, spec: RuntimeSpec) -> OnnxRuntime:
        provider = spec.execution_provider
        return cls(
            path,
            threads=spec.threads,
            provider=provider.name,
            optimization=spec.optimization,
            provider_options=provider.session_options(spec.precision, spec.device),
            pad_to=spec.pad_to,
        )

    @classmethod
    def write_warm_model(cls, path: Path) -> None:
        import onnx
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            [helper.make_node("Relu", ["a"], ["b"])],
            "warm",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, 4])],
            [helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 4])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, path)

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
        if execution_provider(self.provider).gpu:
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
