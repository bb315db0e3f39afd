"""The registry's part of pipelines (InferLine): `graph.py` the graph checked against the models'
signatures (pure); `service.py` registration, listing, deletion and the planner's plan."""
