"""The registry's part of pipelines (InferLine): `service.py` registration with the graph checked
against the models' signatures, listing, deletion and the planner's plan."""
