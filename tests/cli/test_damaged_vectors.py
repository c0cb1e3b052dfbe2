"""Damaged content that SQLite's own check passes: a stored vector a byte short, chunk rows
deleted. Searches skip what is bad, `ep-mcp index` finds it, re-embeds exactly the bad or
missing rows and says so; the result answers as a clean build does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import Result

from ep_mcp.index import vectorcheck

from .conftest import as_json

Ep = Callable[..., Result]
QUERY = "tomato side shoots"


@pytest.fixture(params=["numpy", "sqlite-vec"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / f"config-{request.param}.yaml"
    path.write_text(
        f"embedding:\n  provider: hashing\nindex:\n  vector_engine: {request.param}\n",
        encoding="utf-8",
    )
    return path


def hits(result: Result) -> list[tuple[Any, ...]]:
    assert result.exit_code == 0, result.output
    return [(h["source_file"], round(h["score"], 6)) for h in as_json(result)["results"]]


def sql(index_db: Path, statement: str) -> list[Any]:
    conn = apsw.Connection(str(index_db))  # foreign keys off, as any outside tool has them
    try:
        return list(conn.execute(statement))
    finally:
        conn.close()


def vector_sizes(index_db: Path) -> set[int]:
    return {int(r[0]) for r in sql(index_db, "SELECT DISTINCT length(vec) FROM vectors")}


@pytest.fixture
def built(ep: Ep, small_pack: Path, config: Path) -> tuple[Path, list[tuple[Any, ...]]]:
    """(index.db, the clean answers to QUERY)."""
    assert ep("index", small_pack, "--config", config).exit_code == 0
    clean = hits(ep("search", small_pack, QUERY, "--config", config, "--json"))
    assert clean
    return small_pack / ".ep-mcp" / "index.db", clean


@pytest.mark.parametrize("which", ["min", "max"])
def test_index_re_embeds_exactly_the_vector_a_byte_short_and_says_so(
    ep: Ep,
    small_pack: Path,
    config: Path,
    built: tuple[Path, list[tuple[Any, ...]]],
    which: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index_db, clean = built
    if which == "max":  # the largest rowid: checked by sampling too (as above the size bound)
        monkeypatch.setattr(vectorcheck, "FULL_CHECK_MAX_ROWS", 0)
    sql(
        index_db,
        "UPDATE vectors SET vec = substr(vec, 1, length(vec) - 1) "
        f"WHERE chunk_id = (SELECT {which}(chunk_id) FROM vectors)",
    )
    [size] = vector_sizes(index_db) - {min(vector_sizes(index_db))}  # one short, the rest whole
    result = ep("index", small_pack, "--config", config)
    assert result.exit_code == 0, result.output
    assert "garden: repaired 1 damaged or missing vectors" in result.stdout
    assert vector_sizes(index_db) == {size}
    again = as_json(ep("index", small_pack, "--config", config, "--json"))
    assert (again["changed"], again["repaired"]) == (0, 0)
    assert hits(ep("search", small_pack, QUERY, "--config", config, "--json")) == clean
    assert not list(index_db.parent.glob("index.db.corrupt-*"))  # repaired, never rebuilt


@pytest.mark.parametrize("check", ["full", "sampled"])
def test_index_finds_the_files_whose_chunk_rows_were_deleted_and_indexes_them_again(
    ep: Ep,
    small_pack: Path,
    config: Path,
    built: tuple[Path, list[tuple[Any, ...]]],
    check: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index_db, clean = built
    if check == "sampled":
        monkeypatch.setattr(vectorcheck, "FULL_CHECK_MAX_ROWS", 0)
    chunks = sql(index_db, "SELECT count(*) FROM chunks")[0][0]
    sql(index_db, "DELETE FROM chunks WHERE id % 2 = 0")  # half the rows, files left as they were
    result = ep("index", small_pack, "--config", config, "--json")
    assert result.exit_code == 0, result.output
    report = as_json(result)
    assert report["repaired_files"] >= 1 and report["changed"] == report["repaired_files"]
    assert report["chunks"] == chunks
    for table in ("vectors", "chunks_fts"):  # nothing left of the deleted rows
        assert sql(index_db, f"SELECT count(*) FROM {table}")[0][0] == chunks
    assert hits(ep("search", small_pack, QUERY, "--config", config, "--json")) == clean
    quiet = as_json(ep("index", small_pack, "--config", config, "--json"))
    assert (quiet["changed"], quiet["repaired_files"]) == (0, 0)


def test_vectors_lost_outright_are_found_by_the_row_count_and_embedded_again(
    ep: Ep, small_pack: Path, config: Path, built: tuple[Path, list[tuple[Any, ...]]]
) -> None:
    index_db, clean = built
    sql(index_db, "DELETE FROM vectors WHERE chunk_id IN (SELECT chunk_id FROM vectors LIMIT 2)")
    result = ep("index", small_pack, "--config", config, "--json")
    assert as_json(result)["repaired"] == 2
    assert hits(ep("search", small_pack, QUERY, "--config", config, "--json")) == clean
