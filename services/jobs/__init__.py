"""The jobs worker (`infaas serve jobs`): runs the chunks of offline jobs in spare capacity.

Offline jobs, end to end, and where each part lives:
- `infaas/jobs/` (kernel, shared): `schemas.py` the wire schemas of `/v1/jobs` and the registry's
  internal job routes; `protocol.py` the Celery queue and task name, the throttle state in Redis,
  reading a job's input and writing `.npz` results; `variants.py` the variant choice (rows per dollar);
  `client.py` typed clients of the registry's internal job routes.
- `gateway/v1/jobs.py` (not this room): the public `/v1/jobs` routes, passed through to the registry.
- `services/registry/jobs/`: the source of truth in Postgres — `api.py` the routes, `submit.py`
  validation, variant choice and chunking, `service.py` views, cancel, chunk leases, exactly-once
  completion and the assembled result.
- `services/planner/loops/jobs.py`: every tick, decide the throttle (`policies/throttle.py`, pure),
  publish it in Redis, lease chunks through the registry and send each as a Celery task.
- here: `worker.py` the Celery worker on queue `jobs`; `chunks.py` running one chunk — read its rows,
  send them to an executor the throttle allows, store the outputs, tell the registry.
- `services/executor/offline.py` (not this room): `POST /internal/offline/run` on each worker, offline
  rows below the online queries.
- `infaas_cli/commands/jobs.py`: `infaas jobs …` over HTTP.
"""
