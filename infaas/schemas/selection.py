"""Wire schemas of the model-selection layer (Clipper) and personalization (Velox): an app's `selection`
option, feedback, and what the gateway remembers of a query until its feedback comes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

SelectionPolicy = Literal["single", "exp3", "exp4"]
MAX_FEEDBACK_BATCH = 1000
MAX_USER_CHARS = 128


class Selection(BaseModel):
    """How an app's queries choose among its models. `single`: the scheduler picks a variant of one model
    (the default); `exp3`: a bandit sends each query to one of `models`; `exp4`: every query goes to all of
    `models` and their labels are combined by learned weights. Feedback moves the weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: SelectionPolicy = "single"
    models: list[StrictStr] = Field(
        default_factory=list,
        max_length=16,
        description="The models selected among: 2..16 of the app's models with one task and the same "
        "input and output signature (required for exp3/exp4).",
    )
    eta: float = Field(0.1, gt=0, le=10, allow_inf_nan=False, description="Learning rate of the weights.")
    gamma: float = Field(0.1, ge=0, le=1, allow_inf_nan=False, description="Exp3's uniform exploration.")
    threshold: float = Field(
        0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Below this confidence (the fraction of answering models that agree) the app's "
        "default output is returned instead, marked `default: true` (needs `default_output`).",
    )
    personalize: bool = Field(
        False, description="Velox: a linear head per `user` over the scores, learned from feedback."
    )
    feedback_ttl_s: StrictInt = Field(
        3600, ge=1, le=7 * 86400, description="How long a query's answer waits for its feedback."
    )

    @model_validator(mode="after")
    def _models_for_bandits(self) -> Selection:
        if self.policy != "single" and len(self.models) < 2:
            raise ValueError(f"policy {self.policy!r} needs at least two models")
        if len(set(self.models)) != len(self.models):
            raise ValueError("models are named more than once")
        if self.policy == "single" and len(self.models) > 1:
            raise ValueError("policy 'single' takes at most one model (the one personalized)")
        if self.personalize and (self.policy != "single" or len(self.models) != 1):
            raise ValueError("personalize applies to policy 'single' with the one model personalized")
        return self


class FeedbackItem(BaseModel):
    """The true labels of an earlier query's rows (one class index per row), by its request id."""

    model_config = ConfigDict(extra="forbid")

    query_id: StrictStr = Field(min_length=1, max_length=128)
    labels: list[StrictInt] = Field(min_length=1, max_length=10_000)


class Feedback(BaseModel):
    """One feedback, or a batch of them under `items`."""

    model_config = ConfigDict(extra="forbid")

    items: list[FeedbackItem] = Field(min_length=1, max_length=MAX_FEEDBACK_BATCH)


class HeadReport(BaseModel):
    """A user's Velox head as a query or a feedback reports it."""

    user: str
    origin: str = Field(description="Where the head came from: its own, the mean of N users', identity.")
    updates: int = Field(description="Feedback rows it has learned from.")
    error: float = Field(description="Running error of its predictions.")
    model_error: float = Field(description="Running error of the bare model's on the same rows.")
    stale: bool = Field(description="It runs worse than the bare model by more than the margin.")


class MissingModel(BaseModel):
    model: str
    reason: str = Field(description="Why its answer is not in the combination (late, failed).")


class SelectionReport(BaseModel):
    """What the selection layer did for one query (the `selection` of its `/v1` answer)."""

    policy: SelectionPolicy
    user: str | None = Field(description="The end user the query named, if any.")
    models: list[str] = Field(description="The models selected among.")
    answered: list[str] = Field(description="The models whose answers were combined.")
    missing: list[MissingModel] = Field(description="Models sent the query whose answers are not in it.")
    chosen: str | None = Field(description="Exp3: the model the bandit drew for this query.")
    probability: float | None = Field(None, description="Exp3: the probability it was drawn with.")
    weights: dict[str, float] = Field(description="The selection's weights per model when it answered.")
    labels: list[int] | None = Field(None, description="The combined label of each row.")
    confidence: list[float] | None = Field(
        None, description="Per row, the fraction of answering models that agree."
    )
    feedback: str | None = Field(
        description="Where to send the true labels of this query's rows; null when no model's answer was "
        "kept to learn from (the app's default output answered)."
    )
    personalized: HeadReport | None = Field(
        None, description="The user's head, when it personalized the answer."
    )


class FeedbackResult(BaseModel):
    query_id: str
    accuracy: float = Field(description="The fraction of the query's rows the answer got right.")
    models: dict[str, float] = Field(description="Each answering model's accuracy on those rows.")
    weights: dict[str, float] = Field(description="The selection's weights after this feedback.")
    personalized: HeadReport | None = Field(None, description="The user's head after this feedback.")


class FeedbackAnswer(BaseModel):
    results: list[FeedbackResult]


class QueryRecord(BaseModel):
    """What the gateway keeps of a selection query until its feedback (Redis, with the selection's TTL)."""

    app: str
    user: str | None
    policy: SelectionPolicy
    models: list[str]
    classes: int
    chosen: int | None = None
    probability: float | None = None
    labels: dict[str, list[int]]
    """Each answering model's label per row."""
    answer: list[int] | None
    """The labels returned (None: the default output was)."""
    scores: list[list[float]] | None = None
    """The personalized model's scores per row (the head's features), when personalized for a user."""


class PersonalHead(BaseModel):
    """A user's Velox head over one model's scores, as the registry stores it (see
    `infaas.policy.personalization.Head`)."""

    user: str = Field(min_length=1, max_length=MAX_USER_CHARS)
    a_inv: list[list[float]]
    b: list[list[float]]
    error: float
    model_error: float
    updates: int = Field(ge=0)


class HeadPrior(BaseModel):
    """The mean weights of a model's known heads (a new user's start), and how many there are."""

    users: int
    weights: list[list[float]] | None
