"""The dashboard served by the collector at ``/``: trends, lowest scores, trace pages, live."""

from tracescore.web.router import web_router

__all__ = ["web_router"]
