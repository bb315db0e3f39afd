"""PyTorch uploads beyond one float input and one output: integer token ids beside a float mask, tuples of
outputs, a classifier that returns its label before its scores; and what is refused, with why."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from infaas.core.errors import InvalidInput, InvalidModel
from services.registry.intake.checks import check_upload
from tests.token_model import TokenModel, accuracy, counted_token_model


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> TokenModel:
    return counted_token_model(tmp_path_factory.mktemp("tokens"))


def _onnx_answers(onnx_bytes: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))  # type: ignore[arg-type]


@pytest.mark.parametrize("form", ["torchscript", "exported"])
def test_two_inputs_of_their_own_names_and_dtypes_and_a_tuple_of_outputs(
    tokens: TokenModel, form: str
) -> None:
    assert accuracy(tokens.module, tokens.validation) > 0.8  # a real model, not noise
    checked = check_upload(
        getattr(tokens, form).read_bytes(), tokens.validation.read_bytes(), "classification"
    )
    spec = checked.signature
    assert [(s.name, s.dtype, s.shape) for s in spec.inputs] == [
        ("ids", "int64", (None, 64)),
        ("mask", "float32", (None, 64)),
    ]
    assert [(s.name, s.shape) for s in spec.outputs] == [("output_0", (None, 10)), ("output_1", (None, 24))]
    assert checked.torchscript_bytes is not None
    assert checked.onnx_bytes is not None
    data = np.load(tokens.validation)
    feeds = {"ids": data["ids"][:50], "mask": data["mask"][:50]}
    logits, pooled = _onnx_answers(checked.onnx_bytes, feeds)
    with torch.inference_mode():
        expected = tokens.module(torch.from_numpy(feeds["ids"]), torch.from_numpy(feeds["mask"]))
    np.testing.assert_allclose(logits, expected[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(pooled, expected[1].numpy(), atol=1e-5)


def test_a_label_before_the_scores_is_served_scores_first_through_onnx(tmp_path: Path) -> None:
    model = counted_token_model(tmp_path, label_first=True)
    checked = check_upload(model.torchscript.read_bytes(), model.validation.read_bytes(), "classification")
    assert [(s.name, s.dtype) for s in checked.signature.outputs] == [
        ("output_1", "float32"),
        ("output_0", "int64"),
    ]
    assert checked.torchscript_bytes is None  # a TorchScript form would answer in the module's order
    assert checked.onnx_bytes is not None
    data = np.load(model.validation)
    scores, labels = _onnx_answers(checked.onnx_bytes, {"ids": data["ids"], "mask": data["mask"]})
    np.testing.assert_array_equal(scores.argmax(1), labels)
    assert float((labels == data["y"]).mean()) == pytest.approx(accuracy(model.module, model.validation))


def test_inputs_missing_from_the_validation_set_are_named(tokens: TokenModel) -> None:
    data = np.load(tokens.validation)
    buf = io.BytesIO()
    np.savez(buf, x=data["ids"], y=data["y"])
    with pytest.raises(InvalidInput, match="under key 'ids'.*forward takes ids, mask"):
        check_upload(tokens.torchscript.read_bytes(), buf.getvalue(), "classification")


class _TakesAnInt(torch.nn.Module):
    def forward(self, x: torch.Tensor, k: int) -> torch.Tensor:
        return x[:, :k]


class _ReturnsADict(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"scores": x}


def _script(module: torch.nn.Module) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(module)  # type: ignore[no-untyped-call]
        buf = io.BytesIO()
        torch.jit.save(scripted, buf)  # type: ignore[no-untyped-call]
    return buf.getvalue()


def _validation(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, x=x, y=np.zeros(len(x), dtype=np.int64))
    return buf.getvalue()


def test_a_forward_that_takes_more_than_tensors_is_refused() -> None:
    with pytest.raises(InvalidModel, match="must take one or more tensors and nothing else"):
        check_upload(_script(_TakesAnInt()), _validation(np.ones((4, 3), np.float32)), "classification")


def test_outputs_other_than_tensors_are_refused() -> None:
    with pytest.raises(InvalidModel, match="must return a tensor, or a tuple or list of tensors"):
        check_upload(_script(_ReturnsADict()), _validation(np.ones((4, 3), np.float32)), "classification")


def test_a_validation_array_of_strings_is_refused() -> None:
    buf = io.BytesIO()
    np.savez(buf, x=np.array([["a", "b"], ["c", "d"]]), y=np.zeros(2, dtype=np.int64))
    with pytest.raises(InvalidInput, match="must be a numeric array"):
        check_upload(_script(_ReturnsADict()), buf.getvalue(), "classification")


def test_arrays_the_model_does_not_take_are_left_alone(tokens: TokenModel) -> None:
    data = np.load(tokens.validation)
    buf = io.BytesIO()
    np.savez(buf, ids=data["ids"], mask=data["mask"], y=data["y"], notes=np.array(["kept", "aside"]))
    checked = check_upload(tokens.torchscript.read_bytes(), buf.getvalue(), "classification")
    assert [s.name for s in checked.signature.inputs] == ["ids", "mask"]
