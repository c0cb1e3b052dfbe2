"""A stored vector damaged under a running server: /search skips the bad row and answers,
/health names the pack as awaiting repair, and the backfill repairs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import httpx2

from ep_mcp.library.backfill import Backfill
from ep_mcp.serve.app import open_context

from .test_full_disk import run

QUERY = {"q": "admin port", "pack": "alpha"}


def ask(serve: Any) -> tuple[int, list[str], dict[str, Any]]:
    seen: dict[str, Any] = {}

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get("/search", params=QUERY)
        seen["status"] = r.status_code
        seen["files"] = [h["source_file"] for h in r.json().get("results", [])]
        seen["health"] = (await c.get("/health")).json()

    run(serve, fn)
    return seen["status"], seen["files"], seen["health"]


def shorten_one_vector(index_db: Path) -> None:
    conn = apsw.Connection(str(index_db))
    conn.execute(
        "UPDATE vectors SET vec = substr(vec, 1, length(vec) - 1) "
        "WHERE chunk_id = (SELECT min(chunk_id) FROM vectors)"
    )
    conn.close()


def clean_answer(settings: Any) -> list[str]:
    serve, _ = open_context(settings)
    try:
        status, files, health = ask(serve)
    finally:
        serve.library.close()
    assert (status, health["status"]) == (200, "ok") and files
    return files


def test_a_vector_damaged_while_serving_is_skipped_then_repaired_by_the_backfill(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    clean = clean_answer(settings)
    serve, _ = open_context(settings)  # opened sound: the damage comes after the open check
    try:
        shorten_one_vector(fresh_packs["alpha"] / ".ep-mcp" / "index.db")
        status, files, health = ask(serve)
        assert status == 200 and files  # the bad row is skipped, the rest answers
        assert health["status"] == "degraded"
        assert any(
            r.startswith("pack alpha: 1 damaged vector(s) skipped") and "awaiting repair" in r
            for r in health["reasons"]
        )
        Backfill(serve.library, 60).run_once()
        status, files, health = ask(serve)
        assert (status, files, health["status"]) == (200, clean, "ok")
    finally:
        serve.library.close()


def test_a_server_started_on_a_damaged_vector_repairs_it_before_answering(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    clean = clean_answer(settings)
    index_db = fresh_packs["alpha"] / ".ep-mcp" / "index.db"
    shorten_one_vector(index_db)
    serve, _ = open_context(settings)
    try:
        status, files, health = ask(serve)
    finally:
        serve.library.close()
    assert (status, files, health["status"]) == (200, clean, "ok")
    conn = apsw.Connection(str(index_db))
    assert len({r[0] for r in conn.execute("SELECT length(vec) FROM vectors")}) == 1
    conn.close()
