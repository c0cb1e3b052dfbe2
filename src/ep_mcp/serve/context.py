"""What every adapter serves, and how a request waits for it: the `ServeContext` (the library,
the hub, the query log), a server's `PackScope`, `until_ready` and `run_sync`.

The MCP server, `/search` and the workbench all take a `ServeContext`; it lives apart from the
MCP module so that the HTTP doors need not import the MCP server to name it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from mcp.server import Server, ServerRequestContext

from ep_mcp import __version__
from ep_mcp.errors import NotFoundError
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.serve.auth import Access
from ep_mcp.serve.querylog import QueryLog
from ep_mcp.serve.subscriptions import ChangeHub

if TYPE_CHECKING:
    from ep_mcp.hub.hub import SkillHub

T = TypeVar("T")

# The SDK's request context and server are generic over a lifespan result; ours has none, so
# the parameter is Any (forced by the SDK's generics, not a hole in our own types).
Ctx = ServerRequestContext[Any]
McpServer = Server[Any]


@dataclass
class ServeContext:
    """What every adapter serves: the library, the optional skills hub, the query log."""

    library: Library
    hub: SkillHub | None = None
    query_log: QueryLog | None = None
    keyed: frozenset[str] = field(default_factory=frozenset)  # slugs that require a key
    # Run tool calls on the event loop instead of a worker thread. Only for cheap, pure-Python
    # searches (no embedder or the hashing one): a thread hop there costs more than the search,
    # because the loop then waits for the GIL on every socket call (`ep-mcp bench serve`).
    inline: bool = False
    changes: ChangeHub = field(default_factory=ChangeHub)  # the watcher's changes, to subscribers


READY_WAIT_S = 30.0  # how long a request waits for the start-up build before it says so
READY_POLL_S = 0.05


READY_TELL_S = 1.0  # how often a waiting request is told where the build stands
Progress = Callable[[float, str], Awaitable[None]]  # (seconds waited, what is being built)


async def until_ready(library: Library, retry: str, progress: Progress | None = None) -> None:
    """Wait for the start-up index build (up to ``READY_WAIT_S``, holding neither the event
    loop nor a thread), then raise if it is still running or failed (`Library.check_ready`).
    ``library`` is the caller's view: what it is told names only the packs it may see.
    ``progress`` hears, about every second, how long it has waited and each pack's phase."""
    done, stopping = library.readiness.done, library.readiness.stopping
    waited, told = 0.0, -READY_TELL_S
    while not done.is_set() and not stopping.is_set() and waited < READY_WAIT_S:
        if progress is not None and waited - told >= READY_TELL_S:
            told = waited
            await progress(waited, f"waiting for the index build ({library.phases()})")
        await anyio.sleep(READY_POLL_S)
        waited += READY_POLL_S
    library.check_ready(retry)


async def run_sync(serve: ServeContext, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` inline when ``serve.inline``, else on a worker thread."""
    if serve.inline:
        return fn(*args)
    return await anyio.to_thread.run_sync(fn, *args)


def version() -> str:

    return __version__


@dataclass(frozen=True)
class PackScope:
    """The packs (and the hub) one server instance exposes: fixed when the server is built."""

    serve: ServeContext
    access: Access

    def all_slugs(self) -> list[str]:
        return [s for s in self.serve.library.slugs() if s in self.access.packs]

    @property
    def hub(self) -> SkillHub | None:
        return self.serve.hub if self.access.hub else None

    def runtimes(self) -> list[PackRuntime]:
        lib = self.serve.library
        return [lib.runtimes[s] for s in self.all_slugs()]

    def library(self) -> Library:
        return self.serve.library.only(set(self.all_slugs()))

    def runtime(self, slug: str) -> PackRuntime:
        visible = self.all_slugs()
        if slug not in visible:
            raise NotFoundError(
                f"pack '{slug[:100]}' is not served here — available packs: "
                f"{', '.join(visible) or 'none'}"
            )
        return self.serve.library.runtimes[slug]


def full_access(serve: ServeContext) -> Access:
    """Every pack and the hub: what a local (stdio) client sees."""
    return Access(frozenset(serve.library.slugs()), serve.hub is not None)
