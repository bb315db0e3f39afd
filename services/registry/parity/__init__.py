"""The registry's part of coded redundancy (ParM): `training.py` which models can have a parity model,
queuing their training and its reports; `publish.py` a trained parity model published as its model's
hidden variant."""
