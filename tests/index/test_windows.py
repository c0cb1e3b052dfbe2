"""Embedding windows: a chunk longer than the model's window is embedded whole, window by window
(issue #18, build 1) — stored, searched, checked and repaired like a chunk's one vector."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.config.checks import check_settings
from ep_mcp.config.model import IndexSettings, Settings
from ep_mcp.errors import EmbeddingError
from ep_mcp.index import store as store_module
from ep_mcp.index.builder import build_index, features_for
from ep_mcp.index.embed.fake import HashingEmbedder, WindowedHashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.index.windows import WindowSpec, window_starts, window_texts
from ep_mcp.packs.loader import load_pack

WINDOW = 16  # the fake reads 14 pieces (words) of each text

FILLER = " ".join(f"filler{i} words{i} about{i} nothing{i}." for i in range(30))  # 120 words
LONG = f"# Long\n\n{FILLER} The volcano basalt answer is here at the end.\n"
PACK = {
    "long.md": LONG,
    "short.md": "# Short\n\nSea salt dries in pans.\n",
    "other.md": "# Other\n\nRiver stones are smooth.\n",
}


def words(text: str) -> int:
    return len(text.split())


def build(root: Path, store: Store, embedder: object, overlap: int | None = 4):  # type: ignore[no-untyped-def]
    return build_index(
        load_pack(root),
        store,
        embedder,  # type: ignore[arg-type]
        words,
        window_overlap=overlap,
    )


def path_of(store: Store, chunk_id: int) -> str:
    return store.chunks_by_ids([chunk_id])[chunk_id].chunk.path


# -- cutting --------------------------------------------------------------------------------


@given(st.integers(1, 2000), st.integers(8, 300), st.integers(0, 40), st.integers(1, 50))
def test_windows_cover_every_piece_within_the_limit(
    n: int, body: int, overlap: int, limit: int
) -> None:
    overlap = min(overlap, body // 2 - 1) if body > 2 else 0
    starts = window_starts(n, body, overlap, limit)
    assert starts[0] == 0 and starts == sorted(set(starts)) and len(starts) <= limit
    assert all(0 <= s < max(n, 1) for s in starts)
    if len(starts) < limit:  # every piece is in some window
        covered = set().union(*(range(s, min(s + body, n)) for s in starts))
        assert covered == set(range(n))
    for a, b in itertools.pairwise(starts):
        assert b - a <= body - overlap  # neighbours share at least `overlap` pieces


def test_a_long_chunk_is_cut_into_prefixed_windows_that_start_at_words() -> None:
    text = " ".join(f"w{i}" for i in range(40))
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    spec = WindowSpec(size=12, overlap=2)  # room 10, the prefix takes 2: 8 words a window
    out = window_texts("Title here", text, spans, 2, spec)
    assert out[0] == f"Title here\n\n{text}"  # the first is the chunk's indexed text, whole
    assert all(t.startswith("Title here\n\n") for t in out)
    bodies = [t.removeprefix("Title here\n\n").split() for t in out[1:]]
    assert all(len(b) == 8 for b in bodies[:-1]) and bodies[-1][-1] == "w39"
    assert 2 < len(bodies[-1]) <= 8  # the last holds what is left, more than the overlap
    assert bodies[0][0] == "w6"  # window 2 starts where the first's 8 words end, less 2
    assert window_texts("", "a b c", [(0, 1), (2, 3), (4, 5)], 0, spec) == ["a b c"]


# -- building and searching -----------------------------------------------------------------


@pytest.mark.parametrize("engine", ["numpy", "sqlite-vec"])
def test_a_chunk_is_found_by_words_only_its_late_windows_hold(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path, engine: str
) -> None:
    if engine == "sqlite-vec" and not store_module.sqlite_vec_status()[0]:
        pytest.skip("sqlite-vec does not load here")
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    query = embedder.embed_query("volcano basalt answer")
    with_windows = Store(tmp_path / "w.db", vector_engine=engine)
    report = build(root, with_windows, embedder)
    assert report.windows > 0 and with_windows.window_count() == report.windows
    top = with_windows.vector_top(query, 3)
    assert path_of(with_windows, top[0][0]) == "long.md" and top[0][1] > 0.3
    assert len({cid for cid, _ in top}) == 3  # each chunk once, whatever its windows
    without = Store(tmp_path / "n.db", vector_engine=engine)
    build(root, without, embedder, overlap=None)
    assert without.window_count() == 0
    first = without.vector_top(query, 3)[0]
    assert path_of(without, first[0]) != "long.md" or first[1] < 0.3


def test_both_engines_give_each_chunk_the_best_of_its_windows(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    if not store_module.sqlite_vec_status()[0]:
        pytest.skip("sqlite-vec does not load here")
    words_of = {i: " ".join(f"x{i}w{j} shared{j % 5}" for j in range(40)) for i in range(6)}
    files = {f"f{i}.md": f"# F{i}\n\n{words_of[i]} topic{i} basalt.\n" for i in range(6)}
    root = make_pack({**PACK, **files})
    embedder = WindowedHashingEmbedder(64, WINDOW)
    scan = Store(tmp_path / "a.db", vector_engine="numpy")
    vec = Store(tmp_path / "b.db", vector_engine="sqlite-vec")
    build(root, scan, embedder)
    build(root, vec, embedder)
    for q in ("volcano basalt answer", "topic3 basalt", "x2w5 shared3", "shared1 basalt"):
        query = embedder.embed_query(q)
        a, b = scan.vector_top(query, 4), vec.vector_top(query, 4)
        ties = a[-1][1]  # the last place may be a tie (hash collisions): broken either way
        assert [path_of(scan, c) for c, s in a if s > ties + 1e-5] == [
            path_of(vec, c) for c, s in b if s > ties + 1e-5
        ]
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)


def test_vectors_for_gives_one_vector_per_chunk_its_first_window(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    build(root, store, embedder)
    ids = [c.id for c in store.chunks_for_path("long.md")]
    got = store.vectors_for(ids)
    assert list(got) == ids and got[ids[0]].shape == (64,)
    head = embedder.embed_documents([store.chunks_for_path("long.md")[0].chunk.text])[0]
    assert np.allclose(got[ids[0]], head)


def test_turning_windows_on_rebuilds_an_index_and_reuses_every_cached_first_window(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    off = build(root, store, embedder, overlap=None)
    on = build(root, store, embedder)
    assert on.rebuilt and on.embedded == on.windows > 0  # only the later windows are new
    assert on.embedded + off.embedded == store.counts()["cached"]
    again = build(root, store, embedder)
    assert (again.rebuilt, again.changed, again.embedded) == (False, 0, 0)
    assert store.features()["windows"] == {"size": WINDOW, "overlap": 4, "limit": 32}


def test_an_embedder_of_unknown_window_embeds_chunks_whole() -> None:
    assert features_for(HashingEmbedder(8), 1000, "")["windows"] is None
    assert features_for(WindowedHashingEmbedder(8, 20), 1000, "", None)["windows"] is None
    assert features_for(WindowedHashingEmbedder(8, 20), 1000, "", 3)["windows"]["size"] == 20


def test_an_index_of_schema_2_gains_the_windows_table_and_reads_as_no_windows(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    path = tmp_path / "old.db"
    store = Store(path, vector_engine="numpy")
    build(make_pack(PACK), store, HashingEmbedder(64))
    store._conn.execute(
        "DROP TABLE chunk_windows; ALTER TABLE vectors DROP COLUMN windows; PRAGMA user_version=2"
    )
    store.close()
    reader = Store(path, read_only=True, vector_engine="numpy")
    assert reader.window_count() == 0 and reader.repair_needed is None
    assert len(reader.vector_top(HashingEmbedder(64).embed_query("salt"), 3)) == 3
    reader.close()
    upgraded = Store(path, vector_engine="numpy")
    assert upgraded._conn.execute("PRAGMA user_version").fetchall()[0][0] == 3
    upgraded.close()


# -- damage, repair, pending ----------------------------------------------------------------


def test_a_damaged_window_is_found_on_open_and_embedded_again_by_the_next_build(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    path = tmp_path / "i.db"
    store = Store(path, vector_engine="numpy")
    windows = build(root, store, embedder).windows
    store._conn.execute("UPDATE chunk_windows SET vec = x'0000' WHERE position = 2")
    store.close()
    damaged = Store(path, vector_engine="numpy")
    assert damaged.repair_needed == "1 damaged vector(s)"
    report = build(root, damaged, embedder)
    assert report.repaired == 1 and damaged.window_count() == windows
    assert damaged.repair_needed is None
    damaged.close()
    assert Store(path, vector_engine="numpy").repair_needed is None


def test_a_window_of_no_chunk_vector_is_found_and_dropped(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    path = tmp_path / "i.db"
    store = Store(path, vector_engine="numpy")
    build(root, store, embedder)
    owner = store._conn.execute("SELECT chunk_id FROM chunk_windows LIMIT 1").fetchall()[0][0]
    store._conn.execute("DELETE FROM vectors WHERE chunk_id=?", (owner,))
    store.close()
    damaged = Store(path, vector_engine="numpy")
    assert damaged.repair_needed is not None and "vector(s) of no chunk" in damaged.repair_needed
    build(root, damaged, embedder)
    assert damaged.repair_needed is None
    top = damaged.vector_top(embedder.embed_query("volcano basalt answer"), 1)
    assert path_of(damaged, top[0][0]) == "long.md"


class FailingWindows(WindowedHashingEmbedder):
    """The windowed fake whose provider fails on any batch holding a later window."""

    fail = True

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        if self.fail and any("volcano" in t and not t.startswith("# Long") for t in texts):
            raise EmbeddingError("fake provider: HTTP 503")
        return super().embed_documents(texts)


def test_a_chunk_missing_a_window_waits_pending_and_the_next_build_fills_all_its_windows(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = FailingWindows(64, WINDOW)
    store = Store(tmp_path / "i.db", vector_engine="numpy")
    first = build_index(
        load_pack(root), store, embedder, words, window_overlap=4, on_embedding_error="defer"
    )
    assert first.pending >= 1 and store.window_count() == 0
    waiting = {store.chunks_by_ids([cid])[cid].chunk.path for cid, _, _ in store.pending_texts()}
    assert "long.md" in waiting
    embedder.fail = False
    second = build(root, store, embedder)
    assert second.pending == 0 and store.window_count() > 0
    top = store.vector_top(embedder.embed_query("volcano basalt answer"), 1)
    assert path_of(store, top[0][0]) == "long.md"


# -- the knob -------------------------------------------------------------------------------


def test_windows_are_on_by_default() -> None:
    assert IndexSettings().embed_windows is True


def test_window_overlap_must_leave_room_in_the_window() -> None:
    bad = Settings(index=IndexSettings(embed_windows=True, window_overlap=128))
    assert any(
        "index.window_overlap" in e
        for e in check_settings(bad, providers=["hashing"], pack_kinds=["markdown"])
    )
    off = Settings(index=IndexSettings(window_overlap=128, embed_windows=False))
    assert not any(
        "index.window_overlap" in e
        for e in check_settings(off, providers=["hashing"], pack_kinds=["markdown"])
    )


@pytest.fixture(scope="module")
def minilm() -> object:
    from ep_mcp.config.model import EmbeddingSpec
    from ep_mcp.index.embed.local import LocalEmbedder

    return LocalEmbedder(EmbeddingSpec(model="all-MiniLM-L6-v2-int8"))


@pytest.mark.parametrize("windows", [True, False])
def test_the_real_model_finds_an_answer_late_in_a_long_section_only_with_windows(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path, minilm: object, windows: bool
) -> None:
    from knob_pack import PACK as KNOB
    from knob_pack import QUERY

    from ep_mcp.eval.run import open_runtime

    settings = Settings(index=IndexSettings(embed_windows=windows))
    rt = open_runtime(make_pack(KNOB), settings, minilm, tmp_path / "work")  # type: ignore[arg-type]
    try:
        top = rt.store.vector_top(minilm.embed_query(QUERY), 2)  # type: ignore[attr-defined]
        first = rt.store.chunks_by_ids([top[0][0]])[top[0][0]].chunk.path
        assert (first == "garden.md") is windows
        assert (rt.store.window_count() > 0) is windows
    finally:
        rt.close()


def test_the_sqlite_vec_mirror_follows_the_windows_through_edits_and_repairs(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    if not store_module.sqlite_vec_status()[0]:
        pytest.skip("sqlite-vec does not load here")
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    path = tmp_path / "i.db"
    store = Store(path, vector_engine="sqlite-vec")

    def mirrored() -> tuple[int, int]:
        one = store._conn.execute
        return (
            one("SELECT count(*) FROM windows_vec").fetchall()[0][0],
            one("SELECT count(*) FROM chunk_windows").fetchall()[0][0],
        )

    build(root, store, embedder)
    held, stored = mirrored()
    assert held == stored > 0
    (root / "long.md").write_text(LONG.replace("volcano", "glacier"), encoding="utf-8")
    build(root, store, embedder)
    assert mirrored() == (stored, stored)  # the old file's windows left the mirror
    top = store.vector_top(embedder.embed_query("glacier basalt answer"), 1)
    assert path_of(store, top[0][0]) == "long.md"
    store._conn.execute("UPDATE chunk_windows SET vec = x'00' WHERE position = 1")
    store.close()
    store = Store(path, vector_engine="sqlite-vec")
    assert store.repair_needed
    build(root, store, embedder)
    assert mirrored() == (stored, stored) and store.repair_needed is None
    (root / "long.md").unlink()
    build(root, store, embedder)
    assert mirrored() == (0, 0)


def test_a_lost_window_is_found_on_open_and_embedded_again_by_the_next_build(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    path = tmp_path / "i.db"
    store = Store(path, vector_engine="numpy")
    windows = build(root, store, embedder).windows
    store._conn.execute("DELETE FROM chunk_windows WHERE position = 1")
    store.close()
    damaged = Store(path, vector_engine="numpy")
    assert damaged.repair_needed == "1 damaged vector(s)"  # the chunk records its windows
    report = build(root, damaged, embedder)
    assert report.repaired == 1 and damaged.window_count() == windows
    damaged.close()
    assert Store(path, vector_engine="numpy").repair_needed is None
