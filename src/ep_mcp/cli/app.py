"""The click group, shared options, error handling and settings resolution."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from ep_mcp import __version__, logsafe
from ep_mcp.config.env import resolve_environment
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import ConfigError, EpMcpError

P = ParamSpec("P")
R = TypeVar("R")


def setup_logging(level: str = "WARNING") -> None:
    """Logs go to stderr (stdout belongs to results, and to MCP in stdio mode), each message
    with its control characters escaped: a pack's file name cannot forge a log line."""
    logsafe.configure(level)
    if logging.getLogger().level <= logging.WARNING:  # builds and reloads are never silent
        logging.getLogger("ep_mcp.progress").setLevel(logging.INFO)


def resolve_settings(
    config: Path | None,
    packs: Sequence[str] = (),
    *,
    provider: str | None = None,
    index_dir: Path | None = None,
) -> Settings:
    """flags > env > config file > defaults, once, into one frozen object."""
    settings = Settings()
    if config:
        from ep_mcp.config.load import load_settings  # its checks and schema: a config only

        settings = load_settings(config)
    if packs:
        settings = dataclasses.replace(
            settings,
            packs=tuple(PackSettings(path=Path(p).resolve(), index_dir=index_dir) for p in packs),
        )
    elif index_dir is not None:
        settings = dataclasses.replace(
            settings,
            packs=tuple(dataclasses.replace(p, index_dir=index_dir) for p in settings.packs),
        )
    env = dict(os.environ)  # the one place the CLI reads the environment
    if provider:  # the flag beats EP_MCP_EMBEDDING_PROVIDER
        env["EP_MCP_EMBEDDING_PROVIDER"] = provider
    return resolve_environment(settings, env)


def fail_cleanly(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn our errors into one line on stderr and exit 1 — never a traceback for bad input."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except EpMcpError as exc:
            text = f"error: {exc.for_cli()}"
            if isinstance(exc, ConfigError):  # the operator's own file: one problem a line
                text = "\n".join(logsafe.one_line(line) for line in text.split("\n"))
            else:  # may name a pack's file: one line, whatever the name holds
                text = logsafe.one_line(text)
            click.echo(text, err=True)
            sys.exit(1)

    return wrapper


def warn(line: str) -> None:
    """One line on stderr, control characters escaped (it may name a pack's file)."""
    click.echo(logsafe.one_line(line), err=True)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


golden_option = click.option(
    "--golden",
    "golden",
    required=True,
    type=click.Path(path_type=Path, exists=True),
    help="A golden-set YAML file (pack:, queries: id, query, expected paths) or a folder of "
    "them; the format is in tests/golden/README.md of the source repository.",
)
packs_root_option = click.option(
    "--packs-root",
    "roots",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Folder holding the packs named by `pack:` (repeatable).",
)
config_option = click.option(
    "--config",
    "config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="config.yaml (packs, embedding, retrieval, server).",
)
provider_option = click.option(
    "--provider",
    help="Embedding provider: local (default), none, hashing (tests), openai, azure-openai, "
    "gemini, voyage, openai-compatible (a local server).",
)
index_dir_option = click.option(
    "--index-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write/read the index in this folder instead of the default location.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


# command name -> the module of ``ep_mcp.cli`` that defines it, for `main` and for `bench`:
# a command's module is imported when the command is asked for (`ep-mcp serve` imports
# serve_cmds alone), every one of them for the list in ``--help``
COMMANDS = {
    "config": "config_cmds",
    "doctor": "pack_cmds",
    "eval": "eval_cmds",
    "graph": "read_cmds",
    "index": "pack_cmds",
    "read": "read_cmds",
    "reindex": "skills_cmds",
    "search": "pack_cmds",
    "serve": "serve_cmds",
    "skills": "skills_cmds",
    "tap": "skills_cmds",
    "taps": "skills_cmds",
    "topics": "read_cmds",
    "untap": "skills_cmds",
    "update": "skills_cmds",
    "validate": "pack_cmds",
}
BENCH_COMMANDS = {
    "beir": "eval_cmds",
    "calibrate": "calibrate_cmds",
    "index": "pack_cmds",
    "query": "eval_cmds",
    "reliability": "bench_cmds",
    "scale": "eval_cmds",
    "serve": "serve_cmds",
    "skills": "skills_cmds",
}


class LazyGroup(click.Group):
    """A group whose commands attach themselves when their module is imported, on demand."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            import importlib  # on demand: the command's module attaches it

            module = f"ep_mcp.cli.{self.lazy[cmd_name]}"
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:  # a module left out of this install
                if exc.name != module:
                    raise
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ep-mcp")
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-v info, -vv debug).")
def main(verbose: int) -> None:
    """ep-mcp: serve folders of markdown as a hybrid-search knowledge service (MCP + HTTP)."""
    setup_logging(["WARNING", "INFO", "DEBUG"][min(verbose, 2)])
    one_blas_thread()


def one_blas_thread() -> None:
    """numpy's BLAS on one thread unless the environment already says how many (before numpy
    is imported: no command imports it before it runs). A query's matrix products are small,
    and OpenBLAS's helper threads spin for a while after each one: with queries a few ms
    apart they never sleep, a core burns beside every served process and the query waits for
    them on a loaded machine (cached query 4.2 -> 2.9 CPU-ms, docs/BENCHMARKS.md). Searches
    overlap on the caller's threads instead, as the model's runtime is on one thread already
    (``index/embed/local.py``). The results are the same."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@main.group("bench", cls=LazyGroup, lazy=BENCH_COMMANDS)
def bench() -> None:
    """Measure quality and speed (index build, BEIR sets, serving)."""
