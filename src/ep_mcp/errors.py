"""The error family. Every message says what went wrong and what to do next.

Each error carries the HTTP status it maps to, so the HTTP app and the MCP server turn any of
them into a response in one place (`status`), and the CLI prints the message and exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar


class EpMcpError(Exception):
    """Base class for every error ep-mcp raises on purpose."""

    status: ClassVar[int] = 503  # the service could not answer this (a layer failed)


class ConfigError(EpMcpError):
    """A config file, flag or environment value is invalid."""

    status = 500


class PackError(EpMcpError):
    """A pack is missing, unreadable or malformed."""


class NotFoundError(EpMcpError):
    """A pack, file, section, node or skill that was asked for does not exist."""

    status = 404


class IndexBuildError(EpMcpError):
    """An index could not be built or opened."""


class IndexDamagedError(IndexBuildError):
    """An index file is damaged: corrupt, truncated, empty, or not an ep-mcp index at all."""

    def __init__(self, message: str, *, path: Path | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class EmbeddingError(EpMcpError):
    """An embedding provider failed (network, key, dimension, model)."""


class QueryError(EpMcpError):
    """A query or its arguments are invalid."""

    status = 422


class ServeError(EpMcpError):
    """The service cannot start (a port in use, an address it cannot bind)."""
