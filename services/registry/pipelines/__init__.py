"""Pipelines (InferLine) in the registry, their source of truth: `graph.py` the graph checked against the
models' signatures (pure); `service.py` registration, listing, deletion and the planner's plan stored.

Pipelines, end to end, and where each part lives:
- `infaas/schemas/pipelines.py` (kernel): a pipeline's stages, edges (conditional ones on predicted
  classes), plan and answer on the wire; `infaas/data/db.py` `PipelineRow` (table `pipelines`,
  migration 0009); `infaas/data/store.py` `PIPELINES_CHANGED` / `PIPELINES_TOPIC`, the registry's
  signal that a pipeline changed; `infaas/data/registry_version.py` counts the table among what gateways
  cache; `infaas/schemas/events.py` the `pipeline_planner` events.
- `infaas/clients/registry.py` `pipeline`, `pipelines`, `set_pipeline_plan`; `infaas/clients/planner.py`
  `plan_pipeline`.
- here: `graph.py` and `service.py`; besides them in the registry, `api.py` the routes (public
  `/v1/pipelines`, internal `/internal/pipelines/{name}` and its `/plan`), `repository.py`
  `pipelines_using` and `service.py` which keep a stage's model from being deleted under it.
- `gateway/`: `v1/pipelines.py` `/v1/pipelines` passed through to the registry, `…/plan` (and a
  registration with a rate) to the planner, and `POST /v1/pipelines/{name}/infer`;
  `dataplane/pipelines.py` a pipeline query, its stages run root first as named-model queries under one
  deadline, a planned stage pinned to its plan's variant; `oip/pipelines.py` the same under
  `/v2/models/{pipeline}/infer` (with `oip/routes.py` finding the pipeline by its model name); `auth.py`
  the gateway's cached pipelines; `ui/pipeline_graph.py` (SVG) and `ui/routes.py` the pipelines page.
- `services/planner/`: `policies/pipeline_plan.py` InferLine's planner (pure: the cheapest per-stage
  configuration meeting the end-to-end P99 SLO on a sample trace), estimated with
  `simulator/pipelines.py`; `pipelines.py` the planner's mechanism (gather, plan, store, apply) behind
  `api.py` `POST /internal/pipelines/{name}/plan`; `policies/pipeline_tuner.py` InferLine's tuner (pure)
  and `loops/pipeline_tuner.py` its loop; `loops/claims.py` the models planned pipelines hold, which
  `loops/model_autoscaler.py` leaves alone; `retirement.py` what a new plan leaves unused, drained once
  every gateway serves it; `signals.py` the registry's change signal taken by the idle tuner;
  `loops/startup.py` wires them.
- No pipeline code in the scheduler or executors: each stage is an ordinary query, its variant pinned.
- `bench/papers/pipelines.py`, `bench/papers/pipelines_real.py`, `bench/papers/pipelines_cg_real.py`;
  tests named `test_pipeline_*` under `tests/unit/` and `tests/integration/`.
"""
