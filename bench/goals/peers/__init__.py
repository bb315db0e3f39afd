"""infaas side by side with FastAPI, LitServe, MLServer, BentoML and Ray Serve (`run`, `report`,
`low_rate`), and the probes that explain its numbers (`background`, `quiet`, `wakeups`, `busy`,
`priority`, `pulse_floor`, `breakdown`, `segments`, `cold`, `cpu_per_query`, `sparse`, `ab_setting`).

- `systems`: each server as the driver sees it (start, endpoints, requests); `infaas_side`: the infaas
  suite, of this checkout or of another build (`--build NAME=PATH`: that checkout's own python and code);
  `measure`: open-loop, closed-loop and max-rate runs; `build`: the peers' virtualenvs from `*.txt`.
- `servers/`: the peers' servers, run by each peer's own virtualenv (not imported from here).
"""
