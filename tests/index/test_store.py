"""The store: both vector engines agree, it survives a missing sqlite-vec, read-only use, and
no query string can break it."""

from __future__ import annotations

import logging
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ep_mcp.index.store as store_module
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import QueryError
from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval.types import SearchRequest

TOPICS = [
    "solar panels",
    "battery storage",
    "inverter wiring",
    "roof mounting",
    "grid tie",
    "charge controller",
    "cable sizing",
    "fuse ratings",
    "panel tilt",
    "shading losses",
]
FILES = {
    f"topic{i}.md": f"# {t.title()}\n\nNotes on {t}: how {t} works and what to check.\n"
    for i, t in enumerate(TOPICS)
}
QUERIES = ["solar battery", "wiring a grid tie inverter", "what size fuse", "tilt and shading"]


def words(text: str) -> int:
    return len(text.split())


def build(root: Path, db: Path, engine: str) -> Store:
    store = Store(db, vector_engine=engine)
    build_index(load_pack(root), store, HashingEmbedder(64), words)
    return store


@pytest.fixture
def pack(make_pack: Callable[[dict[str, str]], Path]) -> Path:
    return make_pack(FILES)


def test_sqlite_vec_and_the_numpy_scan_give_the_same_top_k(pack: Path, tmp_path: Path) -> None:
    if not store_module.sqlite_vec_status()[0]:
        pytest.skip("sqlite-vec does not load here")
    vec = build(pack, tmp_path / "vec.db", "sqlite-vec")
    exact = build(pack, tmp_path / "np.db", "numpy")
    emb = HashingEmbedder(64)
    try:
        assert (vec.vector_engine, exact.vector_engine) == ("sqlite-vec", "numpy")
        for query in QUERIES:
            a = vec.vector_top(emb.embed_query(query), len(FILES))
            b = exact.vector_top(emb.embed_query(query), len(FILES))
            assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)
            # equal scores may come in either order; compare (score, file) pairs
            ranked_a = sorted((round(s, 4), vec.paths_of([i])[i]) for i, s in a)
            ranked_b = sorted((round(s, 4), exact.paths_of([i])[i]) for i, s in b)
            assert ranked_a == ranked_b
    finally:
        vec.close()
        exact.close()


def test_when_sqlite_vec_cannot_load_the_numpy_scan_answers_after_one_warning(
    pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(store_module, "sqlite_vec_status", lambda: (False, "OSError: no vec0"))
    with caplog.at_level(logging.WARNING, logger="ep_mcp.index.store"):
        store = build(pack, tmp_path / "index.db", "sqlite-vec")
    try:
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "numpy" in warnings[0] and "no vec0" in warnings[0]
        assert store.vector_engine == "numpy"
        top = store.vector_top(HashingEmbedder(64).embed_query("battery storage"), 3)
        assert store.paths_of([top[0][0]])[top[0][0]] == "topic1.md"
    finally:
        store.close()


def open_runtime(cfg: PackSettings, home: Path, build: bool = True) -> PackRuntime:
    settings = Settings(packs=(cfg,), home=home)
    return open_library(settings, home, build=build, embedder=HashingEmbedder(64)).get()


def test_a_prebuilt_index_opened_read_only_answers_searches(pack: Path, tmp_path: Path) -> None:
    built = open_runtime(PackSettings(path=pack), tmp_path)
    built.close()
    rt = open_runtime(PackSettings(path=pack, read_only=True), tmp_path)
    try:
        assert rt.store.read_only and rt.store.path == built.store.path
        hits = rt.search(SearchRequest(query="inverter wiring", k=3)).hits
        assert hits[0].source_file == "topic2.md"
    finally:
        rt.close()


@pytest.fixture
def read_only_pack(pack: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "ro-pack"
    shutil.copytree(pack, copy)
    modes = {p: p.stat().st_mode for p in [copy, *copy.rglob("*")]}
    for path, mode in modes.items():
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield copy
    for path, mode in modes.items():
        path.chmod(mode)


def test_a_read_only_pack_folder_is_indexed_in_the_per_user_data_dir(
    read_only_pack: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    rt = open_runtime(PackSettings(path=read_only_pack), home)
    try:
        assert rt.store.path.is_relative_to(home / "indexes")
        assert not (read_only_pack / ".ep-mcp").exists()
        assert rt.search(SearchRequest(query="tilt", k=1)).hits[0].source_file == "topic8.md"
    finally:
        rt.close()


def test_index_dir_puts_the_index_where_asked(pack: Path, tmp_path: Path) -> None:
    rt = open_runtime(PackSettings(path=pack, index_dir=tmp_path / "elsewhere"), tmp_path)
    try:
        assert rt.store.path == tmp_path / "elsewhere" / "index.db"
        assert rt.store.path.exists() and not (pack / ".ep-mcp").exists()
    finally:
        rt.close()


# -- no query string breaks the search ---------------------------------------------------------

HOSTILE = [
    "AND",
    "OR",
    "NOT",
    "NEAR(",
    "NEAR(solar battery, 2)",
    "*",
    "^solar",
    '"unbalanced',
    "col:x",
    "-x",
    "text:solar",
    '"" ""',
    "(((",
    ")",
    "solar*",
    "a OR b AND NOT c",
    "🔋⚡",
    "x" * 10_000,
    "solar " * 2000,
    "\x00",
    "'; DROP TABLE chunks; --",
    "{title}",
    "\\",
]


@pytest.fixture(scope="module")
def searchable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackRuntime]:
    root = tmp_path_factory.mktemp("q") / "pack"
    root.mkdir()
    for rel, text in FILES.items():
        (root / rel).write_text(text, encoding="utf-8")
    rt = open_runtime(PackSettings(path=root), tmp_path_factory.mktemp("home"))
    yield rt
    rt.close()


def search_safely(rt: PackRuntime, query: str) -> None:
    try:
        rt.search(SearchRequest(query=query, k=5))
    except QueryError:
        assert not query.strip() or not any(c.isalnum() for c in query)
    rt.store.lexical_top(query.split(), 10)
    rt.store.lexical_top([query], 10)


@pytest.mark.parametrize("query", HOSTILE)
def test_fts5_syntax_and_odd_strings_never_raise(searchable: PackRuntime, query: str) -> None:
    search_safely(searchable, query)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_a_clear_query_error(searchable: PackRuntime, query: str) -> None:
    with pytest.raises(QueryError, match="blank"):
        searchable.search(SearchRequest(query=query))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=300) | st.lists(st.sampled_from([*HOSTILE[:18], "solar"])).map(" ".join))
def test_no_query_string_raises_anything_but_a_query_error(
    searchable: PackRuntime, query: str
) -> None:
    search_safely(searchable, query)


def test_auto_answers_with_the_numpy_scan_and_keeps_the_vec0_mirror(
    pack: Path, tmp_path: Path
) -> None:
    if not store_module.sqlite_vec_status()[0]:
        pytest.skip("sqlite-vec does not load here")
    store = build(pack, tmp_path / "auto.db", "auto")
    try:
        assert store.vector_engine == "numpy" and store.vec0
        mirror = Store(tmp_path / "auto.db", vector_engine="sqlite-vec")
        try:
            q = store.vectors_for([1])[1]
            via_vec0 = [round(s, 4) for _, s in mirror.vector_top(q, 5)]
            via_numpy = [round(s, 4) for _, s in store.vector_top(q, 5)]
            assert via_vec0 == via_numpy  # equal scores; ties may come back in either order
        finally:
            mirror.close()
    finally:
        store.close()


def test_a_query_vector_of_the_wrong_size_says_so_on_both_engines(
    pack: Path, tmp_path: Path
) -> None:
    import numpy as np

    from ep_mcp.errors import IndexBuildError

    engines = ["numpy"] + (["sqlite-vec"] if store_module.sqlite_vec_status()[0] else [])
    for engine in engines:
        store = build(pack, tmp_path / f"{engine}.db", engine)
        try:
            with pytest.raises(IndexBuildError, match="re-index with the same embedding model"):
                store.vector_top(np.ones(7, dtype=np.float32), 5)
        finally:
            store.close()


def test_an_index_from_a_newer_ep_mcp_is_refused_and_its_connection_closed(tmp_path: Path) -> None:
    import apsw

    from ep_mcp.errors import IndexBuildError

    db = tmp_path / "future.db"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version=999")
    conn.close()
    before = len(apsw.connections())
    with pytest.raises(IndexBuildError, match="newer ep-mcp"):
        Store(db)
    assert len(apsw.connections()) == before


def test_equal_cosines_rank_by_chunk_id_whatever_the_cut() -> None:
    """Duplicate texts have equal cosines: the numpy scan ranks them by chunk id (as the
    PostgreSQL engine does), the same at every n, ties at the cut included."""
    import numpy as np

    from ep_mcp.index.vectors import Loaded, matrix_top

    rng = np.random.default_rng(7)
    twin = rng.standard_normal(8).astype(np.float32)
    twin /= np.linalg.norm(twin)
    other = rng.standard_normal((3, 8)).astype(np.float32)
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    # six chunks: ids 2, 5, 9 and 11 hold the same vector, 3 and 7 others
    ids = np.array([2, 3, 5, 7, 9, 11], dtype=np.int64)
    mat = np.stack([twin, other[0], twin, other[1], twin, twin])
    none = np.zeros(0, dtype=np.int64)
    loaded = Loaded(ids, mat, none, none, np.zeros((0, 8), dtype=np.float32))
    ranked = matrix_top(loaded, twin, 6)
    assert [cid for cid, _ in ranked[:4]] == [2, 5, 9, 11]
    for n in range(1, 5):  # a cut inside the tie keeps the lowest ids
        assert [cid for cid, _ in matrix_top(loaded, twin, n)] == [2, 5, 9, 11][:n]
    assert matrix_top(loaded, twin, 0) == []


def test_a_vector_holding_nan_is_left_out_of_the_exact_scan() -> None:
    """A damaged row (NaN) neither ranks nor hides the finite ones at any n."""
    import numpy as np

    from ep_mcp.index.vectors import Loaded, matrix_top

    mat = np.array([[1.0, 0.0], [np.nan, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    none = np.zeros(0, dtype=np.int64)
    loaded = Loaded(
        np.array([1, 2, 3, 4], dtype=np.int64), mat, none, none, np.zeros((0, 2), np.float32)
    )
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [cid for cid, _ in matrix_top(loaded, query, 4)] == [1, 3, 4]
    assert [cid for cid, _ in matrix_top(loaded, query, 3)] == [1, 3, 4]
    assert all(np.isfinite(s) for _, s in matrix_top(loaded, query, 10))
