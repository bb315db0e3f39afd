"""The selection layer's Redis structures (the gateway owns them):

- `infaas:selection:{app}:state:{user}` — a selection's weights (JSON `{models, weights, observed}`), for
  the app (`user` empty) and for each user with feedback; a user without state starts from the app's.
- `infaas:selection:{app}:query:{id}` — what a query answered (`QueryRecord`), until its feedback or the
  selection's `feedback_ttl_s`; feedback consumes it (a second feedback for one query is refused).
- `infaas:selection:{app}:feedback` — a capped stream of the feedback received (query id, user, labels,
  per-model accuracy): the record of what taught the weights.

Weights move by read–modify–write under WATCH, so concurrent feedback on one key never loses an update.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import orjson
import redis.asyncio as aioredis
from redis.exceptions import WatchError

from gateway.selection.heads import HeadStore
from infaas.policy.bandits import SelectionState
from infaas.schemas.selection import QueryRecord

FEEDBACK_LOG_LENGTH = 100_000


def state_key(app: str, user: str | None) -> str:
    return f"infaas:selection:{app}:state:{user or ''}"


def query_key(app: str, query_id: str) -> str:
    return f"infaas:selection:{app}:query:{query_id}"


def feedback_key(app: str) -> str:
    return f"infaas:selection:{app}:feedback"


def _decode(raw: bytes | str | None, models: list[str]) -> SelectionState | None:
    """A stored state, or None when there is none or it was kept for another list of models (the app
    changed its selection: the old weights say nothing about the new models)."""
    if raw is None:
        return None
    doc = orjson.loads(raw)
    if doc.get("models") != models:
        return None
    return SelectionState(tuple(float(w) for w in doc["weights"]), int(doc["observed"]))


def _encode(state: SelectionState, models: list[str]) -> bytes:
    return orjson.dumps({"models": models, "weights": state.weights, "observed": state.observed})


class SelectionStore:
    def __init__(self, redis: aioredis.Redis, heads: HeadStore | None = None) -> None:
        self.redis = redis
        self.heads = heads
        """Velox heads (`heads.py`); None where no registry is reachable (personalization then refused)."""

    async def state(self, app: str, user: str | None, models: list[str]) -> SelectionState:
        """The user's weights, else the app's, else uniform: one round trip."""
        keys = [state_key(app, user), state_key(app, None)] if user else [state_key(app, None)]
        for raw in await self.redis.mget(keys):
            found = _decode(raw, models)
            if found is not None:
                return found
        return SelectionState.uniform(len(models))

    async def remember(self, app: str, query_id: str, record: QueryRecord, ttl_s: int) -> None:
        await self.redis.set(query_key(app, query_id), record.model_dump_json(), ex=ttl_s)

    async def take(self, app: str, query_ids: list[str]) -> list[QueryRecord | None]:
        """The records of these queries, removed (feedback is taken once); None where unknown or expired."""
        pipe = self.redis.pipeline(transaction=True)
        for query_id in query_ids:
            pipe.getdel(query_key(app, query_id))
        return [QueryRecord.model_validate_json(raw) if raw else None for raw in await pipe.execute()]

    async def give_back(self, app: str, records: dict[str, QueryRecord], ttl_s: int) -> None:
        """Records taken for a feedback batch that was then refused: nothing of it may stay applied."""
        if records:
            pipe = self.redis.pipeline(transaction=True)
            for query_id, record in records.items():
                pipe.set(query_key(app, query_id), record.model_dump_json(), ex=ttl_s)
            await pipe.execute()

    async def update(
        self,
        app: str,
        user: str | None,
        models: list[str],
        step: Callable[[SelectionState], SelectionState],
    ) -> SelectionState:
        """Apply `step` to the stored weights (a user's start from the app's), retrying on a race."""
        key = state_key(app, user)
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    current = _decode(await pipe.get(key), models)
                    if current is None and user:
                        current = _decode(await pipe.get(state_key(app, None)), models)
                    after = step(current or SelectionState.uniform(len(models)))
                    pipe.multi()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
                    pipe.set(key, _encode(after, models))
                    await pipe.execute()
                    return after
                except WatchError:
                    continue

    async def log(self, app: str, entries: Sequence[Mapping[str, object]]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for entry in entries:
            pipe.xadd(feedback_key(app), {"entry": orjson.dumps(entry)}, maxlen=FEEDBACK_LOG_LENGTH)
        await pipe.execute()
