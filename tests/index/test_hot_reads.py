"""The reads a query makes of the store: constants of an index version are read once per
version (and read again after any build), rows come back as they were stored."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack

FILES = {
    "solar.md": "# Solar\n\nSolar panels charge the battery.\n",
    "battery.md": "# Battery\n\nA battery stores what the panels make.\n",
    "fuse.md": "# Fuses\n\nSize the fuse for the cable.\n",
}


def build(root: Path, store: Store) -> None:
    build_index(load_pack(root), store, HashingEmbedder(64), lambda t: len(t.split()))


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    """The SQL this thread's reader runs inside the block."""
    seen: list[str] = []
    conn = store._reader()

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        seen.append(sql)
        return True

    conn.exec_trace = trace
    try:
        yield seen
    finally:
        conn.exec_trace = None


def test_a_terms_chunk_count_is_counted_once_per_index_version(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(FILES)
    store = Store(tmp_path / "index.db")
    try:
        build(root, store)
        assert store.term_counts(["battery", "panels", "zebra"]) == (
            {"battery": 2, "panels": 2, "zebra": 0},
            3,
        )
        with statements(store) as seen:
            again = store.term_counts(["panels", "battery"])
        assert again == ({"panels": 2, "battery": 2}, 3)
        assert not [s for s in seen if "MATCH" in s or "count(*)" in s], seen

        (root / "more.md").write_text("# More\n\nPanels on the roof, a battery in the shed.\n")
        build(root, store)  # another connection commits: every count is read again
        assert store.term_counts(["battery", "panels", "zebra"]) == (
            {"battery": 3, "panels": 3, "zebra": 0},
            4,
        )
    finally:
        store.close()


def test_a_row_read_again_is_the_same_frozen_record_and_an_edited_row_a_new_one(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(FILES)
    store = Store(tmp_path / "index.db")
    try:
        build(root, store)
        (first,) = store.chunks_for_path("fuse.md")
        again = store.chunks_by_ids([first.id])[first.id]
        assert again is first  # built once: nothing made per query
        with pytest.raises(TypeError):
            again.file.info["always"] = True  # type: ignore[index]  # shared, so read-only
        assert again.file.info.get("always") is False

        (root / "fuse.md").write_text("# Fuses\n\nSize the fuse for the wire.\n")
        build(root, store)
        (edited,) = store.chunks_for_path("fuse.md")
        assert "wire" in edited.chunk.text and "cable" not in edited.chunk.text
        assert edited.file.content_hash != first.file.content_hash
    finally:
        store.close()


def test_a_querys_constants_and_rows_are_read_once_per_index_version(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(FILES)
    store = Store(tmp_path / "index.db")
    try:
        build(root, store)
        ids = sorted(store.chunks_by_ids(range(1, 100)))

        def ask() -> tuple[object, ...]:
            rows = store.chunks_by_ids([ids[-1], 10_000, ids[0], ids[0]])
            query = store.chunks_for_path("solar.md")[0].chunk.text  # any unit vector will do
            top = store.vector_top(HashingEmbedder(64).embed_query(query), 2)
            return (
                store.features(),
                store.embedding_model(),
                store.has_vectors(),
                store.pending_count(),
                list(rows),
                top,
            )

        first = ask()
        assert first[4] == [ids[0], ids[-1]]  # in id order, each once, the missing one left out
        with statements(store) as seen:
            again = ask()
        assert again == first
        # the version check, the path's rows (not on the query's path) and the one missing id
        assert [s for s in seen if "data_version" not in s and "c.path = ?" not in s] == [
            s for s in seen if "c.id IN (?)" in s
        ], seen

        (root / "solar.md").write_text("# Solar\n\nSolar panels charge two batteries.\n")
        (root / "more.md").write_text("# More\n\nPanels on the roof, a battery in the shed.\n")
        build(root, store)  # another connection commits: nothing remembered is kept
        after = {sc.chunk.text for sc in store.chunks_by_ids(range(1, 100)).values()}
        fresh = Store(tmp_path / "index.db", read_only=True)  # remembers nothing yet
        try:
            assert after == {sc.chunk.text for sc in fresh.chunks_by_ids(range(1, 100)).values()}
            assert store.features() == fresh.features()
        finally:
            fresh.close()
        assert any("two batteries" in t for t in after) and len(after) == len(ids) + 1
    finally:
        store.close()


def test_a_caller_changing_the_features_it_got_changes_nothing_remembered(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    store = Store(tmp_path / "index.db")
    try:
        build(make_pack(FILES), store)
        store.features()["embedder"] = "something else"
        assert store.embedding_model() != "something else"
        assert store.features()["embedder"] == store.embedding_model()
    finally:
        store.close()
