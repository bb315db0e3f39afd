"""Velox: per-user linear heads over a model's outputs. A prediction for user u is argmax(f(x)ᵀ·W_u), where
f(x) is the model's score vector with a bias 1 appended, and W_u (features × classes) is ridge regression of
the one-hot true labels on f, updated online on each feedback row with Sherman–Morrison:

    A⁻¹ ← A⁻¹ − (A⁻¹ f)(fᵀ A⁻¹) / (1 + fᵀ A⁻¹ f),   B ← B + f yᵀ,   W = A⁻¹ B

which costs O(d²) per row instead of the O(d³) of solving A W = B again. A new user starts from the mean
W over the users seen (Velox: the population's head is the best prior for someone unknown), with the
identity head (W = I plus a zero bias row: the model's own label) when nobody is known yet.

Staleness: each head keeps an exponentially weighted running error of its own predictions and of the
bare model's on the same rows; a head whose running error exceeds the model's by `stale_margin` is
*stale* (the user's labels moved away from what it learned), reported with both numbers. Pure: arrays
in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class HeadConfig:
    """ridge: λ of A = λI + Σ f fᵀ (how strongly a head holds to its start); decay: the weight of the past
    in the running errors; stale_margin: how much worse than the bare model a head may run."""

    ridge: float = 1.0
    decay: float = 0.9
    stale_margin: float = 0.1


@dataclass(frozen=True, slots=True)
class Head:
    """One user's head: A⁻¹ (d × d), B (d × classes), the running errors, and the rows it has seen."""

    a_inv: FloatArray
    b: FloatArray
    error: float = 0.0
    model_error: float = 0.0
    updates: int = 0

    @property
    def weights(self) -> FloatArray:
        return np.asarray(self.a_inv @ self.b, dtype=np.float64)

    def stale(self, config: HeadConfig) -> bool:
        return self.updates > 0 and self.error > self.model_error + config.stale_margin


def features(scores: npt.ArrayLike) -> FloatArray:
    """f(x): the model's scores per row with a bias 1 appended (rows × (classes + 1))."""
    array = np.asarray(scores, dtype=np.float64)
    array = array.reshape(array.shape[0], -1)
    return np.hstack([array, np.ones((array.shape[0], 1))])


def new_head(classes: int, config: HeadConfig, prior: FloatArray | None = None) -> Head:
    """A head whose weights are `prior` (the mean head of the users seen), or the identity head: with
    A = λI, B = λ·W₀ gives W = A⁻¹B = W₀ before any feedback."""
    d = classes + 1
    start = prior if prior is not None else np.vstack([np.eye(classes), np.zeros((1, classes))])
    if start.shape != (d, classes):
        raise ValueError(f"a prior head must be {d} × {classes}")
    return Head(np.eye(d) / config.ridge, config.ridge * np.asarray(start, dtype=np.float64))


def predict(head: Head, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
    return np.asarray((features(scores) @ head.weights).argmax(axis=1), dtype=np.int64)


def update(head: Head, scores: npt.ArrayLike, truth: npt.ArrayLike, config: HeadConfig) -> Head:
    """One feedback (a query's rows and their true labels) folded into the head row by row."""
    f = features(scores)
    labels = np.asarray(truth, dtype=np.int64).reshape(-1)
    classes = head.b.shape[1]
    if labels.shape[0] != f.shape[0]:
        raise ValueError("one true label per row")
    if f.shape[1] != head.a_inv.shape[0]:
        raise ValueError(f"the head takes {head.a_inv.shape[0] - 1} scores per row, not {f.shape[1] - 1}")
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"labels must be within [0, {classes})")
    # The errors of the predictions made before this feedback: what the user saw.
    wrong = float(np.mean(predict(head, scores) != labels))
    model_wrong = float(np.mean(f[:, :-1].argmax(axis=1) != labels))
    a_inv, b = head.a_inv.copy(), head.b.copy()
    for row, label in zip(f, labels, strict=True):
        af = a_inv @ row
        a_inv -= np.outer(af, af) / (1.0 + row @ af)
        b[:, label] += row
    first = head.updates == 0
    keep = config.decay
    return Head(
        a_inv,
        b,
        wrong if first else keep * head.error + (1 - keep) * wrong,
        model_wrong if first else keep * head.model_error + (1 - keep) * model_wrong,
        head.updates + labels.size,
    )


def mean_weights(heads: list[FloatArray]) -> FloatArray | None:
    """The prior for a new user: the mean of the known users' weights, or None when there is none."""
    return np.mean(np.stack(heads), axis=0) if heads else None
