"""`ep-mcp index / search / serve` on a damaged index: one line, then the right answers (exit 0),
or one line and exit 1 when the index cannot be rebuilt."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import Result

from ep_mcp.index import integrity

from .conftest import as_json

Ep = Callable[..., Result]
Damage = tuple[str, Callable[[Path], None]]
QUERY = "tomato side shoots"


def hits(result: Result) -> list[tuple[Any, ...]]:
    assert result.exit_code == 0, result.output
    return [
        (h["source_file"], tuple(h["line_range"]), round(h["score"], 6))
        for h in as_json(result)["results"]
    ]


def damaged_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]


@pytest.fixture
def index_db(ep: Ep, small_pack: Path) -> Path:
    assert ep("index", small_pack, "--provider", "hashing").exit_code == 0
    return small_pack / ".ep-mcp" / "index.db"


@pytest.fixture
def clean(ep: Ep, small_pack: Path, tmp_path: Path) -> list[tuple[Any, ...]]:
    args = ("--provider", "hashing", "--index-dir", tmp_path / "clean", "--json")
    return hits(ep("search", small_pack, QUERY, *args))


def test_index_rebuilds_a_damaged_index_with_one_line_and_exits_0(
    ep: Ep,
    small_pack: Path,
    index_db: Path,
    clean: list[tuple[Any, ...]],
    damage: Damage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    damage[1](index_db)
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        result = ep("index", small_pack, "--provider", "hashing", "--json")
    assert result.exit_code == 0, result.output
    report = as_json(result)
    assert (report["files"], report["changed"]) == (3, 3)  # never "0 changed" on a damaged file
    assert len(damaged_lines(caplog)) == 1
    assert "rebuilding it; the damaged file is kept as" in damaged_lines(caplog)[0]
    assert list(index_db.parent.glob("index.db.corrupt-*"))
    assert hits(ep("search", small_pack, QUERY, "--provider", "hashing", "--json")) == clean


def test_search_on_a_damaged_index_answers_like_a_clean_build(
    ep: Ep,
    small_pack: Path,
    index_db: Path,
    clean: list[tuple[Any, ...]],
    damage: Damage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    damage[1](index_db)
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        result = ep("search", small_pack, QUERY, "--provider", "hashing", "--json")
    assert hits(result) == clean
    assert len(damaged_lines(caplog)) == 1
    assert list(index_db.parent.glob("index.db.corrupt-*"))


def test_serving_a_damaged_read_only_index_is_one_line_and_exit_1(
    ep: Ep, small_pack: Path, index_db: Path, tmp_path: Path
) -> None:
    index_db.write_bytes(b"\0" * 4096)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs:\n  - path: {small_pack}\n    read_only: true\nembedding:\n  provider: hashing\n",
        encoding="utf-8",
    )
    result = ep("serve", "--config", config)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: pack 'garden': index at ")
    assert "is damaged (zeroed header) and is served read-only" in result.stderr
    assert not list(index_db.parent.glob("index.db.corrupt-*"))


def test_a_damaged_index_is_one_line_on_stderr_in_a_real_process(
    small_pack: Path, index_db: Path
) -> None:
    index_db.write_bytes(os.urandom(20_000))
    command = [sys.executable, "-c", "from ep_mcp.cli import main; main()", "search"]
    proc = subprocess.run(
        [*command, str(small_pack), "bumblebees lavender", "--provider", "hashing"],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "ep_mcp.progress" not in ln]
    assert len(said) == 1, proc.stderr  # besides the rebuild's progress lines
    assert f"index at {index_db} is damaged (not a SQLite database) — rebuilding it" in proc.stderr
    assert "bees.md" in proc.stdout


def test_the_no_change_fast_path_never_reports_a_damaged_index_as_current(
    ep: Ep, small_pack: Path, damage: Damage
) -> None:
    old = time.time_ns() - 600 * 10**9  # files untouched for a while: the fast path trusts them
    for path in small_pack.rglob("*"):
        os.utime(path, ns=(old, old))
    assert as_json(ep("index", small_pack, "--provider", "hashing", "--json"))["changed"] == 3
    assert as_json(ep("index", small_pack, "--provider", "hashing", "--json"))["changed"] == 0
    damage[1](small_pack / ".ep-mcp" / "index.db")
    result = ep("index", small_pack, "--provider", "hashing", "--json")
    assert result.exit_code == 0, result.output
    assert as_json(result)["changed"] == 3


def test_damage_met_while_updating_is_rebuilt_in_the_same_run(
    ep: Ep,
    small_pack: Path,
    index_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(integrity, "QUICK_CHECK_MAX_BYTES", 0)  # as for an index over the limit
    conn = apsw.Connection(str(index_db))
    conn.execute("DELETE FROM chunks_fts_data WHERE id = 10")  # FTS5's structure record
    conn.close()
    (small_pack / "tomatoes.md").write_text("# Tomatoes\n\nStake them early.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        result = ep("index", small_pack, "--provider", "hashing", "--json")
    assert result.exit_code == 0, result.output
    assert as_json(result)["changed"] == 3
    assert any("rebuilding it" in line for line in damaged_lines(caplog))
    assert not integrity.marker(index_db).exists()
    found = hits(ep("search", small_pack, "stake early", "--provider", "hashing", "--json"))
    assert found[0][0] == "tomatoes.md"
