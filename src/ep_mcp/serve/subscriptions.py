"""Resource subscriptions: the watcher's changes reach the sessions that asked for them.

One `Feed` per MCP server, and one server per access, so a feed only ever hears of the packs
its callers may read. The watcher hands every batch's reloads to the `ChangeHub`
(`publish`), which works out the changed resource URIs once and gives each feed the changes
of its own packs. Two protocol eras:

- **2025** (`resources/subscribe`, `resources/unsubscribe`): a session with a back-channel
  (stdio) is sent `notifications/resources/updated` for each URI it subscribed to that a
  reload changed, and `notifications/resources/list_changed` when files were added or
  removed. Stateless HTTP of that era has no channel for a later message (no session, no GET
  stream), so the methods are not served there and the capability is not advertised.
- **2026-07-28** (`subscriptions/listen`): the listen request's response is the stream, on
  stdio and on Streamable HTTP alike (an SSE response to that one POST). The SDK's
  `ListenHandler` serves it, after the filter is checked here.

Fail closed: a URI the session could not read cannot be subscribed to (the same error as
`resources/read`). Bounded: at most `MAX_SUBSCRIPTIONS` URIs per session (a 2025 session or
one listen stream), at most `MAX_LISTEN_STREAMS` open listen streams per server, and one
watcher batch sends each URI at most once and at most one list_changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ep_mcp.errors import NotFoundError
from ep_mcp.packs.models import Pack
from ep_mcp.serve.mcp import guide, resources

logger = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 256  # resource URIs per session (a 2025 session, or one listen stream)
MAX_LISTEN_STREAMS = 64  # open subscriptions/listen streams per MCP server

Ctx = ServerRequestContext[Any]
Listener = Callable[[ServerEvent], None]
Readable = Callable[[str], object]  # raises the error `resources/read` would give


@dataclass(frozen=True)
class PackChange:
    """What one reload of one pack changed."""

    slug: str
    uris: frozenset[str]  # resource URIs whose content changed (canonical spelling)
    listed: bool  # files were added or removed
    prompted: bool = False  # the pack's prompts changed (names, descriptions or sources)


def pack_changes(reloads: Iterable[tuple[Pack, Pack]]) -> list[PackChange]:
    """The changes of (before, after) pairs of reloaded packs; a reload that changed
    nothing a client can read is left out."""
    changes = []
    for old, new in reloads:
        uris, listed = resources.changed_uris(old, new)
        prompted = guide.pack_prompts(old) != guide.pack_prompts(new)
        if uris or listed or prompted:
            changes.append(PackChange(new.slug, uris, listed, prompted))
    return changes


class ThreadBus:
    """The SDK's `SubscriptionBus`, publishable from any thread: each listener is called on
    the event loop it subscribed from (the watcher runs on a thread of its own)."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[asyncio.AbstractEventLoop, Listener]] = {}
        self._lock = threading.Lock()

    async def publish(self, event: ServerEvent) -> None:
        self.post(event)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token, loop = object(), asyncio.get_running_loop()
        with self._lock:
            self._listeners[token] = (loop, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe

    def loops(self) -> set[asyncio.AbstractEventLoop]:
        with self._lock:
            return {loop for loop, _ in self._listeners.values()}

    def post(self, event: ServerEvent) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
        for loop, listener in listeners:
            with contextlib.suppress(RuntimeError):  # its loop has closed: so has its stream
                loop.call_soon_threadsafe(listener, event)


@dataclass
class Session:
    """One connection of a transport with a back-channel (stdio: the server's lifespan is
    entered once per connection), and the URIs it subscribed to in the 2025 era."""

    loop: asyncio.AbstractEventLoop
    # a request's proxy once the connection spoke the 2025 era: what it sends without a
    # request id goes out on the connection's own channel
    peer: ServerSession | None = None
    uris: dict[str, str] = field(default_factory=dict)  # canonical URI -> as the client wrote it


class Feed:
    """The subscribers of one MCP server (one access): 2025 sessions and listen streams."""

    def __init__(self, packs: frozenset[str]) -> None:
        self.packs = packs
        self.bus = ThreadBus()
        self.listen = ListenHandler(self.bus, max_subscriptions=MAX_LISTEN_STREAMS)
        self._sessions: dict[int, Session] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()

    def sessions(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    @contextlib.asynccontextmanager
    async def lifespan(self, server: object) -> AsyncIterator[Session]:
        """The server's lifespan on a transport with sessions: one `Session` per connection,
        and its subscriptions end with it."""
        session = Session(asyncio.get_running_loop())
        with self._lock:
            self._sessions[id(session)] = session
        try:
            yield session
        finally:
            with self._lock:
                self._sessions.pop(id(session), None)

    def deliver(self, changes: Sequence[PackChange]) -> None:
        """Tell this feed's subscribers about one watcher batch (from any thread)."""
        mine = [c for c in changes if c.slug in self.packs]
        if not mine:
            return
        uris = sorted(set().union(*(c.uris for c in mine)))
        listed = any(c.listed for c in mine)
        prompted = any(c.prompted for c in mine)
        if prompted:
            self.bus.post(PromptsListChanged())
        if listed:
            self.bus.post(ResourcesListChanged())
        for uri in uris:
            self.bus.post(ResourceUpdated(uri=uri))
        for session in self.sessions():
            given = session.uris  # the loop may change it meanwhile: look up once each
            wanted = [w for w in (given.get(u) for u in uris) if w is not None]
            if session.peer is not None and (prompted or listed or wanted):
                self._spawn(session.loop, _notify(session.peer, prompted, listed, wanted))

    def _spawn(self, loop: asyncio.AbstractEventLoop, job: Coroutine[Any, Any, None]) -> None:
        def start() -> None:
            task = loop.create_task(job)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the session's loop has closed: nobody is left to tell
            job.close()

    def close(self) -> None:
        """End every open listen stream gracefully (the server is stopping)."""
        for loop in self.bus.loops():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.listen.close)


async def _notify(peer: ServerSession, prompted: bool, listed: bool, uris: Sequence[str]) -> None:
    try:
        if prompted:
            await peer.send_prompt_list_changed()
        if listed:
            await peer.send_resource_list_changed()
        for uri in uris:
            await peer.send_resource_updated(uri)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client has gone
        logger.debug("a session closed before it was told of a change")


class ChangeHub:
    """Every feed of the process; the watcher publishes each batch's reloads here.
    ``watched``: a watcher runs (`serve --watch`); servers built without one offer no
    subscriptions, since nothing would ever be sent."""

    def __init__(self, watched: bool = True) -> None:
        self.watched = watched
        self._feeds: weakref.WeakSet[Feed] = weakref.WeakSet()
        self._lock = threading.Lock()

    def feed(self, packs: frozenset[str]) -> Feed:
        feed = Feed(packs)
        with self._lock:
            self._feeds.add(feed)
        return feed

    def publish(self, reloads: Sequence[tuple[Pack, Pack]]) -> None:
        """One watcher batch: (before, after) of every pack it reloaded."""
        changes = pack_changes(reloads)
        if not changes:
            return
        with self._lock:
            feeds = list(self._feeds)
        for feed in feeds:
            feed.deliver(changes)

    def sessions(self) -> list[Session]:
        """The open sessions of every feed (2025 era, transports with sessions)."""
        with self._lock:
            feeds = list(self._feeds)
        return [s for feed in feeds for s in feed.sessions()]

    def close(self) -> None:
        with self._lock:
            feeds = list(self._feeds)
        for feed in feeds:
            feed.close()


class SubscribableServer(Server[Any]):
    """The SDK's server, advertising `resources.listChanged` and `prompts.listChanged` in
    the 2025 handshake where the transport can carry them (`list_changes`: stdio)."""

    list_changes = False

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        if notification_options is None:
            notification_options = NotificationOptions(
                prompts_changed=self.list_changes, resources_changed=self.list_changes
            )
        return super().create_initialization_options(
            notification_options, experimental_capabilities, extensions
        )


def _canonical(uris: Iterable[str], readable: Readable, per: str) -> dict[str, str]:
    """canonical -> given, for URIs the session may read; at most MAX_SUBSCRIPTIONS."""
    found: dict[str, str] = {}
    for uri in uris:
        readable(uri)
        found.setdefault(resources.canonical_uri(uri), uri)
        if len(found) > MAX_SUBSCRIPTIONS:
            raise _too_many(per)
    return found


def _too_many(per: str) -> MCPError:
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"at most {MAX_SUBSCRIPTIONS} resource subscriptions {per} — subscribe to "
        "fewer (ep://{pack}/files changes whenever a file does)",
    )


def install_subscriptions(
    server: SubscribableServer, feed: Feed, readable: Readable, *, sessions: bool
) -> None:
    """Serve `subscriptions/listen` on ``server``; with ``sessions`` (a transport with a
    back-channel: stdio) also the 2025 `resources/subscribe` and `resources/unsubscribe`."""

    async def listen(
        ctx: Ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        wanted = params.notifications.resource_subscriptions or []
        uris = list(_canonical(wanted, readable, "per listen stream"))
        notifications = params.notifications.model_copy(
            update={"resource_subscriptions": uris or None}
        )
        return await feed.listen(ctx, params.model_copy(update={"notifications": notifications}))

    server.add_request_handler(
        "subscriptions/listen", types.SubscriptionsListenRequestParams, listen
    )
    if not sessions:
        return
    server.list_changes = True
    server.lifespan = feed.lifespan

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        readable(params.uri)
        session: Session = ctx.lifespan_context
        uri = resources.canonical_uri(params.uri)
        if uri not in session.uris and len(session.uris) >= MAX_SUBSCRIPTIONS:
            raise _too_many("per session")
        session.uris[uri] = params.uri
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        session: Session = ctx.lifespan_context
        with contextlib.suppress(NotFoundError):  # never subscribed: nothing to end
            session.uris.pop(resources.canonical_uri(params.uri), None)
        return types.EmptyResult()

    async def join(ctx: Ctx, call_next: CallNext) -> HandlerResult:
        """Every 2025 session hears list_changed, subscribed or not (at 2026-07-28 the
        changes ride listen streams only)."""
        session = ctx.lifespan_context
        if isinstance(session, Session) and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            session.peer = ctx.session
        return await call_next(ctx)

    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    server.middleware.append(join)
