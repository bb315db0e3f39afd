"""Coded redundancy (ParM) in the registry, where a parity model's state lives: `training.py` which
models can have a parity model (and why not), queuing their training when an app turns parity on, the
trainings' reports and status; `publish.py` a trained parity model published as its model's hidden
variant, and withdrawn.

Parity models, end to end, and where each part lives:
- `infaas/policy/parity.py` (kernel, pure): the encoder (the sum of k inputs), the decoder
  (F_P(P) − Σ others), a coding group's bookkeeping (`CodingGroup`, `GroupFormer`), the parity variant's
  id (`parity_vid`) and the operators a parity model can be trained with (`TRAINABLE_OPS`).
- `infaas/schemas/parity.py`: an app's `Redundancy`, a training's `ParityReport` and `ParityStatus`;
  `infaas/schemas/variants.py` `VariantProfile.parity_k` marks a hidden parity variant;
  `infaas/schemas/api.py` the app option and an answer's `reconstructed`.
- `infaas/data/db.py` `ParityModelRow` (table `parity_models`, and `apps.redundancy`: migration 0010);
  `infaas/data/store.py` `publish_parity`, `unpublish_parity`, `read_parity_variants` (the Redis set
  `parity_variants`, which selection never reads).
- `infaas/clients/profiler.py` the Celery task name `TRAIN_PARITY`; `infaas/clients/registry.py`
  `report_parity` (profiler → registry) and `parity` (the status, gateway → registry);
  `infaas/clients/envelope.py` an `Answer`'s `reconstructed`.
- `infaas/runtimes/onnx_torch.py`: the ONNX graph run as a torch module with trainable weights, so a
  parity model has the deployed model's architecture.
- here: `training.py` and `publish.py`; besides them in the registry, `api.py` the routes
  (`GET /v1/models/{name}/parity`, `PUT /internal/models/{id}/parity`), `app.py` the Celery queue
  (`CeleryProfileQueue.enqueue_parity`), `deps.py` `ParityQueueDep`, `service.py` an app's
  `redundancy` checked and acted on (uploads, updates), `variants/republish.py` the parity variants
  published again with the rest when Redis lost them.
- `services/profiler/`: `worker.py` the Celery task `TRAIN_PARITY`; `parity_job.py` one training as the
  task runs it (model and validation set in, progress reported, the artifact stored);
  `parity_training.py` the training itself, over arrays.
- `services/planner/loops/parity.py`: `ParityKeeper`, ⌈m/k⌉ parity instances for m instances of the
  model, each apart from the model's own; run by `loops/model_autoscaler.py`, over the parity variants
  `loops/cluster.py` reads.
- `services/scheduler/parity.py`: `ParityCoder`, coding groups in the dispatcher, parity queries and
  reconstructions; `dispatch.py` hands it the queries of a model with a parity model; `snapshot.py`
  holds the published parity variants; `sending.py` `SPREAD`, a coding group's members sent to
  different workers; `metrics.py` `infaas_scheduler_parity_total`, `infaas_scheduler_parity_queries_total`.
- `services/executor/stale.py`: an instance of a withdrawn parity variant is unloaded like any stale one.
- `gateway/v1/models.py` `GET /v1/models/{name}/parity`, passed through; `gateway/ui/routes.py` and
  `gateway/ui/charts.py` (`parity_loss_chart`) a model page's parity status and training loss.
- `infaas_cli/commands/apps.py` `--redundancy parity:K`; `infaas_cli/commands/models.py`
  `infaas models parity`.
- `bench/papers/parity.py`, `bench/papers/parity_serving.py`; `tests/unit/parity/`,
  `tests/integration/parity/`.
"""
