"""Model runtimes behind one interface: `load / run / unload`.

The executor and the profiler both run variants through these classes, so what is profiled is exactly
what is served (same providers, same thread settings, same graph).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np
import onnxruntime as ort


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


class OnnxRuntime(Runtime):
    """ONNX Runtime on one execution provider with a fixed number of intra-op threads."""

    def __init__(
        self, path: Path, *, threads: int, provider: str = "CPUExecutionProvider", optimization: str = "basic"
    ) -> None:
        self.path = path
        self.threads = threads
        self.provider = provider
        self.optimization = optimization
        self._session: ort.InferenceSession | None = None
        self._output_names: list[str] = []

    def load(self) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = _LEVELS[self.optimization]
        # Spinning worker threads burn a core between requests, which would steal CPU from
        # co-located instances; serving prefers giving it back.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.path), sess_options=options, providers=[self.provider])
        self._output_names = [o.name for o in self._session.get_outputs()]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise RuntimeError("run() before load()")
        outputs = self._session.run(self._output_names, inputs)
        return dict(zip(self._output_names, outputs, strict=True))

    def unload(self) -> None:
        self._session = None


_LEVELS = {
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def make_runtime(path: Path, *, runtime: str, hardware: str, threads: int, optimization: str) -> Runtime:
    """The runtime a variant names."""
    if runtime == "onnxruntime" and hardware == "cpu":
        return OnnxRuntime(path, threads=threads, optimization=optimization)
    raise ValueError(f"no runtime for {runtime} on {hardware}")
