"""The model-selection layer (Clipper) and personalization (Velox) on top of apps: the query path
(`layer.py`), feedback (`feedback.py`), and their state in Redis (`store.py`)."""
