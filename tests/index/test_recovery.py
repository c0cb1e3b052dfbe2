"""A damaged index is found when it is opened, rebuilt beside itself, swapped in, and kept aside;
damage met later is one clear error and the next open rebuilds; read-only indexes are refused."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import IndexBuildError, IndexDamagedError
from ep_mcp.index import integrity
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.types import SearchRequest

Damage = tuple[str, Callable[[Path], None]]
FILES = {
    "tomatoes.md": "# Tomatoes\n\nTomatoes need full sun and deep watering.\n\n"
    "## Pruning\n\nPinch out the side shoots every week.\n",
    "compost.md": "# Compost\n\nTurn the heap monthly so it stays aerobic.\n",
    "bees.md": "# Bees\n\nBumblebees visit lavender and borage.\n",
}
QUERIES = ["tomato side shoots", "compost heap", "bumblebees lavender", "sun"]


def library(pack: Path, index_dir: Path, *, read_only: bool = False) -> Library:
    cfg = PackSettings(path=pack, index_dir=index_dir, read_only=read_only)
    settings = Settings(packs=(cfg,), home=index_dir.parent / "home")
    return open_library(settings, settings.home or index_dir, embedder=HashingEmbedder(64))


def answers(lib: Library) -> list[list[tuple[str, tuple[int, int], float]]]:
    rt = lib.get()
    out = []
    for query in QUERIES:
        hits = rt.search(SearchRequest(query=query, k=5)).hits
        out.append([(h.source_file, h.line_range, round(h.score, 6)) for h in hits])
    return out


@pytest.fixture
def pack(make_pack: Callable[..., Path]) -> Path:
    root: Path = make_pack(FILES)
    return root


@pytest.fixture
def clean(pack: Path, tmp_path: Path) -> list[list[tuple[str, tuple[int, int], float]]]:
    """What a clean build answers."""
    lib = library(pack, tmp_path / "clean")
    try:
        return answers(lib)
    finally:
        lib.close()


@pytest.fixture
def built(pack: Path, tmp_path: Path) -> Iterator[Path]:
    """A healthy index of the pack, closed; yields its path."""
    library(pack, tmp_path / "idx").close()
    path = tmp_path / "idx" / "index.db"
    assert not Path(f"{path}-wal").exists()
    yield path


def aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.corrupt-*[0-9Z]"))


def test_each_kind_of_damage_is_found_when_the_index_is_opened(built: Path, damage: Damage) -> None:
    name, harm = damage
    harm(built)
    for read_only in (False, True):
        with pytest.raises(IndexDamagedError, match="is damaged") as caught:
            Store(built, read_only=read_only)
        assert caught.value.reason and caught.value.path == built, name
    assert not aside(built)  # finding damage changes nothing on disk


def test_a_damaged_index_is_rebuilt_on_opening_and_answers_like_a_clean_build(
    pack: Path, built: Path, clean: object, damage: Damage, caplog: pytest.LogCaptureFixture
) -> None:
    _, harm = damage
    harm(built)
    damaged_bytes = built.read_bytes()
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        lib = library(pack, built.parent)
    try:
        assert answers(lib) == clean
    finally:
        lib.close()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1
    kept = aside(built)
    assert len(kept) == 1
    assert lines[0].startswith(f"index at {built} is damaged (")
    assert lines[0].endswith(f"— rebuilding it; the damaged file is kept as {kept[0]}")
    assert kept[0].read_bytes() == damaged_bytes
    leftovers = {p.name for p in built.parent.iterdir()} - {"index.db", kept[0].name}
    assert not {n for n in leftovers if "rebuild" in n or n.endswith(".damaged")}
    Store(built, read_only=True).close()  # the new file passes every check


def test_a_garbage_wal_beside_a_good_index_is_ignored_and_nothing_is_rebuilt(
    pack: Path, built: Path, clean: object, caplog: pytest.LogCaptureFixture
) -> None:
    Path(f"{built}-wal").write_bytes(os.urandom(40_000))
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        lib = library(pack, built.parent)
    try:
        assert answers(lib) == clean
    finally:
        lib.close()
    assert not aside(built)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_damaged_read_only_index_is_refused_with_one_clear_error(pack: Path, built: Path) -> None:
    built.write_bytes(b"\0" * 8192)
    with pytest.raises(IndexDamagedError) as caught:
        library(pack, built.parent, read_only=True)
    message = str(caught.value)
    assert "\n" not in message
    assert f"index at {built} is damaged (zeroed header)" in message
    assert "served read-only, so it cannot be rebuilt here" in message
    assert built.read_bytes() == b"\0" * 8192 and not aside(built)


def test_a_service_keeps_serving_its_other_packs_when_one_cannot_load(
    make_pack: Callable[..., Path], pack: Path, built: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = make_pack({"notes.md": "# Notes\n\nOther pack about kites.\n"}, name="other")
    built.write_bytes(b"not a database at all" * 10)
    settings = Settings(
        packs=(
            PackSettings(path=pack, index_dir=built.parent, read_only=True),
            PackSettings(path=other, index_dir=built.parent.parent / "other-idx"),
        ),
        home=built.parent.parent / "home",
    )
    with caplog.at_level(logging.ERROR, logger="ep_mcp"):
        lib = open_library(settings, built.parent.parent, embedder=HashingEmbedder(64))
    try:
        assert lib.slugs() == ["other"]
        assert lib.get().search(SearchRequest(query="kites")).hits
    finally:
        lib.close()
    assert any("serving the other packs without it" in r.getMessage() for r in caplog.records)


def test_damage_met_after_opening_is_one_clear_error_and_the_next_open_rebuilds(
    pack: Path, built: Path, clean: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrity, "QUICK_CHECK_MAX_BYTES", 0)  # as for an index over the limit
    lib = library(pack, built.parent)
    try:
        break_fts(built)
        with pytest.raises(IndexDamagedError) as caught:
            lib.get().search(SearchRequest(query="tomato"))
        assert "\n" not in str(caught.value) and "rebuilt the next time" in str(caught.value)
    finally:
        lib.close()
    assert integrity.marker(built).exists()
    lib = library(pack, built.parent)
    try:
        assert answers(lib) == clean
    finally:
        lib.close()
    assert len(aside(built)) == 1 and not integrity.marker(built).exists()


def break_fts(path: Path) -> None:
    import apsw

    conn = apsw.Connection(str(path))
    conn.execute("DELETE FROM chunks_fts_data WHERE id > 10")
    conn.close()


def test_a_newer_ep_mcp_index_is_refused_not_rebuilt(pack: Path, built: Path) -> None:
    import apsw

    conn = apsw.Connection(str(built))
    conn.execute("PRAGMA user_version=999")
    conn.close()
    with pytest.raises(IndexBuildError, match="newer ep-mcp") as caught:
        library(pack, built.parent)
    assert not isinstance(caught.value, IndexDamagedError)
    assert not aside(built)


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files just written count as quiet (vouched for at once, not after ``QUIET_NS``)."""
    monkeypatch.setattr(integrity, "QUIET_NS", -(10**18))


def test_an_index_untouched_since_its_check_opens_without_it_and_is_checked_behind(
    built: Path, quiet: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not integrity.vouched(built)  # built, never checked
    Store(built, read_only=True).close()  # checked now: vouched for
    assert integrity.vouched(built)
    behind: list[Path] = []
    ran = threading.Event()
    monkeypatch.setattr(integrity, "check_behind", lambda p: (behind.append(p), ran.set()))
    Store(built, read_only=True).close()
    assert ran.wait(timeout=60) and behind == [built]
    Store(built).close()  # a writer's session that wrote nothing leaves it vouched for
    assert integrity.vouched(built)


def test_every_kind_of_damage_to_a_vouched_for_index_is_still_found(
    built: Path, quiet: None, damage: Damage
) -> None:
    Store(built, read_only=True).close()
    assert integrity.vouched(built)
    damage[1](built)
    if integrity.vouched(built):  # written within one timestamp tick: left to the check behind
        integrity.check_behind(built)
    with pytest.raises(IndexDamagedError, match="is damaged"):
        Store(built, read_only=True).close()


def test_damage_no_file_time_shows_is_marked_by_the_check_behind_the_open(
    built: Path, quiet: None
) -> None:
    Store(built, read_only=True).close()
    _zero_pages(built)
    state = integrity.signature(built)
    assert state is not None
    integrity.checked_record(built).write_text(state + "\n", encoding="ascii")  # as bit rot
    assert integrity.vouched(built)
    integrity.check_behind(built)
    assert not integrity.vouched(built)
    with pytest.raises(IndexDamagedError, match="damage seen earlier"):
        Store(built, read_only=True).close()


def _zero_pages(path: Path) -> None:
    """Zero every page but the first two (the schema stays readable)."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.seek(8192)
        fh.write(b"\0" * (size - 8192))
