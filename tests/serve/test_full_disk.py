"""A full or read-only disk under a running server: every /search still answers, the lost
cache is logged once, /health says degraded with the reason, and the index is never called
damaged."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from diskfull import fill, fill_disk, remount, tmpfs
from ep_mcp.config.load import load_settings
from ep_mcp.errors import DiskFullError
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.http.app import create_app

QUERIES = ("admin port", "routing table", "packets between networks")


def run(serve: Any, fn: Callable[[httpx2.AsyncClient], Any]) -> None:
    import anyio

    app = create_app(serve, load_settings(data={}).server, KeyRing())

    async def go() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                await fn(c)

    anyio.run(go)


def answers(serve: Any) -> tuple[list[tuple[int, list[str]]], dict[str, Any]]:
    """(status, files) of each query on alpha, then /health."""
    seen: list[tuple[int, list[str]]] = []
    health: dict[str, Any] = {}

    async def fn(c: httpx2.AsyncClient) -> None:
        for q in QUERIES:
            r = await c.get("/search", params={"q": q, "pack": "alpha"})
            files = [h["source_file"] for h in r.json().get("results", [])]
            seen.append((r.status_code, files))
        r = await c.get("/health")
        assert r.status_code == 200
        health.update(r.json())

    run(serve, fn)
    return seen, health


def cache_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]


@pytest.fixture
def clean(fresh_packs: dict[str, Path], settings_for: Any) -> list[tuple[int, list[str]]]:
    serve, _ = open_context(settings_for(fresh_packs))
    try:
        seen, health = answers(serve)
    finally:
        serve.library.close()
    assert health["status"] == "ok" and "reasons" not in health
    assert all(status == 200 and files for status, files in seen)
    return seen


@pytest.mark.parametrize(
    ("refuse", "said"),
    [
        (fill, "(disk full)"),
        (lambda conn: conn.execute("PRAGMA query_only=1"), "(read-only)"),
    ],
    ids=["full", "read-only"],
)
def test_search_on_a_disk_that_refuses_writes_answers_and_health_says_degraded(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    clean: list[tuple[int, list[str]]],
    refuse: Callable[[Any], object],
    said: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for index_db in fresh_packs["alpha"].glob(".ep-mcp/index.db*"):
        index_db.unlink()  # the file profiles were cached by `clean`: start without them
    serve, _ = open_context(settings_for(fresh_packs))
    try:
        refuse(serve.library.get("alpha").store._conn)  # the server's own writer connection
        with caplog.at_level(logging.WARNING, logger="ep_mcp"):
            seen, health = answers(serve)
    finally:
        serve.library.close()
    assert seen == clean  # the same answers: the cache is all a full disk costs
    assert len(cache_lines(caplog)) == 1  # once, not per query
    assert health["status"] == "degraded"
    [reason] = health["reasons"]
    assert reason.startswith("pack alpha: the index at ") and said in reason
    index_dir = fresh_packs["alpha"] / ".ep-mcp"
    assert not list(index_dir.glob("index.db.corrupt-*")) and not list(index_dir.glob("*.damaged"))


def test_query_log_failures_are_logged_once_and_named_by_health(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = tmp_path / "q.jsonl"
    log.mkdir()  # a log that cannot be appended to, on every query
    serve, _ = open_context(settings_for(fresh_packs, query_log_path=str(log)))
    try:
        with caplog.at_level(logging.WARNING, logger="ep_mcp"):
            seen, health = answers(serve)
    finally:
        serve.library.close()
    assert all(status == 200 for status, _ in seen)
    assert len([r for r in caplog.records if "query log" in r.getMessage()]) == 1
    assert health["status"] == "degraded"
    assert any(r.startswith(f"query log {log} not writable") for r in health["reasons"])


def test_a_really_full_filesystem_under_a_server_costs_only_the_cache(
    fresh_packs: dict[str, Path],
    settings_for: Any,
    clean: list[tuple[int, list[str]]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with tmpfs(tmp_path / "disk", 4096) as disk:
        serve, _ = open_context(on_disk(settings_for(fresh_packs), disk))
        try:
            fill_disk(disk)
            with caplog.at_level(logging.WARNING, logger="ep_mcp"):
                seen, health = answers(serve)
        finally:
            serve.library.close()
        assert seen == clean
        assert health["status"] == "degraded" and "(disk full)" in health["reasons"][0]
        assert len(cache_lines(caplog)) == 1
        assert len([r for r in caplog.records if "query log" in r.getMessage()]) == 1
        assert not list(disk.glob("*/index.db.corrupt-*"))


def test_a_writable_pack_on_a_read_only_filesystem_is_one_line_never_damage(
    fresh_packs: dict[str, Path], settings_for: Any, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", 4096) as disk:
        settings = on_disk(settings_for(fresh_packs), disk)
        open_context(settings)[0].library.close()
        remount(disk, "ro")
        with pytest.raises(DiskFullError) as raised:
            open_context(settings)
        assert "\n" not in str(raised.value)
        assert "cannot be written: its file or folder is read-only" in str(raised.value)
        assert not list(disk.glob("*/index.db.corrupt-*"))


def on_disk(settings: Any, disk: Path) -> Any:
    """``settings`` with every index, and the query log, on ``disk``."""
    import dataclasses

    packs = tuple(dataclasses.replace(p, index_dir=disk / p.path.name) for p in settings.packs)
    server = dataclasses.replace(settings.server, query_log_path=disk / "q.jsonl")
    return dataclasses.replace(settings, packs=packs, server=server)


def test_the_backfill_on_a_full_disk_logs_once_and_the_pack_keeps_answering(
    fresh_packs: dict[str, Path], settings_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from ep_mcp.library.backfill import Backfill

    serve, _ = open_context(settings_for(fresh_packs))
    try:
        store = serve.library.get("alpha").store
        with store.transaction():  # as a build that lost its provider leaves it: words only
            store._conn.execute("INSERT INTO pending_vectors SELECT chunk_id FROM vectors")
            store._conn.execute("DELETE FROM vectors")
            store._conn.execute("DELETE FROM embed_cache")
            store.finish_build(store.features())
        fill(store._conn)
        backfill = Backfill(serve.library, 60)
        with caplog.at_level(logging.WARNING, logger="ep_mcp"):
            assert (backfill.run_once(), backfill.run_once()) == (0, 0)
            seen, health = answers(serve)
    finally:
        serve.library.close()
    said = [r.getMessage() for r in caplog.records if "is full" in r.getMessage()]
    assert len(said) == 1 and "free space and run again" in said[0]
    assert all(status == 200 and files for status, files in seen)  # by words, as before
    assert health["status"] == "degraded"
