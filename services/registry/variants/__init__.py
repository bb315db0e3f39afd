"""Variants as the registry serves them, after profiling (`profiles/`) wrote them.

- `query.py`: filters and order of `GET /v1/models/{name}/variants`;
- `capacity.py`: a variant's predicted latency-vs-load curves, one per profiled concurrency (SERF);
- `republish.py`: every ready variant published to the Redis metadata store at start, and again
  whenever Redis is found to have lost the publication.
"""
