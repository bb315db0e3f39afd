"""The peers' servers. Each runs in that peer's own virtualenv (var/peers/<peer>/venv, `build.py`), started
by `systems.start_peer` with this folder and the repository on its path; nothing here imports them."""
