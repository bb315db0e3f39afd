"""The TorchScript plug-in: a PyTorch upload's own module (loaded with the scanned, pickle-safe loader
of pytorch_io.py) on CPU, CUDA or, traced by the Neuron SDK, Inferentia."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.providers import NEURON, TORCH_CPU, TORCH_CUDA

_INDEX_ERROR = "index out of range in self"


class TorchScriptRuntime(Runtime):
    """A TorchScript module (loaded with the scanned, pickle-safe loader) on CPU or CUDA."""

    name = "torchscript"
    providers = (TORCH_CPU, TORCH_CUDA, NEURON)
    # An id past an embedding's table: `run` raises the eager IndexError for the interpreter's wording.
    input_errors = (IndexError,)

    def __init__(
        self, path: Path, *, threads: int, device: str, input_names: list[str], output_names: list[str]
    ) -> None:
        self.path = path
        self.threads = threads
        self.device = device
        self.input_names = input_names
        self.output_names = output_names
        self._module: Any = None

    @classmethod
    def build(cls, path: Path, spec: RuntimeSpec) -> TorchScriptRuntime:
        return cls(
            path,
            threads=spec.threads,
            device=f"cuda:{spec.device}" if spec.execution_provider.gpu else "cpu",
            input_names=list(spec.input_names),
            output_names=list(spec.output_names),
        )

    @classmethod
    def write_warm_model(cls, path: Path) -> None:
        import torch

        # TorchScript, the format this plug-in runs, is deprecated upstream and says so when scripting.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.jit.save(torch.jit.script(torch.nn.ReLU()), str(path))

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
