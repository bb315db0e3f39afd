"""The admin UI shows an app's redundancy and a model's parity model: its state, its degraded-mode
accuracy next to the deployed model's, and its training loss as a chart."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.ui.charts import model_charts, parity_loss_chart
from gateway.ui.routes import render
from infaas.schemas.api import App, Model, SignatureOut, TensorSpecOut, VariantProgress
from infaas.schemas.parity import ParityStatus, Redundancy

NOW = datetime(2026, 11, 24, tzinfo=UTC)


def parity_status() -> ParityStatus:
    return ParityStatus(
        model="m1",
        k=2,
        generation=1,
        state="ready",
        reason=None,
        steps_done=100,
        steps_total=100,
        losses=[(50, 4.0), (100, 0.5)],
        metric="accuracy",
        deployed_score=0.978,
        degraded_score=0.912,
        holdout_rows=134,
        train_rows=405,
        train_seconds=3.0,
        artifact_digest="d" * 64,
        updated_at=NOW,
    )


def test_the_model_page_shows_the_parity_model_and_its_loss_curve() -> None:
    model = Model(
        name="m1",
        app="a1",
        task="classification",
        format="onnx",
        status="ready",
        status_reason=None,
        artifact_digest="a" * 64,
        size_bytes=10,
        validation_rows=540,
        signature=SignatureOut(
            inputs=[TensorSpecOut(name="x", dtype="float32", shape=[None, 64])],
            outputs=[TensorSpecOut(name="p", dtype="float32", shape=[None, 10])],
        ),
        progress=VariantProgress(total=0, pending=0, profiling=0, ready=0, failed=0),
        created_at=NOW,
        updated_at=NOW,
    )
    status = parity_status()
    html = render(
        "model.html",
        page="models",
        model=model,
        variants=[],
        charts=model_charts("m1", []),
        parity=status,
        parity_chart=parity_loss_chart(status),
    ).body.decode()
    assert "Parity model (k=2)" in html
    assert "deployed 0.978, reconstructed (degraded mode) 0.912" in html
    assert 'id="parity-loss"' in html and "Parity model training loss" in html
    without = render(
        "model.html", page="models", model=model, variants=[], charts=model_charts("m1", []), parity=None
    ).body.decode()
    assert "Parity model" not in without


def test_the_apps_page_shows_redundancy() -> None:
    apps = [
        App(
            name="a1",
            default_latency_ms=None,
            default_min_accuracy=None,
            slo_policy="error",
            created_at=NOW,
        ),
        App(
            name="a2",
            default_latency_ms=None,
            default_min_accuracy=None,
            slo_policy="error",
            redundancy=Redundancy(kind="parity", k=3),
            created_at=NOW,
        ),
    ]
    html = render("apps.html", page="apps", apps=apps).body.decode()
    assert "<td>none</td>" in html and "<td>parity k=3</td>" in html
