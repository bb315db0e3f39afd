"""The planner service: control loops that keep the cluster fitted to its load.

`app.py` the factory; `api.py` its internal routes; `metrics.py` its Prometheus metrics; `event_log.py`
every decision with its reason, in Postgres; `policies/` the pure policies (model and worker
autoscaling, interference, the offline-jobs throttle); `loops/` the loops that observe, run a policy and
act; `providers/` where workers come from (local processes, Kubernetes); `simulator/` the same policies
run over a simulated cluster.
"""
