"""The registry's part of offline jobs, which Postgres holds: `api.py` (the routes: public `/v1/jobs`,
reached through the gateway, and internal `/internal/jobs` for the planner and the jobs workers),
`submit.py` (validate, choose the variant, store the inputs, split into chunks) and `service.py`
(views, cancel, chunk leases, exactly-once completion, the assembled result). The whole jobs room is
mapped in `services/jobs/__init__.py`."""
