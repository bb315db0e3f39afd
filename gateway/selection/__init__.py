"""The model-selection layer (Clipper) and personalization (Velox) on top of apps: the query path
(`layer.py`), feedback (`feedback.py`), the users' heads (`heads.py`), their state in Redis (`store.py`)
and their Prometheus series (`metrics.py`).

Model selection and personalization, end to end, and where each part lives (not to be confused with
the per-query variant selection, `infaas/policy/selection.py`):
- `infaas/policy/bandits.py` (kernel, pure): Exp3 (one model per query) and Exp4 (an ensemble), how
  outputs combine and how feedback moves the weights; `infaas/policy/personalization.py` (pure): Velox's
  per-user linear heads, updated online, a new user starting from the users' mean.
- `infaas/schemas/selection.py`: an app's `selection` option, feedback, what the gateway keeps of a query
  until its feedback (`QueryRecord`), the heads on the wire (`PersonalHead`, `HeadPrior`);
  `infaas/schemas/api.py` the option on an app.
- `infaas/data/db.py`: `AppRow.selection` (migration 0011) and `PersonalHeadRow` (table
  `personal_heads`, migration 0012), the heads' durable copy; `infaas/clients/registry.py` `head`,
  `put_head`, `head_prior`.
- here, in the gateway: `layer.py` an app query through its selection: the models chosen, a named-model
  query sent to each through the scheduler's ordinary dispatch, the answers combined by the deadline,
  the default output below the confidence threshold; `feedback.py` true labels applied to the weights,
  the live accuracy and the heads; `heads.py` a user's head from Redis, else the registry, else the
  users' mean; `store.py` the Redis keys `infaas:selection:{app}:…`; `metrics.py`.
  Around it: `gateway/v1/feedback.py` `POST /v1/apps/{app}/feedback`; `gateway/dataplane/routes.py`
  routes an app query with a selection here, and `gateway/dataplane/queries.py` refuses `user` for an
  app without one; `gateway/app.py` and `gateway/state.py` build and hold the `SelectionStore`.
- `services/registry/selection/`: `candidates.py` which of an app's models a `selection` may choose among
  (checked when the app is updated, from `services/registry/service.py`); `heads.py` the routes of the
  heads' durable copy and their mean. `services/registry/views.py` and `api.py` return the option with
  the app.
- No part in the scheduler, executors or planner: each query the layer sends is an ordinary named-model
  query.
- `infaas_cli/commands/apps.py` `--selection`; `bench/goals/selection.py`,
  `bench/papers/selection_feedback.py`;
  `tests/unit/selection/`, `tests/integration/selection/`.
"""
