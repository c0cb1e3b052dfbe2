"""`ep-mcp serve` (stdio or Streamable HTTP) and `ep-mcp bench serve`."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    fail_cleanly,
    index_dir_option,
    json_option,
    main,
    provider_option,
    resolve_settings,
)
from ep_mcp.config import ServerSettings, Settings
from ep_mcp.errors import ConfigError, EpMcpError

logger = logging.getLogger(__name__)


def example_pack() -> Path:
    """The ExpertPack bundled with ep-mcp (served when no pack and no config is given)."""
    from importlib.resources import files

    return Path(str(files("ep_mcp") / "example_pack"))


def serve_settings(
    config: Path | None,
    packs: tuple[str, ...],
    *,
    provider: str | None,
    index_dir: Path | None,
    host: str | None,
    port: int | None,
) -> tuple[Settings, bool]:
    """Settings for serving, and whether the bundled example pack is served (zero-config)."""
    zero = not packs and config is None
    chosen = (str(example_pack()),) if zero else packs
    settings = resolve_settings(config, chosen, provider=provider, index_dir=index_dir)
    if not settings.packs:
        raise ConfigError("no packs to serve — pass pack folders or a config with `packs:`")
    overrides: dict[str, Any] = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        if not 0 < port < 65536:
            raise ConfigError(f"--port must be 1..65535 — got {port}")
        overrides["port"] = port
    if overrides:
        settings = dataclasses.replace(
            settings, server=dataclasses.replace(settings.server, **overrides)
        )
    return settings, zero


def hub_if_tapped(settings: Settings, env: Mapping[str, str]) -> Any | None:
    """The skills hub when taps are configured or present; None otherwise (or on failure)."""
    home = settings.home
    taps_dir = home / "taps" if home else None
    has_taps = bool(settings.skills.taps) or bool(
        taps_dir and taps_dir.is_dir() and any(taps_dir.iterdir())
    )
    if not has_taps:
        return None
    try:
        from ep_mcp.skills.hub import SkillHub
    except ImportError:
        return None
    try:
        return SkillHub(settings, env)
    except Exception as exc:  # the hub is optional: serve the packs without it
        logger.warning("skills hub not available (%s) — serving packs only", exc)
        return None


def warm_up(library: Any) -> None:
    """Load the query model now, so the first client does not wait for it."""
    if library.embedder is None:
        return
    try:
        library.embedder.embed_query("warm up")
    except EpMcpError as exc:  # a dead provider degrades queries to lexical; say so once
        logger.warning("query embedding is unavailable (%s) — queries will be lexical", exc)


def build_serve_context(
    settings: Settings, env: Mapping[str, str], *, build: bool = True
) -> tuple[Any, Any]:
    """Open the library (indexes built with progress on stderr), the hub, keys, query log."""
    from ep_mcp.runtime import open_library
    from ep_mcp.serve.auth import KeyRing
    from ep_mcp.serve.mcp_server import ServeContext
    from ep_mcp.serve.querylog import QueryLog
    from ep_mcp.tools.registry import tools

    tools()  # load the built-in tools now, before worker threads race to do it
    assert settings.home is not None
    library = open_library(settings, env, settings.home, build=build, show_progress=None)
    for rt in library:
        for warning in rt.pack.warnings:
            logger.warning("%s: %s", rt.slug, warning)
    warm_up(library)
    keys = {rt.slug: rt.config.api_keys for rt in library}
    ring = KeyRing.build(keys, env)
    log_path = settings.server.query_log_path
    serve = ServeContext(
        library=library,
        hub=hub_if_tapped(settings, env),
        query_log=QueryLog(log_path) if log_path else None,
        keyed=ring.keyed,
        inline=cheap_queries(library.embedder),
    )
    return serve, ring


def cheap_queries(embedder: Any) -> bool:
    """True when a query costs only pure-Python work (no embedder, or the hashing one), so
    the HTTP server runs tool calls on its event loop instead of a worker thread."""
    from ep_mcp.index.embed.fake import HashingEmbedder

    inner = getattr(embedder, "embedder", embedder)
    return embedder is None or isinstance(inner, HashingEmbedder)


def run_stdio(serve: Any, watch: bool) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from ep_mcp.serve.mcp_server import build_server
    from ep_mcp.serve.watch import watching

    server = build_server(serve)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with watching(serve.library, watch):
        anyio.run(run)


def run_http(serve: Any, ring: Any, server_settings: ServerSettings, watch: bool) -> None:
    import contextlib

    import uvicorn

    from ep_mcp.serve.http_app import create_app
    from ep_mcp.serve.watch import watching

    @contextlib.asynccontextmanager
    async def background() -> Any:
        with watching(serve.library, watch):
            yield

    app = create_app(serve, server_settings, ring, background=background)
    level = server_settings.log_level.lower()
    _announce(serve, server_settings)
    uvicorn.run(
        app,
        host=server_settings.host,
        port=server_settings.port,
        log_level=level,
        access_log=level == "debug",
        server_header=False,
    )


WORKER_ENV = "EP_MCP_SERVE_WORKER"  # JSON: how each --workers process rebuilds its settings


def run_http_workers(serve: Any, server_settings: ServerSettings, workers: int, spec: str) -> None:
    """`--workers N`: N uvicorn processes, each opening the (already built) read-only index."""
    import uvicorn

    _announce(serve, server_settings)
    os.environ[WORKER_ENV] = spec
    level = server_settings.log_level.lower()
    uvicorn.run(
        "ep_mcp.cli.serve_cmds:worker_app",
        factory=True,
        workers=workers,
        host=server_settings.host,
        port=server_settings.port,
        log_level=level,
        access_log=level == "debug",
        server_header=False,
    )


def worker_app() -> Any:
    """The app of one `--workers` process: same settings, no index build, no watcher."""
    from ep_mcp.serve.http_app import create_app

    raw = json.loads(os.environ[WORKER_ENV])
    settings, _ = serve_settings(
        Path(raw["config"]) if raw["config"] else None,
        tuple(raw["packs"]),
        provider=raw["provider"],
        index_dir=Path(raw["index_dir"]) if raw["index_dir"] else None,
        host=raw["host"],
        port=raw["port"],
    )
    serve, ring = build_serve_context(settings, os.environ, build=False)
    return create_app(serve, settings.server, ring)


def _announce(serve: Any, server_settings: ServerSettings) -> None:
    click.echo(
        f"ep-mcp: serving {', '.join(serve.library.slugs())} on "
        f"http://{server_settings.host}:{server_settings.port} "
        f"(MCP at /mcp and /packs/{{slug}}/mcp, search at /search)",
        err=True,
    )


@main.command("serve")
@click.argument("packs", nargs=-1, type=click.Path(file_okay=False))
@config_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for desktop clients, http for Streamable HTTP.",
)
@click.option("--host", help="HTTP bind address (default: server.host, 127.0.0.1).")
@click.option("--port", type=int, help="HTTP port (default: server.port, 8000).")
@click.option(
    "--watch/--no-watch",
    default=None,
    help="Re-index packs when their files change (default: on, except for the "
    "bundled example pack).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="HTTP worker processes; each opens the read-only index (no --watch with more than 1).",
)
@provider_option
@index_dir_option
@fail_cleanly
def serve_cmd(
    packs: tuple[str, ...],
    config: Path | None,
    transport: str,
    host: str | None,
    port: int | None,
    watch: bool | None,
    workers: int,
    provider: str | None,
    index_dir: Path | None,
) -> None:
    """Serve PACK folders (or the packs of --config) over MCP and HTTP.

    With no PACK and no --config, the bundled example pack (ep-mcp's own docs) is served.
    """
    settings, zero = serve_settings(
        config, packs, provider=provider, index_dir=index_dir, host=host, port=port
    )
    if settings.server.log_level.upper() == "DEBUG":
        logging.getLogger("ep_mcp").setLevel(logging.DEBUG)
    watching = settings.server.watch and not zero if watch is None else watch
    if workers > 1:
        if transport != "http":
            raise ConfigError("--workers needs --transport http")
        if watch:
            raise ConfigError("--watch cannot be used with --workers above 1 — pick one")
        watching = False
    serve, ring = build_serve_context(settings, os.environ)
    try:
        if transport == "stdio":
            run_stdio(serve, watching)
        elif workers > 1:
            spec = {
                "config": str(config) if config else None,
                "packs": list(packs),
                "provider": provider,
                "index_dir": str(index_dir) if index_dir else None,
                "host": host,
                "port": port,
            }
            run_http_workers(serve, settings.server, workers, json.dumps(spec))
        else:
            run_http(serve, ring, settings.server, watching)
    finally:
        serve.library.close()


@bench.command("serve")
@click.argument("packs", nargs=-1, type=click.Path(file_okay=False))
@click.option("--clients", type=click.IntRange(1, 256), default=32, show_default=True)
@click.option(
    "--seconds",
    type=click.FloatRange(1, 600),
    default=30.0,
    show_default=True,
    help="Duration of each phase (/search, then MCP ep_search).",
)
@click.option("--short", is_flag=True, help="5-second phases (a quick smoke run).")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server worker processes (`ep-mcp serve --workers`).",
)
@provider_option
@json_option
@fail_cleanly
def bench_serve_cmd(
    packs: tuple[str, ...],
    clients: int,
    seconds: float,
    short: bool,
    workers: int,
    provider: str | None,
    as_json: bool,
) -> None:
    """Loopback load test: N concurrent clients on /search and on MCP ep_search."""
    from ep_mcp.cli.app import emit_json
    from ep_mcp.serve.bench import render, run_bench

    report = run_bench(
        [Path(p) for p in packs] or [example_pack()],
        clients=clients,
        seconds=5.0 if short else seconds,
        provider=provider or "hashing",
        workers=workers,
    )
    if as_json:
        emit_json(report)
    else:
        click.echo(render(report))
