"""Coded redundancy with parity models (ParM): the encoder, the decoder and a coding group's bookkeeping,
pure functions over the outputs handed in (no clock, no I/O), so the dispatcher, the trainer, the
simulator and the benchmark all share one definition.

k queries of one model dispatched one after another form a *coding group*. The encoder sums their inputs
into a parity query P = Σ X_i, which a *parity model* F_P (the deployed model's architecture, trained so
that F_P(P) ≈ Σ F(X_i)) answers. Once the parity output and k−1 of the members' outputs are in, the
missing member's output is reconstructed: F̂(X_j) = F_P(P) − Σ_{i≠j} F(X_i). A member's own output, if it
comes first, is the answer; a reconstruction only stands in for one that is late.

The encoder is the sum, for every input shape. The paper's concatenation encoder (tiling k downsampled
images into one) pays off for image classifiers whose accuracy a sum of images blurs; our models take one
flat or small tensor, where the sum is the paper's default and costs one NumPy add per member.

A group holds members of one input shape (a query is a batch: rows are summed row by row, so every member
must have the same rows). A group that does not fill within its bound is *not coded*: no parity query is
sent and its members are answered by their own outputs only. Padding it with zero inputs instead would
spend a parity query on fewer members and needs F(0) to decode, for a group that is rare under load (the
bound only matters when queries are sparse, when stragglers cost least).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]

MIN_K = 2
MAX_K = 4

TRAINABLE_OPS = frozenset(
    {
        "Gemm",
        "MatMul",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Relu",
        "LeakyRelu",
        "Sigmoid",
        "Tanh",
        "Softmax",
        "Identity",
        "Dropout",
        "Constant",
        "Conv",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "BatchNormalization",
        "Reshape",
        "Flatten",
        "Concat",
        "Transpose",
    }
)
"""ONNX operators a parity model can be trained through (`infaas.runtimes.onnx_torch` runs them as torch
functions); the registry refuses parity for a graph with any other, before a training is queued."""
PARITY_TASKS = frozenset({"classification", "regression"})

PARITY_MARK = ".parity-k"
"""In every parity-model variant id (`parity_vid`), so the planner knows a parity instance whose parity
model is no longer published (nothing else names it)."""


def parity_vid(model: str, k: int, generation: int) -> str:
    """The hidden variant id of a model's parity model: k and the training's generation in it, so an
    executor never takes one parity model for another."""
    return f"{model}{PARITY_MARK}{k}-g{generation}-onnxruntime-fp32-cpu"


def encode(inputs: Sequence[Array]) -> Array:
    """The parity query of a coding group: the element-wise sum of its members' inputs (all one shape)."""
    if len(inputs) < MIN_K:
        raise ValueError(f"a coding group has at least {MIN_K} members, got {len(inputs)}")
    shape = inputs[0].shape
    total = np.zeros(shape, dtype=np.float32)
    for x in inputs:
        if x.shape != shape:
            raise ValueError(f"members of a coding group share one shape: {x.shape} is not {shape}")
        total += x
    return total


def decode(parity_output: Array, others: Sequence[Array]) -> Array:
    """The reconstructed output of the one member missing from `others` (the k−1 outputs that arrived):
    F_P(P) − Σ_{i≠j} F(X_i)."""
    result = np.array(parity_output, dtype=np.float32, copy=True)
    for y in others:
        if y.shape != result.shape:
            raise ValueError(f"an output of shape {y.shape} cannot decode a parity output of {result.shape}")
        result -= y
    return result


@dataclass
class CodingGroup:
    """What has arrived for one coding group of `k` members (indexes 0..k−1) and its parity query.

    `arrive` and `arrive_parity` return the members this arrival made reconstructable: exactly one
    member's output is missing, the other k−1 and the parity output are in. A member is reconstructed at
    most once, and never after its own output came (the caller answered it already)."""

    k: int
    outputs: dict[int, Array] = field(default_factory=dict)
    parity: Array | None = None
    reconstructed: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not MIN_K <= self.k <= MAX_K:
            raise ValueError(f"k must be {MIN_K}..{MAX_K}, got {self.k}")

    def arrive(self, member: int, output: Array) -> list[tuple[int, Array]]:
        """A member's own output came back; returns [(member, reconstructed output)] now decodable."""
        if not 0 <= member < self.k:
            raise ValueError(f"member {member} is not in a group of {self.k}")
        self.outputs.setdefault(member, output)
        return self._decodable()

    def arrive_parity(self, output: Array) -> list[tuple[int, Array]]:
        """The parity model's output came back; returns [(member, reconstructed output)] now decodable."""
        if self.parity is None:
            self.parity = output
        return self._decodable()

    @property
    def settled(self) -> bool:
        """Every member has its answer (own or reconstructed): nothing more can come of this group."""
        return len(self.outputs.keys() | self.reconstructed) == self.k

    def _decodable(self) -> list[tuple[int, Array]]:
        missing = [j for j in range(self.k) if j not in self.outputs]
        if self.parity is None or len(missing) != 1 or missing[0] in self.reconstructed:
            return []
        (j,) = missing
        self.reconstructed.add(j)
        return [(j, decode(self.parity, list(self.outputs.values())))]


@dataclass
class GroupFormer:
    """Consecutive queries of one model into coding groups of `k`, each member numbered by its position.

    A group is open from its first member for at most `bound_s`: a query arriving later, or of another
    shape than the members', leaves the open group *not coded* (its members are answered by their own
    outputs only) and opens the next one. No query ever waits for a group: members are dispatched as they
    come, and only the parity query waits for the group to fill, at most `bound_s`."""

    k: int
    bound_s: float
    members: list[tuple[int, Array]] = field(default_factory=list)
    opened_at: float = 0.0
    uncoded: int = 0
    """Queries left in groups that did not fill within the bound (for the metrics)."""

    def add(self, query_id: int, inputs: Array, now: float) -> list[tuple[int, Array]] | None:
        """Add a dispatched query; returns the full group [(query id, inputs)] once it has k members."""
        if self.members and (now - self.opened_at > self.bound_s or inputs.shape != self.members[0][1].shape):
            self.uncoded += len(self.members)
            self.members = []
        if not self.members:
            self.opened_at = now
        self.members.append((query_id, inputs))
        if len(self.members) < self.k:
            return None
        full, self.members = self.members, []
        return full
