"""A tap's skill names, descriptions and file names cannot forge lines of the CLI's output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main

FORGED = "ERROR forged line"
HOSTILE = {
    "skills/pdf-forms/SKILL.md": "---\n"
    'name: "pdf\\u2028ERROR forged line\\u0085ERROR forged line"\n'
    'description: "Use when filling PDF forms.\\nERROR forged line \\e[2J"\n'
    "---\n# PDF forms\n\nFill the form fields.\n",
}


@pytest.mark.parametrize(
    "args",
    [
        ["skills", "search", "filling pdf forms"],
        ["skills", "info", "acme__skills:skills/pdf-forms"],
    ],
)
def test_skill_output_lines_escape_what_the_tap_wrote(
    make_repo: Callable[..., Path], home: Path, args: list[str]
) -> None:
    env = {"EP_MCP_HOME": str(home)}
    runner = CliRunner()
    assert (
        runner.invoke(main, ["tap", str(make_repo(HOSTILE)), "--allow-file"], env=env).exit_code
        == 0
    )
    result = runner.invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    text = result.stdout + result.stderr
    assert "forged" in text and "\x1b" not in text
    assert [line for line in text.splitlines() if line.lstrip().startswith(FORGED)] == []
