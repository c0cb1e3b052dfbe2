"""`ep-mcp serve` (stdio or Streamable HTTP) and `ep-mcp bench serve`."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    emit_json,
    fail_cleanly,
    index_dir_option,
    json_option,
    main,
    provider_option,
    resolve_settings,
)
from ep_mcp.config.model import Settings
from ep_mcp.errors import ConfigError
from ep_mcp.serve.cpu_budget import CpuBudget, cpu_budget

logger = logging.getLogger(__name__)
progress_log = logging.getLogger("ep_mcp.progress")  # shown by the CLI at its default level


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
    from ep_mcp.packs.loader import example_pack  # start-up time: every command loads this file

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


MAX_DEFAULT_WORKERS = 4


def default_workers(
    transport: str,
    watching: bool,
    cpus: int | None = None,
    *,
    example: bool = False,
    budget: CpuBudget | None = None,
) -> int:
    """Worker processes when --workers is not given: one per usable CPU (up to 4) for HTTP,
    since one process runs Python on one core at a time (2 workers on 2 cores measured best:
    docs/bench/serve.md); 1 for stdio, while watching files (one process re-indexes) and for
    the bundled example pack (the quick start: one process serves at once, words first, while
    several would wait for their parent's whole build). Usable CPUs are what `cpu_budget`
    reads (or ``budget``): the cgroup's CPU quota and the affinity mask, capped by the memory
    limit — in a container, not the node's CPU count; ``cpus`` (tests) replaces all that."""
    if transport != "http" or watching or example:
        return 1
    if cpus is None:
        budget = budget or cpu_budget()
        workers = max(1, min(budget.workers, MAX_DEFAULT_WORKERS))
        if workers < min(budget.affinity, MAX_DEFAULT_WORKERS):  # a container's limit chose
            progress_log.info("%d worker(s) by default: %s", workers, budget.source)
        else:
            logger.debug("%d worker(s) by default: %s", workers, budget.source)
        return workers
    return max(1, min(cpus, MAX_DEFAULT_WORKERS))


@main.command("serve")
@click.argument("packs", nargs=-1, type=click.Path(file_okay=False))
@config_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default=None,
    help="stdio for desktop clients, http for Streamable HTTP. Default: stdio for PACK "
    "folders (what desktop hosts launch), server.transport (http) with --config.",
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
    default=None,
    help="HTTP worker processes; each opens the read-only index (no --watch with more than "
    "1). Default: one per usable CPU (cgroup quota, affinity; within the memory limit) up "
    "to 4 for HTTP without --watch, else 1.",
)
@provider_option
@index_dir_option
@fail_cleanly
def serve_cmd(
    packs: tuple[str, ...],
    config: Path | None,
    transport: str | None,
    host: str | None,
    port: int | None,
    watch: bool | None,
    workers: int | None,
    provider: str | None,
    index_dir: Path | None,
) -> None:
    """Serve PACK folders (or the packs of --config) over MCP and HTTP.

    With no PACK and no --config, the bundled example pack (ep-mcp's own docs) is served.
    """
    from ep_mcp.serve.lifecycle import serve  # start-up time: other commands never load it

    settings, zero = serve_settings(
        config, packs, provider=provider, index_dir=index_dir, host=host, port=port
    )
    if settings.server.log_level.upper() == "DEBUG":
        logging.getLogger("ep_mcp").setLevel(logging.DEBUG)
    chosen = transport or ("stdio" if packs or config is None else settings.server.transport)
    if workers is None:
        watching = settings.server.watch and not zero if watch is None else watch
        workers = default_workers(chosen, watching, example=zero)
    else:
        watching = settings.server.watch and not zero and workers == 1 if watch is None else watch
    if chosen == "stdio" and sys.stdin.isatty():
        click.echo(
            "ep-mcp: speaking MCP over stdio, for a desktop host to launch — to serve HTTP, "
            "add `--transport http`",
            err=True,
        )

    def announce(url: str, slugs: Sequence[str]) -> None:
        click.echo(
            f"ep-mcp: serving {', '.join(slugs)} on {url} "
            "(MCP at /mcp and /packs/{slug}/mcp, search at /search)",
            err=True,
        )

    try:
        serve(
            settings,
            "http" if chosen == "http" else "stdio",
            watch=watching,
            workers=workers,
            announce=announce,
        )
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM over stdio: a requested stop, as over HTTP
        click.echo("ep-mcp: stopped", err=True)


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
@click.option(
    "--provider",
    default="hashing",
    show_default=True,
    help="Embedding provider of the server under load (hashing keeps the model out of the "
    "measurement; local, none, openai, azure-openai, gemini, voyage).",
)
@json_option
@fail_cleanly
def bench_serve_cmd(
    packs: tuple[str, ...],
    clients: int,
    seconds: float,
    short: bool,
    workers: int,
    provider: str,
    as_json: bool,
) -> None:
    """Loopback load test: N concurrent clients on /search and on MCP ep_search."""
    from ep_mcp.bench.serve import render, run_bench  # start-up time: as above
    from ep_mcp.packs.loader import example_pack  # start-up time: as above

    report = run_bench(
        [Path(p) for p in packs] or [example_pack()],
        os.environ,
        clients=clients,
        seconds=5.0 if short else seconds,
        provider=provider,
        workers=workers,
    )
    if as_json:
        emit_json(report)
    else:
        click.echo(render(report))
