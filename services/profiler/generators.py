"""Variant generators: plug-ins that turn one registered model into runnable forms.

Each generator makes forms on execution providers (rows of infaas/runtimes/providers.py, which give
each form its runtime plug-in and hardware kind) and can say why it is unavailable (its SDK or
hardware missing). The batch-size and thread dimensions are added afterwards by `expand`; what a
generator makes is a *candidate*: an artifact plus how to run it. Every candidate's accuracy is later
measured on the validation set by the profiler, never copied from the parent.
"""

from __future__ import annotations

import importlib.util
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnx
import onnxruntime as ort

from infaas.runtimes.hardware import tensorrt_unavailable_reason
from infaas.runtimes.providers import CPU, CUDA, NEURON, TENSORRT, TORCH_CPU, TORCH_CUDA, ExecutionProvider
from infaas.runtimes.registry import plugin_running
from infaas.wire.tensors import Signature


@dataclass(frozen=True)
class SourceModel:
    """What generators start from: the model's ONNX form and, for PyTorch uploads, its TorchScript."""

    name: str
    signature: Signature
    onnx_path: Path | None
    torchscript_path: Path | None
    calibration: dict[str, np.ndarray]


@dataclass(frozen=True)
class Candidate:
    """A runnable form of the model, before the max-batch and thread dimensions are added."""

    generator: str
    runtime: str
    provider: str
    hardware: str
    optimization: str
    precision: str
    data: bytes

    @classmethod
    def on(
        cls, generator: str, provider: ExecutionProvider, optimization: str, precision: str, data: bytes
    ) -> Candidate:
        """A form run on `provider`: by the runtime plug-in that runs it, on its hardware kind."""
        runtime = plugin_running(provider).name
        return cls(generator, runtime, provider.name, provider.hardware, optimization, precision, data)


class VariantGenerator(ABC):
    name: ClassVar[str]

    def unavailable_reason(self) -> str | None:
        """None when this generator can run here (the hardware itself is checked by the profiler)."""
        return None

    def applies(self, source: SourceModel) -> bool:
        return source.onnx_path is not None

    @abstractmethod
    def generate(self, source: SourceModel) -> list[Candidate]: ...


def _written(produce: Callable[[Path], object]) -> bytes:
    """Bytes of the file `produce(path)` writes (the converters and quantizers only write files)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "artifact"
        produce(out)
        return out.read_bytes()


def _ort_saved(source: Path, level: ort.GraphOptimizationLevel) -> bytes:
    """Let ONNX Runtime optimize the graph and save the result (what it would do at every load)."""

    def optimize(out: Path) -> None:
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.optimized_model_filepath = str(out)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), sess_options=options, providers=[CPU.name])

    return _written(optimize)


class OrtCpuGraphOptimizations(VariantGenerator):
    """ONNX Runtime on CPU at graph optimization levels basic, extended and all, saved optimized."""

    name = "ort-graph-opt"
    LEVELS: ClassVar[dict[str, ort.GraphOptimizationLevel]] = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }

    def generate(self, source: SourceModel) -> list[Candidate]:
        assert source.onnx_path is not None
        return [
            Candidate.on(self.name, CPU, level, "fp32", _ort_saved(source.onnx_path, ort_level))
            for level, ort_level in self.LEVELS.items()
        ]


class OrtInt8Dynamic(VariantGenerator):
    """int8 weights, activations quantized on the fly (no calibration)."""

    name = "ort-int8-dynamic"

    def generate(self, source: SourceModel) -> list[Candidate]:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        onnx_path = source.onnx_path
        assert onnx_path is not None
        data = _written(lambda out: quantize_dynamic(onnx_path, out, weight_type=QuantType.QInt8))
        return [Candidate.on(self.name, CPU, "basic", "int8-dynamic", data)]


class _Calibration:
    """Feeds calibration rows one at a time to the static quantizer."""

    def __init__(self, inputs: dict[str, np.ndarray]) -> None:
        rows = len(next(iter(inputs.values())))
        self._it: Iterator[dict[str, np.ndarray]] = (
            {n: a[i : i + 1] for n, a in inputs.items()} for i in range(rows)
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


class OrtInt8Static(VariantGenerator):
    """int8 QDQ with activation ranges calibrated on part of the validation set."""

    name = "ort-int8-static"

    def generate(self, source: SourceModel) -> list[Candidate]:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

        onnx_path = source.onnx_path
        assert onnx_path is not None
        data = _written(
            lambda out: quantize_static(
                onnx_path,
                out,
                _Calibration(source.calibration),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
            )
        )
        return [Candidate.on(self.name, CPU, "basic", "int8-static", data)]


def _fp16(source: Path) -> bytes:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=True)
    return bytes(model.SerializeToString())


class OrtCuda(VariantGenerator):
    """ONNX Runtime's CUDA provider, fp32 and fp16 (inputs and outputs stay fp32)."""

    name = "ort-cuda"

    def generate(self, source: SourceModel) -> list[Candidate]:
        assert source.onnx_path is not None
        return [
            Candidate.on(self.name, CUDA, "all", "fp32", source.onnx_path.read_bytes()),
            Candidate.on(self.name, CUDA, "all", "fp16", _fp16(source.onnx_path)),
        ]


class OrtTensorRT(VariantGenerator):
    """ONNX Runtime's TensorRT provider (engines built at load), fp32 and fp16."""

    name = "ort-tensorrt"

    def unavailable_reason(self) -> str | None:
        return tensorrt_unavailable_reason()

    def generate(self, source: SourceModel) -> list[Candidate]:
        assert source.onnx_path is not None
        data = source.onnx_path.read_bytes()
        return [Candidate.on(self.name, TENSORRT, "all", precision, data) for precision in ("fp32", "fp16")]


class TorchScriptVariants(VariantGenerator):
    """The uploaded PyTorch model itself (TorchScript), on CPU; `TorchScriptCuda` on the GPU."""

    name = "torchscript-cpu"
    provider: ClassVar[ExecutionProvider] = TORCH_CPU

    def applies(self, source: SourceModel) -> bool:
        return source.torchscript_path is not None

    def generate(self, source: SourceModel) -> list[Candidate]:
        assert source.torchscript_path is not None
        return [Candidate.on(self.name, self.provider, "jit", "fp32", source.torchscript_path.read_bytes())]


class TorchScriptCuda(TorchScriptVariants):
    name = "torchscript-cuda"
    provider = TORCH_CUDA


class NeuronVariants(VariantGenerator):
    """AWS Inferentia through torch-neuronx. Registers only where the Neuron SDK is importable."""

    name = "neuron"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("torch_neuronx") is None:
            return "the AWS Neuron SDK (torch_neuronx) is not installed"
        return None

    def applies(self, source: SourceModel) -> bool:
        return source.torchscript_path is not None

    def generate(self, source: SourceModel) -> list[Candidate]:  # pragma: no cover - needs Inferentia
        import torch
        import torch_neuronx

        from infaas.runtimes.pytorch_io import load_torchscript

        assert source.torchscript_path is not None
        module = load_torchscript(source.torchscript_path.read_bytes())
        example = tuple(torch.from_numpy(a[:1]) for a in source.calibration.values())
        traced = torch_neuronx.trace(module, example)
        data = _written(lambda out: torch.jit.save(traced, str(out)))
        return [Candidate.on(self.name, NEURON, "neuronx", "fp32", data)]


GENERATORS: tuple[VariantGenerator, ...] = (
    OrtCpuGraphOptimizations(),
    OrtInt8Dynamic(),
    OrtInt8Static(),
    TorchScriptVariants(),
    OrtCuda(),
    OrtTensorRT(),
    TorchScriptCuda(),
    NeuronVariants(),
)


def registered_generators() -> list[VariantGenerator]:
    """Plug-ins whose SDK is present; `neuron` registers itself only where its SDK imports."""
    return [g for g in GENERATORS if not (isinstance(g, NeuronVariants) and g.unavailable_reason())]
