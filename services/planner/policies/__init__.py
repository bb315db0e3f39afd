"""The planner's pure policies: functions of a frozen snapshot, with no Redis, database or clock inside,
so that the loops (`services/planner/loops/`), the simulator and the benchmarks run them unchanged.

- `snapshot.py`: what the model policies plan over and answer (`ClusterSnapshot`, `Decision`, `Plan`,
  `ScalingConfig`) and the cost and placement helpers they share;
- `pressure.py`: how pressed one model is (capacity at its realized batches against its demand, holds);
- `greedy.py`: INFaaS's greedy model autoscaler, and its replicas-only baseline (`plan_horizontal`);
- `ilp.py`: the exact model autoscaler, INFaaS's ILP solved with HiGHS, over the arrays of
  `ilp_problem.py`;
- `warm.py`: warm instances (an app's `warm_instances` kept loaded without queries);
- `interference.py`: re-placing instances that stay interfered;
- `worker_pool.py`: the worker autoscaler (add or remove workers per hardware kind);
- `throttle.py`: the offline-jobs throttle (on which workers job chunks may run);
- `backups.py` and `failover.py`: FailLite's warm-backup ILP and progressive failover;
- `pipeline_plan.py` and `pipeline_tuner.py`: InferLine's offline planner and online tuner.
"""
