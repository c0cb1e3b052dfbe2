"""Running the service: open what it serves, then run it over stdio or Streamable HTTP.

`open_context` loads the packs (building indexes that need it), the skills hub, the keys and
the query log; `run` serves them over one transport until the client or a signal ends it.
`serve.lifecycle.serve` calls these two in their order (the CLI only parses flags and calls
it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal

from ep_mcp import logsafe
from ep_mcp.config.model import ServerSettings, Settings
from ep_mcp.errors import ConfigError, EpMcpError, ServeError
from ep_mcp.index.embed.base import query_cost
from ep_mcp.library.artifacts import watching_artifacts
from ep_mcp.library.backfill import backfilling
from ep_mcp.library.runtime import Library
from ep_mcp.library.watch import watching
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.context import ServeContext
from ep_mcp.serve.mcp.server import build_server
from ep_mcp.serve.querylog import QueryLog
from ep_mcp.serve.startup import open_packs, warming
from ep_mcp.tools.registry import tools

if TYPE_CHECKING:
    from concurrent.futures import Future

    from starlette.applications import Starlette

    from ep_mcp.hub.hub import SkillHub

logger = logging.getLogger(__name__)

Transport = Literal["stdio", "http"]
OnReady = Callable[[str], None]  # told the service's URL once the port is bound
WORKER_HEALTHCHECK_S = 60


def _log_ready(url: str) -> None:
    logger.info("serving on %s", url)


def hub_if_tapped(settings: Settings, env: Mapping[str, str]) -> SkillHub | None:
    """The skills hub when taps are configured or present; None otherwise (or on failure)."""
    home = settings.home
    taps_dir = home / "taps" if home else None
    has_taps = bool(settings.hub.taps) or bool(
        taps_dir and taps_dir.is_dir() and any(taps_dir.iterdir())
    )
    if not has_taps:
        return None
    from ep_mcp.hub.hub import SkillHub  # start-up time: the hub's modules only with taps

    try:
        return SkillHub(settings, env)
    except EpMcpError as exc:  # the hub is optional: serve the packs without it
        logger.warning("skills hub not available (%s) — serving packs only", exc)
        return None


def cheap_queries(embedder: object) -> bool:
    """True when a query costs only pure-Python work (no embedder, or one that declares its
    queries `trivial`), so the HTTP server runs tool calls on its event loop."""
    return embedder is None or query_cost(embedder) == "trivial"


def open_context(
    settings: Settings,
    *,
    build: bool = True,
    words_first: bool | None = None,
    child_env: Mapping[str, str] | None = None,
    library: Library | None = None,
) -> tuple[ServeContext, KeyRing]:
    """Open the library (unless ``library`` is one already open: `startup.open_packs`), the
    hub, keys, query log. Indexes are brought up to date words first (``words_first``;
    None: unless embedding is trivial) — the backfill thread adds the vectors while the
    service already answers.

    ``settings`` come resolved from the edge (`config_env.resolve_environment`: keys, home,
    provider); ``child_env`` is only the environment of the hub's git, gh and claude."""
    tools()  # load the built-in tools now, before worker threads race to do it
    if library is None:
        library = open_packs(settings, warming(settings), build=build, words_first=words_first)
    keys = {rt.slug: rt.config.api_keys for rt in library}
    ring = KeyRing.build(keys, settings.hub.api_keys, settings.env_keys)
    if settings.server.auth.enabled:  # OAuth: every pack needs a token or its key
        ring = dataclasses.replace(ring, oauth=True)
    log_path = settings.server.query_log_path
    serve = ServeContext(
        library=library,
        hub=hub_if_tapped(settings, child_env or {}),
        query_log=QueryLog(log_path) if log_path else None,
        keyed=frozenset(library.slugs()) if ring.oauth else ring.keyed,
        inline=cheap_queries(library.embedder),
    )
    return serve, ring


def run(
    serve: ServeContext,
    ring: KeyRing,
    settings: Settings,
    transport: Transport,
    *,
    watch: bool = False,
    workers: int = 1,
    on_ready: OnReady = _log_ready,
    sock: socket.socket | None = None,
) -> None:
    """Serve until the client (stdio) or a signal (HTTP) ends it. ``on_ready`` hears the
    HTTP service's URL once its port is bound (a port in use fails before that); ``sock``:
    the HTTP socket, bound by the caller before the packs were opened (`bind`)."""
    if workers > 1 and transport != "http":
        raise ConfigError("--workers needs --transport http")
    if workers > 1 and watch:
        raise ConfigError("--watch cannot be used with --workers above 1 — pick one")
    serve.changes.watched = watch  # no watcher: no subscriptions offered
    if transport == "stdio":
        run_stdio(serve, watch)
    elif workers > 1:
        run_http_workers(serve, settings, workers, on_ready, sock)
    else:
        run_http(serve, ring, settings.server, watch, on_ready, sock)


def run_stdio(serve: ServeContext, watch: bool) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(serve, sessions=True)  # stdio: one client, one back-channel

    async def go() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with (
        _sigterm_as_interrupt(),  # a host's SIGTERM stops as Ctrl-C does: `closing` runs
        watching(serve.library, watch, serve.changes.publish),
        backfilling(serve.library),
        artifacts(serve),
    ):
        anyio.run(go)
    serve.library.readiness.stopping.set()  # the client is gone: start no other pack


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread (tests run servers on others)
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _uvicorn_options(server: ServerSettings) -> dict[str, object]:
    from ep_mcp.serve.protocol import GuardedH11Protocol  # start-up time: h11, HTTP only

    level = server.log_level.lower()
    # head and body in one write (a kill -9 cuts no response); headers within a deadline;
    # malformed HTTP answered in the JSON envelope (serve/protocol.py)
    http = functools.partial(GuardedH11Protocol, header_timeout_s=server.header_timeout_s)
    return {
        "http": http,
        "host": server.host,
        "port": server.port,
        "log_level": level,
        "access_log": level == "debug",
        "server_header": False,
        "proxy_headers": False,  # forwarded headers: only from server.forwarded_allow_ips (app)
    }


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or one clear error when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} is in use (on {host}) — stop the other server or pick another "
                "with --port"
            ) from None
        raise ServeError(
            f"cannot listen on {host}:{port} ({exc.strerror}) — check --host"
        ) from None
    sock.set_inheritable(True)
    return sock


def service_url(server: ServerSettings) -> str:
    host = f"[{server.host}]" if ":" in server.host else server.host
    return f"http://{host}:{server.port}"


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, telling the start-up build the moment a stop signal arrives
        (before requests drain): it begins no other pack, and waiting calls are told."""

        def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
            super().__init__(config)
            self._on_exit = on_exit

        def handle_exit(self, sig: int, frame: object) -> None:
            self._on_exit()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    return Server


def run_http(
    serve: ServeContext,
    ring: KeyRing,
    server: ServerSettings,
    watch: bool,
    on_ready: OnReady,
    sock: socket.socket | None = None,
) -> None:
    import uvicorn

    from ep_mcp.serve.http.app import create_app  # start-up time: Starlette, HTTP only

    @contextlib.asynccontextmanager
    async def background() -> AsyncIterator[None]:
        with (
            watching(serve.library, watch, serve.changes.publish),
            backfilling(serve.library),
            artifacts(serve),
        ):
            yield

    app = create_app(serve, server, ring, background=background)
    config = uvicorn.Config(app, **_uvicorn_options(server))  # type: ignore[arg-type]
    sock = sock or bind(server.host, server.port)
    on_ready(service_url(server))

    def stopping() -> None:  # begin no other pack; end the listen streams, or they hold on
        serve.library.readiness.stopping.set()
        serve.changes.close()

    server_class = _server_class()
    server_class(config, stopping).run(sockets=[sock])


def run_http_workers(
    serve: ServeContext,
    settings: Settings,
    workers: int,
    on_ready: OnReady,
    sock: socket.socket | None = None,
) -> None:
    """N uvicorn processes on one socket, each opening the (already built) index read-only.

    Each worker rebuilds its app from ``settings`` (pickled to it), never from environment
    variables or import strings of ours.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        functools.partial(worker_app, settings),
        factory=True,
        workers=workers,
        # uvicorn kills a worker that does not answer its ping within this many seconds; a
        # worker opening its packs on a busy machine took longer than the default 5 and was
        # killed and restarted forever
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **_uvicorn_options(settings.server),  # type: ignore[arg-type]
    )
    sock = sock or bind(settings.server.host, settings.server.port)
    on_ready(service_url(settings.server))
    Multiprocess(config, sockets=[sock]).run()


def worker_app(settings: Settings) -> Starlette:
    """The app of one `--workers` process: the same settings, no index build, no watcher."""
    import os

    from ep_mcp.serve.http.app import create_app  # start-up time: Starlette, HTTP only

    logsafe.configure(settings.server.log_level)  # a spawned worker has no handler yet
    # no backfill here: an index found damaged is rebuilt whole, vectors included
    serve, ring = open_context(settings, build=False, words_first=False, child_env=os.environ)
    serve.changes.watched = False  # a worker runs no watcher: no subscriptions offered

    @contextlib.asynccontextmanager
    async def background() -> AsyncIterator[None]:
        with artifacts(serve):
            yield

    return create_app(serve, settings.server, ring, background=background)


def artifacts(serve: ServeContext) -> contextlib.AbstractContextManager[object]:
    """Swap newer published artifacts in while serving (artifact packs only)."""
    return watching_artifacts(serve.library, serve.library.settings.server.artifact_poll_s)


@contextlib.contextmanager
def closing(serve: ServeContext, starting: Future[None] | None = None) -> Iterator[ServeContext]:
    """Close what was opened; the start-up work still running (``starting``: the build and
    what follows it) finishes the pack it is on first — the build commits, so the next start
    does not redo it, and its stores must not close under it — and begins no other."""
    try:
        yield serve
    finally:
        if starting is not None and not starting.done():
            serve.library.readiness.stopping.set()
            logger.info("waiting for the index build of the current pack before stopping")
            with contextlib.suppress(Exception):
                starting.result()
        serve.library.close()
        if serve.hub is not None:
            serve.hub.close()
