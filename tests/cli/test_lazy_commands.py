"""The CLI's command modules are imported when their command is asked for."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.cli.app import BENCH_COMMANDS, COMMANDS, bench

MODULES = sorted(set(COMMANDS.values()) | set(BENCH_COMMANDS.values()))


def test_every_command_is_named_with_the_module_that_defines_it() -> None:
    for module in MODULES:
        importlib.import_module(f"ep_mcp.cli.{module}")

    def defined_in(group: click.Group) -> dict[str, str]:
        return {
            name: (cmd.callback.__module__ if cmd.callback else "").removeprefix("ep_mcp.cli.")
            for name, cmd in group.commands.items()
        }

    assert defined_in(main) == {**COMMANDS, "bench": "app"}
    assert defined_in(bench) == BENCH_COMMANDS


def test_importing_the_cli_imports_no_command_module_and_serve_imports_its_own_alone() -> None:
    code = (
        "import json, sys, ep_mcp.cli.app as app\n"
        "before = sorted(m for m in sys.modules if m.endswith('_cmds'))\n"
        "app.main.get_command(None, 'serve')\n"
        "after = sorted(m for m in sys.modules if m.endswith('_cmds'))\n"
        "print(json.dumps([before, after]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = json.loads(out.stdout)
    assert before == []
    assert after == ["ep_mcp.cli.serve_cmds"]


def test_the_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output or f"  {name}\n" in result.output
    result = CliRunner().invoke(main, ["bench", "--help"])
    for name in BENCH_COMMANDS:
        assert f"  {name} " in result.output


def test_an_unknown_command_is_refused_with_click_s_message() -> None:
    result = CliRunner().invoke(main, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command 'no-such-command'" in result.output
    assert isinstance(main.get_command(click.Context(main), "serve"), click.Command)
