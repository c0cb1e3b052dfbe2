"""`ep-mcp bench reliability` measures what it says: damaged indexes recover with the same
answers, a failing provider leaves every query lexical, a FIFO never blocks a search."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ep_mcp.cli import main


def run(tmp_path: Path, *parts: str) -> dict[str, dict[str, object]]:
    args = ["bench", "reliability", "--json", "--work", str(tmp_path)]
    for part in parts:
        args += ["--part", part]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data: dict[str, dict[str, object]] = json.loads(result.stdout)
    return data


def test_every_kind_of_damage_recovers_with_the_answers_of_a_clean_build(tmp_path: Path) -> None:
    rows = run(tmp_path, "damage")["damage"]
    assert len(rows) == 6
    assert all(row["same_answers"] for row in rows.values())  # type: ignore[index]


def test_a_failing_provider_leaves_queries_lexical_and_a_fifo_blocks_nothing(
    tmp_path: Path,
) -> None:
    report = run(tmp_path, "provider", "fifo")
    for row in report["provider"].values():
        assert row["modes"] == ["lexical"]  # type: ignore[index]
    assert "4 reconstruct searchers, FIFO" in report["fifo"]
