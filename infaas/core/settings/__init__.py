"""Settings by the service that reads them; `infaas.core.config.Settings` composes them into one.

Each module holds one class of fields, every field with its docstring and validators:
- `common.py` `CommonSettings`: what every service reads — var dir, database and Redis URLs, artifact
  repository, keys, bind host, ports and service URLs, heartbeat expiry, log level, prices; the base of
  every other class.
- `suite.py` `SuiteSettings`: what `infaas run` reads to compose the suite (how many executors, the
  embedded executor) and hands to its children (`child_env`, `executor_ports`).
- `gateway.py` `GatewaySettings`: the public port — request limits, auth caches, the admin UI.
- `registry.py` `RegistrySettings`: model intake limits and the sweep of profiles whose profiler is gone.
- `profiler.py` `ProfilerSettings`: variant generation, profiling, parity training, the profiling lease.
- `scheduler.py` `SchedulerSettings`: the dispatcher — deadlines, cache, admission, dispatch mode.
- `executor.py` `ExecutorSettings`: the worker — hardware, batching, push endpoint, heartbeats, pulses,
  interference states.
- `planner.py` `PlannerSettings`: the control loops — failure detection, failover, model and worker
  autoscaling, pipeline tuning, the event log.
- `jobs.py` `JobsSettings`: offline jobs, read by the registry (intake), the planner (throttle, leases)
  and the jobs worker (the `services/jobs` room).

A field read by several services lives in `common.py` when every service needs it, else in the class
of the service that owns the behaviour, and its docstring names the other readers. Every field is still
`INFAAS_<FIELD>` and still read as `settings.<field>` from the one composed `Settings`.
"""
