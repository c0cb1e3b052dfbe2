"""The MCP server over a damaged index: rebuilt at start and answering, or one clear tool error
for damage met while serving."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from mcp import Client

from ep_mcp.index import integrity
from ep_mcp.serve.app import open_context
from ep_mcp.serve.mcp.server import build_server

Damage = tuple[str, Callable[[Path], None]]
SEARCH = {"query": "admin port 8080", "pack": "alpha", "max_results": 3}


def search(serve: Any) -> Any:
    async def go() -> Any:
        async with Client(build_server(serve)) as c:
            return await c.call_tool("ep_search", SEARCH)

    return anyio.run(go)


def files_of(result: Any) -> list[str]:
    assert not result.is_error, result.content
    return [h["source_file"] for h in result.structured_content["results"]]


def serve_once(settings: Any) -> list[str]:
    serve, _ = open_context(settings)
    try:
        return files_of(search(serve))
    finally:
        serve.library.close()


def test_a_server_started_on_a_damaged_index_rebuilds_it_and_answers(
    fresh_packs: dict[str, Path], settings_for: Any, damage: Damage
) -> None:
    settings = settings_for(fresh_packs)
    clean = serve_once(settings)
    index_db = fresh_packs["alpha"] / ".ep-mcp" / "index.db"
    damage[1](index_db)
    assert serve_once(settings) == clean
    assert list(index_db.parent.glob("index.db.corrupt-*"))


def test_damage_met_while_serving_is_a_one_line_tool_error(
    fresh_packs: dict[str, Path], settings_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrity, "QUICK_CHECK_MAX_BYTES", 0)  # as for an index over the limit
    serve, _ = open_context(settings_for(fresh_packs))
    index_db = fresh_packs["alpha"] / ".ep-mcp" / "index.db"
    try:
        conn = apsw.Connection(str(index_db))
        conn.execute("DELETE FROM chunks_fts_data WHERE id > 10")
        conn.close()
        result = search(serve)
    finally:
        serve.library.close()
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text.strip()
    assert f"index at {index_db} is damaged" in text and "restart the server" in text
    assert integrity.marker(index_db).exists()
