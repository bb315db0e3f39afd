"""The selection layer's Prometheus series: live accuracy per model from feedback, and what it answered."""

from __future__ import annotations

from prometheus_client import Counter

FEEDBACK_ROWS = Counter(
    "infaas_selection_feedback_rows_total",
    "Rows with feedback, per app and model that answered them (live accuracy: correct / all)",
    ["app", "model"],
)
FEEDBACK_CORRECT = Counter(
    "infaas_selection_feedback_correct_rows_total",
    "Rows with feedback that the model's own label got right, per app and model",
    ["app", "model"],
)
STALE_HEADS = Counter(
    "infaas_selection_stale_head_feedback_total",
    "Feedback on a personalized answer whose user's head runs worse than the bare model (Velox: stale)",
    ["app", "model"],
)
ANSWERS = Counter(
    "infaas_selection_answers_total",
    "Selection queries by outcome: combined, single, default (confidence below the threshold), partial "
    "(a model missed the deadline)",
    ["outcome"],
)
