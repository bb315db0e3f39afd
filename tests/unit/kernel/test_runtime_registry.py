"""The runtime plug-ins and the execution-provider table (infaas/runtimes/registry.py, providers.py):
every plug-in builds from a profile on each of its providers, with the options, GPU and padding the
provider's row gives; a runtime or provider nobody registered is refused by name; the table is the one
place provider facts live, and the tags in variant ids stay what registered variants are keyed by.
Nothing here needs a GPU: runtimes are built, not loaded, except on the CPU."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

from infaas.runtimes.base import Runtime, RuntimeSpec
from infaas.runtimes.hardware import KINDS
from infaas.runtimes.onnx_runtime import OnnxRuntime
from infaas.runtimes.providers import (
    CPU,
    CUDA,
    EXECUTION_PROVIDERS,
    TENSORRT,
    TORCH_CPU,
    ExecutionProvider,
    UnknownProvider,
    execution_provider,
    hardware_kinds,
    padded_batch,
)
from infaas.runtimes.registry import (
    RUNTIMES,
    UnknownRuntime,
    build_runtime,
    plugin,
    plugin_running,
    refuses_input,
    registered,
    runtime_for,
)
from infaas.runtimes.torchscript import TorchScriptRuntime
from tests.factories import variant_profile

ROOT = Path(__file__).resolve().parents[3]

PROVIDERS = [(p, name) for name, cls in RUNTIMES.items() for p in cls.providers]


def test_the_registry_holds_each_runtime_under_its_name() -> None:
    assert dict(RUNTIMES) == {"onnxruntime": OnnxRuntime, "torchscript": TorchScriptRuntime}
    assert plugin("onnxruntime") is OnnxRuntime


def test_an_unknown_runtime_is_refused_by_name() -> None:
    with pytest.raises(UnknownRuntime, match=r"no runtime 'tflite' \(registered: onnxruntime, torchscript\)"):
        plugin("tflite")
    with pytest.raises(UnknownRuntime, match="tflite"):
        runtime_for(variant_profile(runtime="tflite"), Path("m.tflite"))


def test_a_provider_the_plug_in_does_not_run_or_nobody_knows_is_refused() -> None:
    with pytest.raises(UnknownRuntime, match="'torchscript' does not run CPUExecutionProvider"):
        build_runtime(Path("m.pt"), RuntimeSpec(runtime="torchscript", provider=CPU.name))
    with pytest.raises(UnknownProvider, match="no execution provider 'ROCmExecutionProvider'"):
        runtime_for(variant_profile(provider="ROCmExecutionProvider"), Path("m.onnx"))


@pytest.mark.parametrize(("provider", "runtime"), PROVIDERS, ids=lambda v: getattr(v, "name", v))
def test_each_plug_in_builds_from_a_profile_on_each_of_its_providers(
    provider: ExecutionProvider, runtime: str
) -> None:
    profile = variant_profile(
        runtime=runtime, provider=provider.name, hardware=provider.hardware, max_batch=8, precision="fp32"
    )
    built = runtime_for(profile, Path("artifact"), device=1)
    assert type(built) is RUNTIMES[runtime]
    if isinstance(built, OnnxRuntime):
        assert built.provider == provider.name
        assert built.provider_options == provider.session_options("fp32", 1)
        assert built.pad_to == (8 if provider.one_shape else None)
        assert built.threads == profile.threads and built.optimization == profile.optimization
    else:
        assert isinstance(built, TorchScriptRuntime)
        assert built.device == ("cuda:1" if provider.gpu else "cpu")
        assert built.input_names == list(profile.input_names)


def test_the_gpu_providers_options_are_the_served_ones() -> None:
    # fp32 means fp32 on CUDA (no TF32), cuDNN's heuristic search, TensorRT's fp16 only for fp16.
    assert CUDA.session_options("fp32", 0) == {
        "device_id": 0,
        "use_tf32": 0,
        "cudnn_conv_algo_search": "HEURISTIC",
    }
    assert CUDA.session_options("fp16", 2) == {
        "device_id": 2,
        "use_tf32": 1,
        "cudnn_conv_algo_search": "HEURISTIC",
    }
    assert TENSORRT.session_options("fp16", 0) == {"device_id": 0, "trt_fp16_enable": True}
    assert TENSORRT.session_options("fp32", 0) == {"device_id": 0}
    assert CPU.session_options("fp32", 3) == {}


def test_variant_id_tags_and_padding_follow_the_table() -> None:
    # Registered variants are keyed by ids carrying these tags: they never change.
    tags = {name: p.tag for name, p in EXECUTION_PROVIDERS.items()}
    assert tags == {
        "CPUExecutionProvider": "cpu",
        "CUDAExecutionProvider": "cuda",
        "TensorrtExecutionProvider": "trt",
        "torch-cpu": "cpu",
        "torch-cuda": "cuda",
        "neuron": "neuron",
    }
    padded = {name for name in EXECUTION_PROVIDERS if padded_batch(name, 16) is not None}
    assert padded == {CUDA.name, TENSORRT.name}
    assert KINDS == hardware_kinds() == ("cpu", "cuda", "neuron")
    with pytest.raises(UnknownProvider):
        execution_provider("cuda")


def test_every_provider_is_run_by_exactly_one_plug_in() -> None:
    runs = [p.name for _, cls in RUNTIMES.items() for p in cls.providers]
    assert sorted(runs) == sorted(EXECUTION_PROVIDERS)
    assert plugin_running(TORCH_CPU) is TorchScriptRuntime
    assert plugin_running(TENSORRT) is OnnxRuntime


def test_registration_refuses_a_clash_or_a_provider_outside_the_table() -> None:
    class Twin(OnnxRuntime):
        providers = ()

    with pytest.raises(ValueError, match="two runtime plug-ins are named 'onnxruntime'"):
        registered(OnnxRuntime, Twin)

    class Poacher(TorchScriptRuntime):
        name = "poacher"
        providers = (CPU,)

    with pytest.raises(ValueError, match="CPUExecutionProvider is run by both onnxruntime and poacher"):
        registered(OnnxRuntime, Poacher)

    class Stray(TorchScriptRuntime):
        name = "stray"
        providers = (ExecutionProvider(name="stray-npu", hardware="npu", tag="npu"),)

    with pytest.raises(ValueError, match="'stray-npu', which is not in EXECUTION_PROVIDERS"):
        registered(Stray)
    assert dict(registered(OnnxRuntime, TorchScriptRuntime)) == dict(RUNTIMES)


def test_a_query_refused_by_a_plug_in_is_the_querys_error() -> None:
    assert refuses_input(InvalidArgument("index 12 is out of bounds"))
    assert refuses_input(IndexError("index out of range in self"))
    assert not refuses_input(RuntimeError("CUDA out of memory"))


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_each_plug_ins_warm_model_loads_and_runs_on_the_cpu(runtime: str, tmp_path: Path) -> None:
    cls = RUNTIMES[runtime]
    on_cpu = next(p for p in cls.providers if p.hardware == "cpu")
    path = tmp_path / "warm"
    cls.write_warm_model(path)
    spec = RuntimeSpec(runtime=runtime, provider=on_cpu.name, input_names=("a",), output_names=("b",))
    built: Runtime = build_runtime(path, spec)
    built.load()
    x = np.array([[-1.0, 0.0, 2.0, -3.0]], dtype=np.float32)
    np.testing.assert_array_equal(built.run({"a": x})["b"], np.maximum(x, 0))
    built.unload()


def test_a_spec_survives_its_json() -> None:
    spec = RuntimeSpec(runtime="onnxruntime", provider=CUDA.name, input_names=("a", "b"), device=1, pad_to=4)
    assert RuntimeSpec.from_json(spec.to_json()) == spec


def test_provider_names_are_written_only_in_the_table() -> None:
    """The runtimes and the profiler name a provider through its row, never by a string of their own."""
    # `neuron` names a hardware kind and a generator as well as a provider: it cannot be told apart.
    names = "|".join(re.escape(n) for n in EXECUTION_PROVIDERS if n not in KINDS)
    literal = re.compile(rf"[\"']({names})[\"']")
    sources = [*(ROOT / "infaas" / "runtimes").glob("*.py"), *(ROOT / "services" / "profiler").glob("*.py")]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sources
        if path.name != "providers.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert found == []
