"""Training a parity model (ParM) for a deployed model: the training itself, over arrays handed in.

The parity model F_P has the deployed model's graph (`infaas.runtimes.onnx_torch`: the ONNX graph run
as a torch module, its weights trainable), less a final softmax: it is trained so that F_P(Σ X_i) is
Σ F(X_i), the sum of the deployed model's outputs for k inputs, as in the paper (MSE, Adam lr 1e-3, L2
1e-5, batches of 64 k-tuples). It starts from the deployed model's weights rather than from random ones:
the shapes of the features the deployed layers found are a good start for sums of them, and it reaches
a given loss in fewer steps on a shared machine.

Data and augmentation: the validation inputs (plus any unlabeled inputs the app gave) are split once;
a held-out share (with labels) is never trained on and measures the *degraded-mode accuracy*. The rest
is the training pool, and the augmentation is the k-tuples themselves: every step draws fresh random
k-tuples from the pool (n^k combinations for n rows), so no two batches repeat even on a small pool. No
other augmentation: noise or flips would teach F_P outputs of inputs the deployed model never sees.

The targets are the deployed model's outputs computed by ONNX Runtime (what the system serves), once
per row; the degraded-mode accuracy is measured on the exported ONNX parity model, run by ONNX Runtime
too, so the number describes the artifact that gets served.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import torch

from infaas.policy.parity import decode, encode
from infaas.runtimes.onnx_torch import OnnxModule, UnsupportedGraph, with_parameters
from infaas.runtimes.providers import CPU

Floats = npt.NDArray[np.float32]
Progress = Callable[[int, float], None]


@dataclass(frozen=True)
class ParityConfig:
    """How a parity model is trained (the paper's optimizer; steps and the held-out share are ours)."""

    k: int
    steps: int = 1500
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-5
    holdout: float = 0.25
    seed: int = 0
    report_every: int = 50
    threads: int = 1


@dataclass(frozen=True)
class ParityResult:
    """A trained parity model and what it is worth: its loss curve [(step, loss)], and on the held-out
    rows the deployed model's score and the score of outputs reconstructed from the parity model
    (`metric`: accuracy for classification, R² for regression)."""

    onnx_bytes: bytes
    losses: list[tuple[int, float]]
    metric: str
    deployed_score: float
    degraded_score: float
    holdout_rows: int
    train_rows: int
    train_seconds: float
    notes: list[str] = field(default_factory=list)


def _session(model_bytes: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model_bytes, options, providers=[CPU.name])


def _run(session: ort.InferenceSession, x: Floats) -> Floats:
    name = session.get_inputs()[0].name
    return np.asarray(session.run(None, {name: x})[0], dtype=np.float32)


def _score(task: str, outputs: Floats, labels: npt.NDArray[np.generic]) -> float:
    if task == "classification":
        return float(np.mean(np.argmax(outputs, axis=-1) == labels.astype(np.int64)))
    y = labels.astype(np.float64).reshape(outputs.shape)
    residual = float(np.sum((y - outputs) ** 2))
    total = float(np.sum((y - y.mean(axis=0)) ** 2)) or 1.0
    return 1.0 - residual / total


def degraded_outputs(
    parity: ort.InferenceSession, inputs: Floats, outputs: Floats, k: int
) -> tuple[Floats, int]:
    """Every row of `inputs` (in consecutive groups of k; a last partial group is left out) reconstructed
    from the parity output and the other k−1 deployed `outputs`; returns (reconstructions, rows used)."""
    used = len(inputs) - len(inputs) % k
    rebuilt = np.empty_like(outputs[:used])
    for start in range(0, used, k):
        members = list(range(start, start + k))
        parity_out = _run(parity, encode([inputs[i : i + 1] for i in members]))
        for j in members:
            rebuilt[j] = decode(parity_out, [outputs[i : i + 1] for i in members if i != j])[0]
    return rebuilt, used


def train_parity(
    model_bytes: bytes,
    inputs: Floats,
    labels: npt.NDArray[np.generic],
    *,
    task: str,
    config: ParityConfig,
    unlabeled: Floats | None = None,
    progress: Progress | None = None,
) -> ParityResult:
    """Train a parity model for the ONNX model `model_bytes` (one float input) on `inputs` (validation
    rows with `labels`) and `unlabeled` rows; raises `UnsupportedGraph` for a graph it cannot train."""
    if len(inputs) < 2 * config.k:
        raise UnsupportedGraph(f"{len(inputs)} validation rows are too few to train and judge k={config.k}")
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    graph = onnx.load_model_from_string(model_bytes)
    module = OnnxModule(graph, drop_softmax=True)
    deployed = _session(model_bytes)

    order = rng.permutation(len(inputs))
    n_hold = max(config.k, int(len(inputs) * config.holdout))
    hold, train = order[:n_hold], order[n_hold:]
    pool = (
        inputs[train] if unlabeled is None else np.concatenate([inputs[train], unlabeled.astype(np.float32)])
    )
    targets = _run(deployed, pool)
    x_pool, y_pool = torch.from_numpy(pool), torch.from_numpy(targets)

    optimizer = torch.optim.Adam(module.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    losses: list[tuple[int, float]] = []
    started = time.perf_counter()
    module.train()
    running = 0.0
    for step in range(1, config.steps + 1):
        tuples = torch.from_numpy(rng.integers(0, len(pool), size=(config.batch, config.k)))
        parity_in = x_pool[tuples].sum(dim=1)
        target = y_pool[tuples].sum(dim=1)
        loss = torch.nn.functional.mse_loss(module(parity_in), target)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        running += float(loss.detach())
        if step % config.report_every == 0 or step == config.steps:
            count = step % config.report_every or config.report_every
            losses.append((step, running / count))
            running = 0.0
            if progress is not None:
                progress(step, losses[-1][1])
    seconds = time.perf_counter() - started

    exported = with_parameters(graph, module).SerializeToString()
    x_hold, y_hold = inputs[hold], labels[hold]
    outputs = _run(deployed, x_hold)
    rebuilt, used = degraded_outputs(_session(exported), x_hold, outputs, config.k)
    return ParityResult(
        onnx_bytes=exported,
        losses=losses,
        metric="accuracy" if task == "classification" else "r2",
        deployed_score=_score(task, outputs[:used], y_hold[:used]),
        degraded_score=_score(task, rebuilt, y_hold[:used]),
        holdout_rows=used,
        train_rows=len(pool),
        train_seconds=seconds,
    )
