"""The workbench: a search page with explain traces, pack health and evaluation pages for the
people who write packs and run the server (docs/workbench.md)."""

from ep_mcp.serve.web.headers import SecurityHeadersMiddleware
from ep_mcp.serve.web.pages import web_routes

__all__ = ["SecurityHeadersMiddleware", "web_routes"]
