"""The error family. Every message says what went wrong and what to do next."""

from __future__ import annotations

from pathlib import Path


class EpMcpError(Exception):
    """Base class for every error ep-mcp raises on purpose."""


class ConfigError(EpMcpError):
    """A config file, flag or environment value is invalid."""


class PackError(EpMcpError):
    """A pack is missing, unreadable or malformed."""


class NotFoundError(EpMcpError):
    """A pack, file, section, node or skill that was asked for does not exist."""


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
