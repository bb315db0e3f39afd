"""A PyTorch model unlike the demo's: two inputs, integer token ids and a float mask, and a tuple of
outputs. Each digits image (scikit-learn's `load_digits`) is read as a sequence of 64 tokens, the pixel
intensities 0–16 offset by their position, padded: a random tail of 0–16 tokens masked out. An embedding
bag and a linear layer are trained on it for a few seconds with a fixed seed (~0.92 held out).

`counted_token_model` is the same module with no training: its weights are counted from the training rows
in milliseconds (each token's log frequency per class, read by an identity head), ~0.91 held out: the
model of the unit tests, which train nothing."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits

VOCAB = 17 * 64  # 17 intensities at each of 64 positions
LENGTH = 64


class TokenClassifier(torch.nn.Module):
    def __init__(self, *, label_first: bool = False) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 24)
        self.head = torch.nn.Linear(24, 10)
        self.label_first = label_first

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pooled = (self.embed(ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        logits = self.head(pooled)
        if self.label_first:
            return logits.argmax(1), logits
        return logits, pooled


def token_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids int64 (n, 64), mask float32 (n, 64), labels int64 (n,)) over the whole digits set."""
    digits = load_digits()
    ids = (digits.data.astype(np.int64) + np.arange(LENGTH) * 17).astype(np.int64)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(48, LENGTH + 1, size=len(ids))  # padded sequences: the tail masked out
    mask = (np.arange(LENGTH) < lengths[:, None]).astype(np.float32)
    order = rng.permutation(len(ids))
    return ids[order], mask[order], digits.target[order].astype(np.int64)


@dataclass(frozen=True)
class TokenModel:
    torchscript: Path
    exported: Path
    validation: Path
    module: TokenClassifier


def token_model(directory: Path, *, label_first: bool = False) -> TokenModel:
    """Trained once per directory: its TorchScript and torch.export archives and a validation set of
    300 held-out rows under the forward's argument names."""
    torch.manual_seed(0)
    ids, mask, y = token_rows()
    train = slice(0, len(y) - 300)
    model = TokenClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    tid, tmask, ty = (torch.from_numpy(a[train]) for a in (ids, mask, y))
    for _ in range(40):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tid, tmask)[0], ty)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    return _save(model, directory, label_first=label_first)


def counted_token_model(directory: Path, *, label_first: bool = False) -> TokenModel:
    """`token_model` without training: the embedding holds each token's smoothed log frequency per class
    over the training rows (its other dimensions zero) and the head reads those ten dimensions as they
    are, so the logits are the mean log frequency of the tokens a row shows: a naive Bayes vote."""
    ids, mask, y = token_rows()
    train = slice(0, len(y) - 300)
    shown = mask[train] > 0
    counts = np.zeros((VOCAB, 10))
    np.add.at(counts, (ids[train][shown], np.repeat(y[train], shown.sum(1))), 1.0)
    log_freq = np.log((counts + 1.0) / (counts.sum(1, keepdims=True) + 10.0))
    model = TokenClassifier()
    with torch.no_grad():
        model.embed.weight.zero_()
        model.embed.weight[:, :10] = torch.from_numpy(log_freq).float()
        model.head.weight.zero_()
        model.head.weight[:, :10] = torch.eye(10)
        model.head.bias.zero_()
    return _save(model, directory, label_first=label_first)


def _save(model: TokenClassifier, directory: Path, *, label_first: bool) -> TokenModel:
    directory.mkdir(parents=True, exist_ok=True)
    ids, mask, y = token_rows()
    model.label_first = label_first
    model.eval()
    held = slice(len(y) - 300, None)
    validation = directory / "tokens.npz"
    np.savez(validation, ids=ids[held], mask=mask[held], y=y[held])
    example = (torch.from_numpy(ids[:2]), torch.from_numpy(mask[:2]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.trace(model, example)  # type: ignore[no-untyped-call]
        batch = torch.export.Dim("batch", min=1, max=4096)
        program = torch.export.export(model, example, dynamic_shapes=({0: batch}, {0: batch}))
        torchscript = directory / "tokens.pt"
        torch.jit.save(scripted, str(torchscript))  # type: ignore[no-untyped-call]
    buf = io.BytesIO()
    torch.export.save(program, buf)
    exported = directory / "tokens.pt2"
    exported.write_bytes(buf.getvalue())
    return TokenModel(torchscript, exported, validation, model)


def accuracy(model: TokenClassifier, validation: Path) -> float:
    data = np.load(validation)
    with torch.inference_mode():
        logits = model(torch.from_numpy(data["ids"]), torch.from_numpy(data["mask"]))[int(model.label_first)]
    return float((logits.argmax(1).numpy() == data["y"]).mean())
