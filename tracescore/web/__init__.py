"""The dashboard served by the collector at ``/``, and the read API of traces and their runs."""

from tracescore.web.router import web_router

__all__ = ["web_router"]
