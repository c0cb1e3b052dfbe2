"""The README's examples stay true: its config validates and every command it shows exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_config_example_validates(tmp_path: Path) -> None:
    block = re.search(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block is not None
    config = tmp_path / "config.yaml"
    config.write_text(block.group(1), encoding="utf-8")
    settings = load_settings(config)
    assert settings.packs and settings.embedding.provider == "local"


def readme_commands() -> list[tuple[str, ...]]:
    """`ep-mcp <command> [<subcommand>]` as written in the README's bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found: set[tuple[str, ...]] = set()
    for m in re.finditer(r"\bep-mcp\s+([a-z]+)(?:\s+([a-z|]+)\b)?", "\n".join(blocks)):
        first, second = m.group(1), m.group(2)
        if first in {"bench", "skills"} and second:
            found.update((first, sub) for sub in second.split("|"))
        else:
            found.add((first,))
    return sorted(found)


@pytest.mark.parametrize("command", readme_commands(), ids=" ".join)
def test_every_command_in_the_readme_exists(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output


def test_the_config_reference_in_docs_matches_the_defaults() -> None:
    doc = (README.parent / "docs" / "server.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- config-defaults:start -->\n```yaml\n(.*?)```", doc, re.S)
    assert block is not None
    result = CliRunner().invoke(main, ["config", "--defaults"])
    assert result.exit_code == 0
    assert block.group(1) == result.output, "regenerate with `ep-mcp config --defaults`"


DOCS = [README, *sorted((README.parent / "docs").rglob("*.md"))]
GROUPS = {"bench", "skills"}


def doc_invocations() -> list[tuple[str, tuple[str, ...], str]]:
    """(file, command path, --flag) for each flag after `ep-mcp <command>` in code (fenced
    blocks and `inline spans`) of the README and docs/*.md."""
    found: set[tuple[str, tuple[str, ...], str]] = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        code = re.findall(r"```[a-z]*\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text)
        for snippet in code:
            for line in snippet.splitlines():
                for m in re.finditer(r"\bep-mcp\s+([a-z]+)((?:\s+[a-z]+)?)([^#|;&]*)", line):
                    command: tuple[str, ...] = (m.group(1),)
                    if m.group(1) in GROUPS and m.group(2).strip():
                        command += (m.group(2).strip(),)
                    for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(3)):
                        found.add((doc.name, command, flag))
    return sorted(found)


def _id(value: object) -> str:
    return " ".join(value) if isinstance(value, tuple) else str(value)


@pytest.mark.parametrize(("doc", "command", "flag"), doc_invocations(), ids=_id)
def test_every_flag_the_docs_show_exists(doc: str, command: tuple[str, ...], flag: str) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, f"{doc}: `ep-mcp {' '.join(command)}` is not a command"
    assert flag in result.output, f"{doc}: `ep-mcp {' '.join(command)}` has no {flag}"
