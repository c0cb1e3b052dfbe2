"""The error family. Every message says what went wrong and what to do next.

Each error carries the HTTP status it maps to, so the HTTP app and the MCP server turn any of
them into a response in one place (`status`), and the CLI prints the message and exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NextStep:
    """The what-to-do part of a message, worded for the caller: MCP tools and HTTP name the
    tools (``tool``), the CLI names its commands (``cli``). Each starts with its separator."""

    tool: str
    cli: str


class EpMcpError(Exception):
    """Base class for every error ep-mcp raises on purpose.

    ``str(error)`` is the message the tools send; ``error.for_cli()`` the one the CLI prints —
    they differ only in the optional ``next_step`` suffix.
    """

    status: int = 503  # the service could not answer this (a layer failed)

    def __init__(self, *args: object, next_step: NextStep | None = None) -> None:
        super().__init__(*args)
        self.next_step = next_step

    def __str__(self) -> str:
        base = super().__str__()
        return base + self.next_step.tool if self.next_step is not None else base

    def for_cli(self) -> str:
        base = super().__str__()
        return base + self.next_step.cli if self.next_step is not None else base


# The hints shared code gives most often.
LIST_FILES = NextStep(
    " — list its files with ep_list_topics or find one with ep_search",
    " — list its files with `ep-mcp topics PACK` or find one with `ep-mcp search PACK QUERY`",
)
LIST_TOPICS = NextStep(
    " — list files with ep_list_topics", " — list files with `ep-mcp topics PACK`"
)


class ConfigError(EpMcpError):
    """A config file, flag or environment value is invalid."""

    status = 500


class PackError(EpMcpError):
    """A pack is missing, unreadable or malformed."""


class NotFoundError(EpMcpError):
    """A pack, file, section, node or skill that was asked for does not exist."""

    status = 404


class ReadOnlyIndexError(EpMcpError):
    """A write was asked of an index served read-only (``read_only: true``, or a published
    version on PostgreSQL): the index's state refuses it, nothing is missing (409)."""

    status = 409


class IndexBuildError(EpMcpError):
    """An index could not be built or opened."""


class BuildStopped(IndexBuildError):
    """The server stopped before its start-up build was finished (a stop, not a failure)."""


class IndexDamagedError(IndexBuildError):
    """An index file is damaged: corrupt, truncated, empty, or not an ep-mcp index at all."""

    def __init__(self, message: str, *, path: Path | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class DiskFullError(IndexBuildError):
    """The disk refused a write to an index (full, over quota, read-only): nothing is damaged,
    the last committed index keeps serving, and it is never rebuilt for this."""

    def __init__(self, message: str, *, path: Path | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class BuildingError(EpMcpError):
    """The server's start-up build has not indexed the packs yet: ask again shortly (503)."""


class EmbeddingError(EpMcpError):
    """An embedding provider failed (network, key, dimension, model)."""


class ProviderUnavailableError(EmbeddingError):
    """The circuit is open: the provider is not called until its cool-down has passed (its
    message says why, what happens meanwhile and when; raised by ``index.embed.breaker``)."""


class RerankError(EpMcpError):
    """The reranker failed or ran past its budget: the query keeps the unreranked order."""


class QueryError(EpMcpError):
    """A query or its arguments are invalid."""

    status = 422


class ServeError(EpMcpError):
    """The service cannot start (a port in use, an address it cannot bind)."""


class IndexUnavailableError(EpMcpError):
    """The server a pack's index is served from cannot be reached now (it is retried once)."""


class BadRequest(EpMcpError):
    """An HTTP request that cannot be read as asked: not JSON, a flag that is not true or
    false, a count that is not an integer (400) — or, given, the status of a well-formed but
    invalid value (422) or a pack not found (404)."""

    status = 400

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Refused(EpMcpError):
    """The workbench refuses a page or fragment with this HTTP status: the key's decision
    (401, 403), a pack or fragment that does not exist (404), a question it cannot answer
    (400)."""

    status = 403

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
