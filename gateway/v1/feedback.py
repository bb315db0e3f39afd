"""`POST /v1/apps/{app}/feedback`: the true labels of earlier selection queries (Clipper's `observe`)."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.deps import NamePath, PrincipalDep, StateDep
from gateway.selection import feedback
from gateway.v1.passthrough import ERRORS
from infaas.core.errors import Unavailable
from infaas.schemas.selection import Feedback, FeedbackAnswer, FeedbackItem

router = APIRouter(prefix="/v1")


@router.post("/apps/{app}/feedback", response_model=FeedbackAnswer, responses=ERRORS)
async def give_feedback(
    app: NamePath, body: FeedbackItem | Feedback, state: StateDep, principal: PrincipalDep
) -> FeedbackAnswer:
    """The true class of each row of an earlier query of the app, by the query's `request_id`: one
    (`{query_id, labels}`) or a batch (`{items: [...]}`). It moves the selection's weights (the query's
    user's and the app's) and each model's live accuracy (`infaas_selection_feedback_*` metrics). An
    unknown or expired query id is a 404, a wrong number of labels or a class out of range a 422; a
    refused batch applies nothing."""
    target = await state.auth.app(principal, app)
    if state.selection is None:
        raise Unavailable("model selection needs Redis (INFAAS_REDIS_URL)")
    items = body.items if isinstance(body, Feedback) else [body]
    return await feedback.apply(target, items, state.selection)
