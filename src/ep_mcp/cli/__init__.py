"""The `ep-mcp` command line: thin commands that parse, call the library and render."""

from __future__ import annotations

from ep_mcp.cli.app import main

__all__ = ["main"]
