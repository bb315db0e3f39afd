"""The registry's part of model selection (Clipper) and personalization (Velox): `candidates.py`
which of an app's models a `selection` may choose among (checked when the app is updated), `heads.py`
the durable copy of each user's Velox head. The whole selection room is mapped in
`gateway/selection/__init__.py`."""
