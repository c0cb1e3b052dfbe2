"""`ep-mcp bench reliability`: what faults cost a running service."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ep_mcp.cli.app import bench, emit_json, fail_cleanly, json_option

PARTS = ("fifo", "damage", "provider")


@bench.command("reliability")
@click.option(
    "--part",
    "parts",
    type=click.Choice(PARTS),
    multiple=True,
    help="Measure only these (repeatable); default: all.",
)
@click.option(
    "--work",
    type=click.Path(path_type=Path, file_okay=False),
    help="Work folder (default: a temporary one, removed afterwards).",
)
@json_option
@fail_cleanly
def bench_reliability_cmd(parts: tuple[str, ...], work: Path | None, as_json: bool) -> None:
    """A FIFO in a served pack, each kind of damaged index, a failing embedding provider."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench.reliability import render, run_reliability

    chosen = parts or PARTS
    if work is not None:
        report = run_reliability(work, chosen)
    else:
        with tempfile.TemporaryDirectory(prefix="ep-mcp-reliability-") as tmp:
            report = run_reliability(Path(tmp), chosen)
    if as_json:
        emit_json(report)
    else:
        click.echo(render(report))
