"""Damage met after an index was opened (not by its open's check) is rebuilt once, in the same
run, by every caller of the one retry (`runtime.retry_reopened`): the start-up build now and
deferred, `ep-mcp index` and `ep-mcp search`. A caller that stopped retrying would raise."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings
from ep_mcp.index import integrity
from ep_mcp.library.indexing import update_index
from ep_mcp.library.opening import finish_build, open_library
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.types import SearchRequest

FILES = {
    "tomatoes.md": "# Tomatoes\n\nPinch out the side shoots of cordon tomatoes every week.\n",
    "compost.md": "# Compost\n\nTurn the heap monthly so it stays aerobic.\n",
}
NEW = "# Tomatoes\n\nStake them early against the wind.\n"


def top_file(lib: Library, query: str) -> str:
    hits = lib.get().search(SearchRequest(query, k=3)).hits
    assert hits, f"no hit for {query!r}"
    return hits[0].source_file


def open_now(settings: Settings) -> str:
    lib = open_library(settings, settings.home)  # type: ignore[arg-type]
    try:
        return top_file(lib, "stake early wind")
    finally:
        lib.close()


def open_later(settings: Settings) -> str:
    lib = open_library(settings, settings.home, build="later")  # type: ignore[arg-type]
    try:
        finish_build(lib)
        assert lib.readiness.error is None
        return top_file(lib, "stake early wind")
    finally:
        lib.close()


def index_cmd(settings: Settings) -> str:
    outcome = update_index(settings)
    assert outcome.report["changed"] == 2  # the whole pack: the rebuild did this run's work
    lib = open_library(settings, settings.home, build=False)  # type: ignore[arg-type]
    try:
        return top_file(lib, "stake early wind")
    finally:
        lib.close()


def search_cmd(settings: Settings) -> str:
    pack = settings.packs[0].path  # nothing changed: the build passes, the query meets it
    args = ["search", str(pack), "side shoots cordon", "--provider", "hashing", "--json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["results"][0]["source_file"])


CALLERS: dict[str, Callable[[Settings], str]] = {
    "the start-up build, now": open_now,
    "the start-up build, deferred (serve)": open_later,
    "ep-mcp index": index_cmd,
    "ep-mcp search": search_cmd,
}


@pytest.mark.parametrize("caller", CALLERS, ids=list(CALLERS))
def test_damage_met_after_opening_is_rebuilt_once_by_every_caller(
    caller: str,
    make_pack: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    pack = make_pack(FILES, name="garden")
    settings = load_settings(
        data={"packs": [{"path": str(pack)}], "embedding": {"provider": "hashing"}}
    )
    settings = dataclasses.replace(settings, home=Path(os.environ["EP_MCP_HOME"]))
    open_library(settings, settings.home).close()  # type: ignore[arg-type]
    index = pack / ".ep-mcp" / "index.db"
    monkeypatch.setattr(integrity, "QUICK_CHECK_MAX_BYTES", 0)  # the open's check passes it by
    conn = apsw.Connection(str(index))
    conn.execute("DELETE FROM chunks_fts_data WHERE id = 10")  # FTS5's structure record
    conn.close()
    if caller != "ep-mcp search":  # a changed file: the build meets the damage
        (pack / "tomatoes.md").write_text(NEW, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        top = CALLERS[caller](settings)
    assert top == "tomatoes.md"
    assert any("is damaged" in r.getMessage() for r in caplog.records)  # met, then retried
    assert not integrity.marker(index).exists()
    assert list(index.parent.glob("index.db.corrupt-*")), "the damaged file is kept aside"
