"""Chunks left without a vector by a failed provider wait as pending; the next build fills them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder, Matrix
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack

PACK = {
    "lava.md": "# Lava\n\nBasalt lava flows far.\n",
    "salt.md": "# Salt\n\nSea salt dries in pans.\n",
}


class Flaky:
    """The hashing fake, failing on demand after ``ok`` more batches."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(16)
        self.ok: int | None = None  # None: always answers

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return 16

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        if self.ok is not None:
            if self.ok == 0:
                raise EmbeddingError("fake provider: HTTP 503")
            self.ok -= 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Matrix:
        return self.inner.embed_query(text)


def build(root: Path, store: Store, embedder: Flaky, mode: str = "defer"):  # type: ignore[no-untyped-def]
    return build_index(
        load_pack(root),
        store,
        embedder,
        lambda t: len(t.split()),
        on_embedding_error=mode,  # type: ignore[arg-type]
    )


def test_a_failed_provider_leaves_changed_chunks_pending_and_the_next_build_fills_them(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    embedder = Flaky()
    build(root, store, embedder)
    (root / "salt.md").write_text("# Salt\n\nRock salt is mined.\n", encoding="utf-8")
    embedder.ok = 0
    report = build(root, store, embedder)
    assert (report.pending, report.embedded) == (1, 0)
    assert report.embedding_error == "fake provider: HTTP 503"
    assert store.counts() | {"cached": 0} == {
        "files": 2,
        "chunks": 2,
        "vectors": 1,
        "cached": 0,
        "pending": 1,
    }
    assert store.features()["embedder"] == embedder.name

    embedder.ok = None
    again = build(root, store, embedder)  # no file changed: only the pending chunk is embedded
    assert (again.changed, again.pending, again.embedded) == (0, 0, 1)
    assert store.counts()["vectors"] == 2 and store.pending_count() == 0


def test_a_provider_failing_part_way_keeps_the_batches_it_gave(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ep_mcp.index.builder.CACHE_FLUSH", 1)
    root = make_pack(PACK)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    embedder = Flaky()
    embedder.ok = 1
    report = build(root, store, embedder)
    assert (report.embedded, report.pending) == (1, 1)
    assert store.counts()["vectors"] == 1


def test_without_defer_a_provider_failure_still_stops_the_build(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    embedder = Flaky()
    embedder.ok = 0
    with pytest.raises(EmbeddingError, match="HTTP 503"):
        build(make_pack(PACK), store, embedder, mode="raise")
    assert store.counts()["files"] == 0


def test_a_deleted_or_edited_file_takes_its_pending_chunks_with_it(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    embedder = Flaky()
    embedder.ok = 0
    assert build(root, store, embedder).pending == 2
    (root / "lava.md").unlink()
    (root / "salt.md").write_text("# Salt\n\nFlaky salt.\n", encoding="utf-8")
    assert build(root, store, embedder).pending == 1
    embedder.ok = None
    assert build(root, store, embedder).pending == 0
    assert store.counts()["vectors"] == store.counts()["chunks"] == 1


def test_an_index_of_schema_1_gains_the_pending_table_and_reads_as_nothing_pending(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    store = Store(path, vector_engine="numpy")
    store._conn.execute(
        "DROP TABLE chunk_windows; ALTER TABLE vectors DROP COLUMN windows; "
        "DROP TABLE pending_vectors; PRAGMA user_version=1"
    )
    store.close()
    reader = Store(path, read_only=True, vector_engine="numpy")
    assert reader.pending_count() == 0 and reader.pending_texts() == []
    reader.close()
    upgraded = Store(path, vector_engine="numpy")
    assert upgraded._conn.execute("PRAGMA user_version").fetchall()[0][0] == 3
    assert upgraded.pending_count() == 0
    upgraded.close()
