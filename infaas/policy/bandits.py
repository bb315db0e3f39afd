"""Clipper's model-selection layer: which of an app's models answer a query, how their outputs combine, and
how feedback moves the choice — pure functions over a frozen state (no clock, no randomness of their own,
no I/O), so the gateway's selection layer, the tests and the benchmark share one definition.

The models of one selection share a task and an output space: each answers a row with a score vector over
the same classes, and a row's *label* is the argmax of its scores.

- **Exp3** sends each query to *one* model, drawn with probabilities p_i = (1 − γ)·s_i/Σs + γ/K, and on
  feedback updates only the model that answered, by its importance-weighted loss: s_i ← s_i·exp(−η·L/p_i).
  Dividing by p_i keeps the estimate of every model's loss unbiased although most queries never see it.
- **Exp4** sends each query to *all* models and combines their labels by a weighted vote; every model's
  loss is observed on feedback (full information), so w_i ← w_i·exp(−η·L_i) with no importance weight.
- **Confidence** is the weight-free fraction of the models that answered whose label is the combined one
  (Clipper: agreement of the ensemble). A single model's answer has confidence 1: nothing disagrees with it.

Weights are kept relative: after an update they are divided by their maximum, which leaves every
probability and every vote unchanged and keeps a long run of losses from underflowing to zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

MIN_WEIGHT = 1e-12
"""The smallest relative weight kept: a model never becomes impossible to choose again, so the bandit can
notice when it improves (Exp3's γ floor covers the draw, this the vote)."""


@dataclass(frozen=True, slots=True)
class BanditConfig:
    """η: the learning rate (how far one loss moves a weight); γ: Exp3's share of uniform exploration."""

    eta: float = 0.1
    gamma: float = 0.1

    def __post_init__(self) -> None:
        if not (self.eta > 0 and math.isfinite(self.eta)):
            raise ValueError("eta must be a positive finite number")
        if not 0 <= self.gamma <= 1:
            raise ValueError("gamma must be within [0, 1]")


@dataclass(frozen=True, slots=True)
class SelectionState:
    """The relative weight of each of a selection's models (in the selection's model order), and how many
    feedbacks moved them."""

    weights: tuple[float, ...]
    observed: int = 0

    @classmethod
    def uniform(cls, models: int) -> SelectionState:
        if models < 1:
            raise ValueError("a selection needs at least one model")
        return cls((1.0,) * models)


def _normalized(weights: Sequence[float]) -> tuple[float, ...]:
    top = max(weights)
    return tuple(max(w / top, MIN_WEIGHT) for w in weights)


def exp3_probabilities(state: SelectionState, config: BanditConfig) -> tuple[float, ...]:
    """p_i = (1 − γ)·s_i/Σs + γ/K."""
    total = sum(state.weights)
    k = len(state.weights)
    return tuple((1 - config.gamma) * w / total + config.gamma / k for w in state.weights)


def exp3_select(state: SelectionState, config: BanditConfig, draw: float) -> tuple[int, float]:
    """The model a query goes to, and the probability it had: `draw` is a uniform number in [0, 1) that
    the caller supplies (so a test can name the outcome)."""
    if not 0 <= draw < 1:
        raise ValueError("draw must be within [0, 1)")
    probabilities = exp3_probabilities(state, config)
    cumulative = 0.0
    for index, p in enumerate(probabilities):
        cumulative += p
        if draw < cumulative:
            return index, p
    return len(probabilities) - 1, probabilities[-1]  # rounding left the sum a hair under 1


def exp3_observe(
    state: SelectionState, config: BanditConfig, *, chosen: int, loss: float, probability: float
) -> SelectionState:
    """s_chosen ← s_chosen·exp(−η·L/p_chosen), with the probability the model had when it was drawn (the
    state may have moved since; the estimate is unbiased only with the one it was drawn under)."""
    if not 0 <= loss <= 1:
        raise ValueError("a loss must be within [0, 1]")
    if not 0 < probability <= 1:
        raise ValueError("a probability must be within (0, 1]")
    weights = list(state.weights)
    weights[chosen] *= math.exp(-config.eta * loss / probability)
    return SelectionState(_normalized(weights), state.observed + 1)


def exp4_observe(
    state: SelectionState, config: BanditConfig, losses: Sequence[float | None]
) -> SelectionState:
    """w_i ← w_i·exp(−η·L_i) for every model whose output was seen; `None`: a model that missed the
    query's deadline, left as it is (its loss is unknown, not zero or one)."""
    if len(losses) != len(state.weights):
        raise ValueError("one loss (or None) per model")
    weights = list(state.weights)
    for index, loss in enumerate(losses):
        if loss is None:
            continue
        if not 0 <= loss <= 1:
            raise ValueError("a loss must be within [0, 1]")
        weights[index] *= math.exp(-config.eta * loss)
    return SelectionState(_normalized(weights), state.observed + 1)


@dataclass(frozen=True, slots=True)
class Combined:
    """A combined answer: per row the label, the weighted score vector (Σ w_i·onehot_i / Σ w_i over the
    models that answered) and the confidence (the fraction of those models whose label it is)."""

    labels: npt.NDArray[np.int64]
    scores: FloatArray
    confidence: FloatArray


def labels_of(scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """A model's label per row: the argmax of its scores (a flat output is one score per class)."""
    array = np.asarray(scores)
    rows = array.shape[0]
    return np.asarray(array.reshape(rows, -1).argmax(axis=1), dtype=np.int64)


def combine(
    state: SelectionState, outputs: Sequence[npt.ArrayLike | None], *, classes: int | None = None
) -> Combined:
    """The weighted vote of the models that answered (`None`: missing, e.g. past the deadline). Ties go
    to the lower class index, so the result is a function of its arguments alone."""
    if len(outputs) != len(state.weights):
        raise ValueError("one output (or None) per model")
    present = [(w, labels_of(o)) for w, o in zip(state.weights, outputs, strict=True) if o is not None]
    if not present:
        raise ValueError("no model answered")
    rows = present[0][1].shape[0]
    if any(labels.shape[0] != rows for _, labels in present):
        raise ValueError("the models answered different numbers of rows")
    width = classes if classes is not None else 1 + max(int(labels.max()) for _, labels in present)
    votes = np.zeros((rows, width), dtype=np.float64)
    agree = np.zeros((rows, width), dtype=np.float64)
    for weight, labels in present:
        votes[np.arange(rows), labels] += weight
        agree[np.arange(rows), labels] += 1
    total = sum(w for w, _ in present)
    labels = np.asarray(votes.argmax(axis=1), dtype=np.int64)
    confidence = agree[np.arange(rows), labels] / len(present)
    return Combined(labels, votes / total, confidence)


def zero_one_loss(labels: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """The fraction of a query's rows whose label is wrong: a loss in [0, 1] for one feedback."""
    predicted = np.asarray(labels).reshape(-1)
    true = np.asarray(truth).reshape(-1)
    if predicted.shape != true.shape:
        raise ValueError("one true label per row")
    return float(np.mean(predicted != true))
