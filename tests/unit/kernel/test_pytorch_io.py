"""PyTorch uploads: format sniffing, static refusal of hostile archives, loading and ONNX conversion.

Hostile payloads are only ever written (pickle.dumps, zip members, TorchScript source); each would create
a marker file if anything executed it, and the tests assert the marker is absent. The one deliberate run
is a control showing that torch.jit.load itself executes archive code.
"""

import io
import os
import pickle
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

from infaas.core.errors import InvalidModel
from infaas.runtimes.pytorch_io import load_exported, load_torchscript, to_onnx
from infaas.runtimes.torch_archives import ModelFormat, scan_archive, sniff_format


class _Payload:
    """Pickles as a call to os.system; never unpickled here."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


class _SetStateWriter(nn.Module):
    """Runs torch.save from TorchScript __setstate__, i.e. during torch.jit.load."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.register_buffer("w", torch.ones(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @torch.jit.export
    def __getstate__(self) -> tuple[torch.Tensor, str]:
        return (self.w, self.marker)

    @torch.jit.export
    def __setstate__(self, state: tuple[torch.Tensor, str]) -> None:
        torch.save(state[0], state[1])
        self.w = state[0]
        self.marker = state[1]
        self.training = False


class _ForwardWriter(nn.Module):
    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.save(x, self.marker)
        return x


class _Runner:
    """Becomes a TorchScript interface in the test (scripting warns, so not at import)."""

    def run(self, x: torch.Tensor) -> torch.Tensor:
        pass  # TorchScript interfaces demand `pass`


class _FileWriter:
    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, x: torch.Tensor) -> torch.Tensor:
        torch.save(x, self.path)
        return x


class _Dispatcher(nn.Module):
    """Calls the writer through the interface: a call the inliner cannot follow."""

    runner: _Runner

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.runner = _FileWriter(marker)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.runner.run(x)


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10), nn.Softmax(-1)).eval()


def _save_script(module: nn.Module, *example: torch.Tensor) -> bytes:
    """Author-side TorchScript (trace when given inputs); torch.jit itself warns that it is deprecated."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.trace(module, example) if example else torch.jit.script(module), buf)
    return buf.getvalue()


def _rewrite(archive: bytes, edit: Callable[[str, bytes], bytes]) -> bytes:
    src, out = zipfile.ZipFile(io.BytesIO(archive)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, edit(info.filename, src.read(info)))
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name, data in members.items():
            dst.writestr(name, data)
    return out.getvalue()


def _refused(data: bytes, loader: Callable[[bytes], object] = sniff_format) -> InvalidModel:
    with pytest.raises(InvalidModel) as caught:
        loader(data)
    assert caught.value.status == 422
    return caught.value


@pytest.fixture(scope="module")
def model() -> nn.Module:
    return _model()


@pytest.fixture(scope="module")
def x() -> torch.Tensor:
    return torch.randn(5, 64)


@pytest.fixture(scope="module")
def traced(model: nn.Module, x: torch.Tensor) -> bytes:
    return _save_script(model, x)


@pytest.fixture(scope="module")
def scripted(model: nn.Module) -> bytes:
    return _save_script(model)


@pytest.fixture(scope="module")
def exported(model: nn.Module, x: torch.Tensor) -> bytes:
    batch = torch.export.Dim("batch", min=1, max=4096)
    buf = io.BytesIO()
    torch.export.save(torch.export.export(model, (x,), dynamic_shapes=({0: batch},)), buf)
    return buf.getvalue()


def test_sniff_recognizes_each_format(
    traced: bytes, scripted: bytes, exported: bytes, x: torch.Tensor
) -> None:
    onnx_bytes = to_onnx(load_torchscript(traced), input_names=["input"], example_inputs=(x,))
    assert sniff_format(onnx_bytes) is ModelFormat.ONNX
    assert sniff_format(traced) is ModelFormat.TORCHSCRIPT
    assert sniff_format(scripted) is ModelFormat.TORCHSCRIPT
    assert sniff_format(exported) is ModelFormat.TORCH_EXPORT


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])  # GLOBAL and STACK_GLOBAL
def test_malicious_pickle_is_refused_without_running(traced: bytes, tmp_path: Path, protocol: int) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker), protocol=protocol)
    hostile = _rewrite(traced, lambda name, data: payload if name.endswith("/data.pkl") else data)
    assert sniff_format(hostile) is ModelFormat.TORCHSCRIPT
    error = _refused(hostile, load_torchscript)
    assert "refuses pickled object" in error.message and "system" in error.message
    _refused(payload)  # the same pickle uploaded as a plain file
    assert not marker.exists()


def test_torchscript_setstate_is_refused_before_load(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    archive = _save_script(_SetStateWriter(str(marker)))
    assert "__setstate__" in _refused(archive, load_torchscript).message
    assert not marker.exists()
    # Control, on our own harmless archive: plain torch.jit.load does run it, so the refusal is needed.
    control = tmp_path / "control"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.load(io.BytesIO(_save_script(_SetStateWriter(str(control)))))
    assert control.exists()


def test_torchscript_file_operators_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    archive = _save_script(_ForwardWriter(str(marker)))
    assert "aten::save" in _refused(archive, load_torchscript).message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.interface(_Runner)
        torch.jit.script(_FileWriter)
    dispatching = _save_script(_Dispatcher(str(marker)))
    assert "_Runner" in _refused(dispatching, load_torchscript).message
    assert not marker.exists()


def _edit_program(archive: bytes, edit: Callable[[str], str]) -> bytes:
    return _rewrite(archive, lambda n, d: edit(d.decode()).encode() if "/models/" in n else d)


def test_export_archive_code_paths_are_refused(exported: bytes, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    # sympy.sympify evals expr_str: without the scan this runs os.system inside torch.export.load.
    evil = f"__import__('os').system('touch {marker}') * 0 + Symbol("
    sym = _edit_program(exported, lambda j: j.replace('"expr_str": "Symbol(', f'"expr_str": "{evil}', 1))
    assert "symbolic expression" in _refused(sym, load_exported).message
    target = _edit_program(exported, lambda j: j.replace("torch.ops.aten.relu.default", "torch.os.system"))
    assert "refused target" in _refused(target, load_exported).message
    save = _edit_program(exported, lambda j: j.replace("aten.relu.default", "aten.save.default"))
    assert "aten.save" in _refused(save, load_exported).message
    config = "/data/weights/model_weights_config.json"
    pickled = _rewrite(exported, lambda n, d: d.replace(b'"use_pickle": false', b'"use_pickle": true', 1)
                       if n.endswith(config) else d)  # fmt: skip
    assert "pickled object" in _refused(pickled, load_exported).message
    nested = pickle.dumps(_Payload(marker))
    inputs = _rewrite(exported, lambda n, d: _rewrite(d, lambda m, e: nested if m.endswith(".pkl") else e)
                      if "/sample_inputs/" in n else d)  # fmt: skip
    assert "refuses pickled object" in _refused(inputs, load_exported).message
    assert not marker.exists()


def test_malformed_archives_are_refused(traced: bytes, model: nn.Module) -> None:
    checkpoint = io.BytesIO()
    torch.save(model.state_dict(), checkpoint)
    _refused(checkpoint.getvalue())  # torch.save, not an archive of code
    _refused(pickle.dumps({"weights": [1.0, 2.0]}))
    _refused(os.urandom(4096))
    _refused(b"")
    _refused(_zip({"a/readme.txt": b"hello"}))
    assert "traversal" in _refused(_zip({"archive/code/m.py": b"", "../evil": b"x"})).message
    _refused(_zip({"archive/code/m.py": b"", "version": b"3"}))  # members outside the archive folder
    _refused(traced[: len(traced) // 2])
    with pytest.raises(InvalidModel, match="expands beyond"):
        scan_archive(traced, ModelFormat.TORCHSCRIPT, limit=1000)
    many = _zip({f"archive/code/{i}.py": b"" for i in range(10_001)})
    with pytest.raises(InvalidModel, match="members"):
        sniff_format(many)


@pytest.mark.parametrize("kind", ["traced", "scripted"])
def test_load_torchscript_matches_original(
    kind: str, request: pytest.FixtureRequest, model: nn.Module, x: torch.Tensor
) -> None:
    loaded = load_torchscript(request.getfixturevalue(kind))
    assert not loaded.training
    torch.testing.assert_close(loaded(x), model(x), atol=1e-6, rtol=0)


def test_load_exported_matches_original(exported: bytes, model: nn.Module, x: torch.Tensor) -> None:
    program = load_exported(exported)
    torch.testing.assert_close(program.module()(x), model(x), atol=1e-6, rtol=0)


@pytest.mark.parametrize("kind", ["traced", "scripted", "exported"])
def test_to_onnx_has_dynamic_batch(
    kind: str, request: pytest.FixtureRequest, model: nn.Module, x: torch.Tensor
) -> None:
    archive = request.getfixturevalue(kind)
    loaded = load_exported(archive) if kind == "exported" else load_torchscript(archive)
    onnx_bytes = to_onnx(loaded, input_names=["input"], example_inputs=(x,), output_names=["probs"])
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    for batch in (1, 7):
        inputs = torch.randn(batch, 64)
        (got,) = session.run(["probs"], {"input": inputs.numpy()})
        np.testing.assert_allclose(got, model(inputs).detach().numpy(), atol=1e-5, rtol=0)


def test_to_onnx_refuses_static_batch_program(model: nn.Module, x: torch.Tensor) -> None:
    program = torch.export.export(model, (x,))
    with pytest.raises(InvalidModel, match="dynamic batch"):
        to_onnx(program, input_names=["input"], example_inputs=(x,))
