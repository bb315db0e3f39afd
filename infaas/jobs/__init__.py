"""What every part of offline jobs shares: wire schemas, the Celery and Redis protocol, input and output
formats, the variant choice and the clients of the registry's job routes. The whole jobs room is mapped
in `services/jobs/__init__.py`."""
