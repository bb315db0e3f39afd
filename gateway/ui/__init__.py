"""The admin web UI (`/ui`), rendered on the server from the same data the API serves."""

from gateway.ui.routes import router

__all__ = ["router"]
