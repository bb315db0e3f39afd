"""Profiling a model, the registry's side: it owns model status and attempts (Postgres) and sends the
profiling tasks; the profiler (`services/profiler/`) measures and reports.

- `attempts.py`: an attempt started with each enqueue, claimed by a profiler, stale ones refused (409),
  a model profiled again on request;
- `reports.py`: a profiler's report upserted as the model's variants, dominated ones marked, the
  model's status settled, the ready variants published to Redis;
- `recovery.py`: whether a model in profiling still has a profiler at work (pure policy);
- `sweeper.py`: the lease sweeper that acts on that policy: profiles again, or gives up.
"""
