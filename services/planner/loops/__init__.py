"""The planner's control loops: each tick observes Redis (and the registry), runs a pure policy from
`services/planner/policies/` and acts — through the executors, a worker provider or the registry — and
records what it decided and why (`services/planner/event_log.py`).

- `startup.py`: which loops run, from the settings (`start_loops`, called from the app's lifespan);
- `leader.py`: the Redis lease that lets one planner of several act;
- `cluster.py`: one read of the cluster per tick (workers, instances, variants, heartbeats, marks);
- `observe.py`: the model autoscaler's view (offered load, SLOs, the cluster snapshot);
- `model_autoscaler.py`: the model autoscaler loop, with `configure.py` (each instance's concurrency
  from SERF's prediction) and `parity.py` (parity instances for coding groups, ParM);
- `worker_autoscaler.py`: the worker autoscaler loop;
- `failover.py`: the failover loop (FailLite), with `failover_backups.py` (its warm backups) and
  `failover_recovery.py` (one progressive failover carried out);
- `pipeline_tuner.py`: the pipeline tuner loop (InferLine), with `claims.py` (the models planned
  pipelines hold, which the model autoscaler leaves alone);
- `jobs.py`: the offline-jobs loop (throttle, chunk leases, Celery tasks).

Failover (FailLite), end to end, and where each part lives (the planner holds most of it):
- `infaas/data/` (kernel): `failures.py` the one `FailureNotice` every component hears on
  `infaas:failures`, `declare_failure` (the worker out of the store at once, the notice published once
  per incarnation), the declarations a leader fails over from (`declared_notices`, `all_declared`,
  `mark_failed_over`) and the recoveries; `pulses.py` the executors' pulses, signed UDP datagrams to
  every failure watch (`PulseSender`); `orphans.py` the stream entries a failed consumer left pending,
  handed on exactly once (`claim_orphans`, `take_back`); `failover_marks.py` which variants answer for
  a failed one (`infaas:failover:serving`).
- `infaas/policy/failure_detection.py` (pure): which workers are silent from the pulses heard and the
  watch's echo, a probe's verdict (failed or hung), workers gone from the snapshot.
- `infaas/schemas/api.py` an app's `criticality` (a warm backup or a cold one; `infaas/data/db.py`
  `AppRow.criticality`, migration 0008) and an answer's `FailoverNote`; `infaas/clients/envelope.py`
  `Answer.failover`; `infaas/schemas/events.py` the `failure` and `failover` events.
- planner: `services/planner/failure_watch.py` the failure watch (`FailureWatch`, started by
  `app.py`): pulses verified by `pulse_inbox.py`, silent workers probed by `probes.py`, failures
  declared, and failures and recoveries recorded as events by `failure_records.py`; here `failover.py`
  the failover loop (`Failover`: notices acted on by the leader, warm backups promoted, progressive
  failover planned) with `failover_backups.py` (`WarmBackups`: the warm backups kept, their copy in
  Redis) and `failover_recovery.py` (a progressive failover loaded), `cluster.py` reading the failover marks,
  `observe.py` the workers gone from the snapshot, `startup.py` `start_failover`; `policies/backups.py`
  the warm-backup ILP and `policies/failover.py` progressive failover (pure); `providers/local.py` an
  exited executor process declared failed; `metrics.py` detection time, MTTR, rejected pulses.
- scheduler: `services/scheduler/failures.py` (`Failover`: on a notice the worker leaves the snapshot,
  its pushed queries fail over, its orphaned stream entries are taken back, MTTR measured);
  `failover_marks.py` (`FailoverMarks`: answers from a fallback variant say so); `replies.py` hears the
  notices; `snapshot.py` `drop_failed` and the marks re-read; `push.py` a dropped push connection as a
  failure sign; `liveness.py` workers kept live while Redis is away; `loads.py` a failover's cold load
  never held back; `dispatch.py` a query re-sent when its worker is lost.
- executor: `services/executor/failures.py` (`listen_failures`: the failed worker's pending entries
  claimed for the variants this worker serves too); `app.py` starts the pulses and that listener;
  `metrics.py` `infaas_orphaned_entries_claimed_total`.
- gateway: `gateway/dataplane/routes.py` and `gateway/oip/routes.py` put an answer's failover note in
  the reply. Registry: an app's `criticality` stored and returned (`services/registry/service.py`,
  `views.py`, `api.py`).
- `infaas_cli/commands/apps.py` `--criticality`; `bench/papers/failover.py`,
  `bench/papers/failover_detect.py`, `bench/papers/failover_real.py`, `bench/diagnostics/chaos.py`;
  `tests/integration/failover/`, `tests/unit/planner/test_failover_policies.py`,
  `tests/unit/planner/test_failure_detection.py`.
"""
