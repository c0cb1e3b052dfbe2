"""Embedding windows on the postgres engine (fixtures ``postgres_cluster``,
``postgres_database``): a version built with windows is loaded whole, each chunk is scored at
the best of its windows and ranked exactly as SQLite ranks it, a version loaded before windows
still serves, damaged or hostile vector rows are refused in one line before anything is served
(the version served before stays current), and ``index --check`` makes the same checks."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ep_mcp.config.model import IndexEngine, IndexSettings, Settings
from ep_mcp.eval.run import open_runtime, open_served
from ep_mcp.index import pgwindows
from ep_mcp.index.artifact import ArtifactError
from ep_mcp.index.builder import build_index
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.embed.fake import HashingEmbedder, WindowedHashingEmbedder
from ep_mcp.index.pgindex import PgIndex
from ep_mcp.index.pgload import load_into_postgres
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval.types import SearchRequest

psycopg = pytest.importorskip("psycopg")

WINDOW = 16  # the fake reads 14 pieces (words) of each text
FILLER = " ".join(f"filler{i} words{i} about{i} nothing{i}." for i in range(30))  # 120 words
TOPICS = {
    f"f{i}.md": f"# F{i}\n\n"
    + " ".join(f"x{i}w{j} shared{j % 5}" for j in range(40))
    + f" topic{i} basalt.\n"
    for i in range(6)
}
PACK = {
    "manifest.yaml": "slug: lava\nname: Lava notes\ntype: product\n",
    "long.md": f"# Long\n\n{FILLER} The volcano basalt answer is here at the end.\n",
    "short.md": "# Short\n\nSea salt dries in pans.\n",
    "other.md": "# Other\n\nRiver stones are smooth.\n",
    **TOPICS,
}
QUERIES = (
    "volcano basalt answer",
    "topic3 basalt",
    "x2w5 shared3",
    "shared1 basalt",
    "filler7 nothing29",
    "sea salt",
    "river stones smooth",
    "x5w39 topic5",
)


def words(text: str) -> int:
    return len(text.split())


def write_pack(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def pg_settings(dsn: str, **index: Any) -> Settings:
    return Settings(index=IndexSettings(engine=IndexEngine.POSTGRES, dsn=dsn, **index))


def build_sqlite(root: Path, path: Path, embedder: Embedder, overlap: int | None = 4) -> Store:
    store = Store(path, vector_engine="numpy")
    build_index(load_pack(root), store, embedder, words, window_overlap=overlap)
    return store


@pytest.fixture(scope="module")
def served(
    postgres_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The pack built with windows by the windowed fake, served from SQLite and from
    PostgreSQL: each side's store, and each side's runtime (the whole search)."""
    root = tmp_path_factory.mktemp("pg-windows")
    pack = write_pack(root / "lava", PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    dsn = postgres_cluster.create_database()
    lite_settings = Settings(index=IndexSettings(embed_windows=True, window_overlap=4))
    pg = dataclasses.replace(
        lite_settings,
        index=dataclasses.replace(lite_settings.index, engine=IndexEngine.POSTGRES, dsn=dsn),
    )
    lite_rt = open_runtime(pack, lite_settings, embedder, root / "lite")
    pg_rt = open_served(pack, pg, embedder, root / "pg")
    yield {"lite": lite_rt, "pg": pg_rt, "embedder": embedder, "dsn": dsn, "root": root}
    lite_rt.close()
    pg_rt.close()
    postgres_cluster.drop_database(dsn.rsplit("dbname=", 1)[1])


def same_ranking(
    want: list[tuple[Any, float]], got: list[tuple[Any, float]], tol: float = 1e-5
) -> None:
    """``got`` ranks as ``want``: the same scores (float4 cosines: to 1e-5) and, score level by
    score level, the same items. Equal scores (the hashing fake gives many: a query sharing no
    word with several chunks) may come in either order, and the last level, cut at ``n``, may
    hold any of its members; SQLite's own scan breaks ties either way too."""
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=tol)
    last = want[-1][1] if want else 0.0

    def levels(ranked: list[tuple[Any, float]]) -> list[set[Any]]:
        out: list[set[Any]] = []
        top: float | None = None
        for item, score in ranked:
            if abs(score - last) <= tol:
                break
            if top is None or abs(score - top) > tol:
                out.append(set())
                top = score
            out[-1].add(item)
        return out

    assert levels(got) == levels(want)


def path_of(store: Any, chunk_id: int) -> str:
    return str(store.chunks_by_ids([chunk_id])[chunk_id].chunk.path)


def test_the_later_windows_are_loaded_and_counted(served: dict[str, Any]) -> None:
    lite, pg = served["lite"].store, served["pg"].store
    assert isinstance(pg, PgIndex)
    assert lite.window_count() > 0 and pg.window_count() == lite.window_count()
    assert pg.counts() == lite.counts() and pg.features() == lite.features()


def test_an_answer_only_a_later_window_holds_is_found_on_postgres_as_on_sqlite(
    served: dict[str, Any],
) -> None:
    lite, pg = served["lite"].store, served["pg"].store
    query = served["embedder"].embed_query("volcano basalt answer")
    want, got = lite.vector_top(query, 3), pg.vector_top(query, 3)
    assert path_of(pg, got[0][0]) == "long.md" and got[0][1] > 0.3
    assert [c for c, _ in got] == [c for c, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    hits = served["pg"].search(SearchRequest("volcano basalt answer", k=3)).hits
    assert hits[0].source_file == "long.md"


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 40])
def test_each_chunk_comes_once_at_the_best_of_its_windows_ranked_as_sqlite_ranks(
    served: dict[str, Any], n: int
) -> None:
    lite, pg = served["lite"].store, served["pg"].store
    for text in QUERIES:
        query = served["embedder"].embed_query(text)
        want, got = lite.vector_top(query, n), pg.vector_top(query, n)
        assert len({c for c, _ in got}) == len(got) == min(n, lite.counts()["vectors"])
        same_ranking(want, got)


@pytest.mark.parametrize("ef_max", [8, 4])
def test_past_what_hnsw_returns_every_window_is_scored_and_ranks_the_same(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, ef_max: int
) -> None:
    """When the later windows needed are more than HNSW returns (pgvector's ef_search cap:
    here lowered), the top is computed over every window: the same answer."""
    monkeypatch.setattr(pgwindows, "EF_MAX", ef_max)
    lite, pg = served["lite"].store, served["pg"].store
    for text in QUERIES:
        query = served["embedder"].embed_query(text)
        for n in (1, 3, ef_max):
            want, got = lite.vector_top(query, n), pg.vector_top(query, n)
            same_ranking(want, got)


def test_vectors_for_gives_each_chunks_first_window(served: dict[str, Any]) -> None:
    lite, pg = served["lite"].store, served["pg"].store
    ids = [c.id for c in lite.chunks_for_path("long.md") + lite.chunks_for_path("f1.md")]
    want, got = lite.vectors_for(ids), pg.vectors_for(ids)
    assert sorted(got) == sorted(want) == sorted(ids)
    assert all(np.array_equal(got[i], want[i]) for i in ids)  # float4 both ways: bit for bit


def test_the_whole_search_answers_as_on_sqlite(served: dict[str, Any]) -> None:
    for text in QUERIES:
        want = served["lite"].search(SearchRequest(text, k=8)).hits
        got = served["pg"].search(SearchRequest(text, k=8)).hits
        same_ranking(
            [((h.source_file, h.line_range), h.score) for h in want],
            [((h.source_file, h.line_range), h.score) for h in got],
            tol=1.5e-6,  # a hit's score is rounded to 6 decimals, as the engine's parity allows
        )


def test_a_version_loaded_before_windows_still_serves(
    postgres_database: Callable[[], str], tmp_path: Path
) -> None:
    """A version an ep-mcp before windows loaded has no `chunk_windows` table and no
    `windows` in its `pg_stats`: it opens and serves its one vector a chunk."""
    pack = write_pack(tmp_path / "lava", PACK)
    embedder = HashingEmbedder(64)
    lite = build_sqlite(pack, tmp_path / "old.db", embedder, overlap=None)
    lite.close()
    dsn = postgres_database()
    settings = pg_settings(dsn)
    loaded = load_into_postgres(settings, tmp_path / "old.db", "lava")
    assert loaded.windows == 0
    with psycopg.connect(dsn, autocommit=True) as conn:  # as the older loader left it
        conn.execute(f'DROP TABLE "{loaded.schema}".chunk_windows')
        conn.execute(
            f"UPDATE \"{loaded.schema}\".meta SET value = (value::jsonb - 'windows')::text "
            "WHERE key = 'pg_stats'"
        )
    pg = PgIndex.open(settings.index, "lava")
    reader = Store(tmp_path / "old.db", read_only=True, vector_engine="numpy")
    try:
        assert pg.window_count() == 0 and pg.counts() == reader.counts()
        for text in QUERIES:
            query = embedder.embed_query(text)
            want, got = reader.vector_top(query, 5), pg.vector_top(query, 5)
            same_ranking(want, got)
    finally:
        pg.close()
        reader.close()


NAN, INF = "x'0000c07f'", "x'0000807f'"  # float32, little-endian
FIRST_WINDOWED = "(SELECT min(chunk_id) FROM chunk_windows)"
TOO_MANY = f"""
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
    INSERT INTO chunk_windows(chunk_id, position, vec)
    SELECT v.chunk_id, 1000 + i, v.vec FROM n, vectors v WHERE v.chunk_id = {FIRST_WINDOWED};
    UPDATE vectors SET windows = (SELECT count(*) FROM chunk_windows w
        WHERE w.chunk_id = vectors.chunk_id);
"""
LAST_WINDOW = "WHERE id = (SELECT max(id) FROM chunk_windows)"


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (f"UPDATE chunk_windows SET vec = x'0000' {LAST_WINDOW}", "1 window(s) of the wrong size"),
        (
            "DELETE FROM chunk_windows WHERE id = (SELECT min(id) FROM chunk_windows)",
            "1 window(s) of the wrong size or missing",
        ),
        (f"DELETE FROM vectors WHERE chunk_id = {FIRST_WINDOWED}", "of no chunk vector"),
        (
            f"UPDATE vectors SET vec = {NAN} || substr(vec, 5) WHERE chunk_id = 1",
            "1 vector(s) holding a NaN or an infinity",
        ),
        (
            f"UPDATE chunk_windows SET vec = substr(vec, 1, 8) || {INF} || substr(vec, 13) "
            + LAST_WINDOW,
            "1 vector(s) holding a NaN or an infinity",
        ),
        (f"UPDATE chunk_windows SET id = 2147483648 {LAST_WINDOW}", "1 id(s) or position(s)"),
        (f"UPDATE chunk_windows SET position = 4294967296 {LAST_WINDOW}", "not a 32-bit integer"),
        (f"UPDATE chunk_windows SET position = 'x1' {LAST_WINDOW}", "not a 32-bit integer"),
        (TOO_MANY, "1 chunk(s) with more than the 32 windows a chunk may hold"),
        (
            "UPDATE meta SET value = json_set(value, '$.dimension', '64x') "
            "WHERE key = 'index_features'",
            "the recorded dimension '64x' is not a whole number",
        ),
        (
            "UPDATE meta SET value = json_set(value, '$.windows.limit', 5000) "
            "WHERE key = 'index_features'",
            "the recorded window limit 5000 is not a whole number",
        ),
        (
            "UPDATE chunks SET line_start = 4294967296 WHERE id = 1",
            "holds a value PostgreSQL refuses",
        ),
    ],
)
def test_a_version_postgres_would_not_serve_as_sqlite_is_refused_in_one_line(
    postgres_database: Callable[[], str], tmp_path: Path, damage: str, said: str
) -> None:
    """Damaged or hostile vector rows (or a number PostgreSQL's columns cannot hold) are
    refused with one line, and the version served before stays current, alone."""
    import shutil

    import apsw

    good, index = tmp_path / "good.db", tmp_path / "damaged.db"
    pack = write_pack(tmp_path / "lava", PACK)
    build_sqlite(pack, good, WindowedHashingEmbedder(64, WINDOW)).close()
    shutil.copyfile(good, index)
    conn = apsw.Connection(str(index))
    conn.execute(damage)
    conn.close()
    dsn = postgres_database()
    before = load_into_postgres(pg_settings(dsn), good, "lava")
    with pytest.raises(ArtifactError) as err:
        load_into_postgres(pg_settings(dsn), index, "lava")
    message = str(err.value)
    assert "\n" not in message and said in message and "nothing was published" in message
    with psycopg.connect(dsn) as pg_conn:
        versions = pg_conn.execute("SELECT version FROM ep_mcp.versions").fetchall()
        current = pg_conn.execute("SELECT version FROM ep_mcp.current").fetchall()
        schemas = pg_conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'ep\\_v\\_%'"
        ).fetchone()[0]
    assert versions == current == [(before.version,)] and schemas == 1


def test_the_window_limit_the_build_recorded_is_the_one_enforced(tmp_path: Path) -> None:
    import apsw

    from ep_mcp.index.vectorcheck import serving_damage

    index = tmp_path / "lava.db"
    build_sqlite(write_pack(tmp_path / "lava", PACK), index, WindowedHashingEmbedder(64, WINDOW))
    conn = apsw.Connection(str(index))
    try:
        features = json.loads(
            conn.execute("SELECT value FROM meta WHERE key='index_features'").fetchall()[0][0]
        )
        most = conn.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM chunk_windows GROUP BY chunk_id)"
        ).fetchall()[0][0]
        assert most >= 1 and serving_damage(conn, features) == []
        assert serving_damage(conn, {**features, "windows": {**features["windows"], "limit": most}})
        unwindowed = serving_damage(conn, {**features, "windows": None})
        assert unwindowed and "more than the 1 windows" in unwindowed[0]
    finally:
        conn.close()


@pytest.fixture
def windowed_provider(monkeypatch: pytest.MonkeyPatch) -> str:
    """The windowed hashing fake as a provider the CLI can name (unregistered after)."""
    from ep_mcp.index.embed import base

    name = "test-windowed-hashing"
    monkeypatch.setitem(base._REGISTRY, name, lambda spec, env: WindowedHashingEmbedder(64, WINDOW))
    return name


def test_the_cli_publishes_to_postgres_with_embedding_windows_on(
    tmp_path: Path, postgres_database: Callable[[], str], windowed_provider: str
) -> None:
    """`--to postgres` with `index.embed_windows: true` builds and publishes the later windows
    (it refused while the engine served no windows)."""
    from click.testing import CliRunner

    from ep_mcp.cli import main

    pack = write_pack(tmp_path / "lava", PACK)
    dsn = postgres_database()
    config = tmp_path / "ep-mcp.yaml"
    config.write_text(
        f"embedding: {{provider: {windowed_provider}}}\n"
        f"index: {{engine: postgres, dsn: '{dsn}', embed_windows: true, window_overlap: 4}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = ["index", str(pack), "--out", str(out), "--to", "postgres", "--config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "now current on PostgreSQL" in result.output
    pg = PgIndex.open(IndexSettings(engine=IndexEngine.POSTGRES, dsn=dsn), "lava")
    try:
        assert pg.window_count() > 0 and pg.features()["windows"] is not None
    finally:
        pg.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (
            f"UPDATE chunk_windows SET vec = {NAN} || substr(vec, 5) {LAST_WINDOW}",
            "1 vector(s) holding a NaN or an infinity",
        ),
        (TOO_MANY, "1 chunk(s) with more than the 32 windows"),
        (
            "UPDATE meta SET value = json_set(value, '$.dimension', '64x') "
            "WHERE key = 'index_features'",
            "the recorded dimension '64x'",
        ),
    ],
)
def test_check_refuses_an_artifact_whose_windows_postgres_would_refuse(
    tmp_path: Path, windowed_provider: str, damage: str, said: str
) -> None:
    """`ep-mcp index --check` runs the load's vector checks: damage the manifest was made to
    match (checksum, size, features) is one failing line."""
    import apsw
    from click.testing import CliRunner

    from ep_mcp.cli import main
    from ep_mcp.index.artifact import INDEX, file_sha256
    from ep_mcp.index.manifest import read_manifest, write_manifest

    pack = write_pack(tmp_path / "lava", PACK)
    config = tmp_path / "ep-mcp.yaml"
    config.write_text(
        f"embedding: {{provider: {windowed_provider}}}\n"
        "index: {embed_windows: true, window_overlap: 4}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    runner = CliRunner()
    built = runner.invoke(main, ["index", str(pack), "--out", str(out), "--config", str(config)])
    assert built.exit_code == 0, built.output
    version = (out / "lava" / "current").resolve()
    assert runner.invoke(main, ["index", "--check", str(out / "lava")]).exit_code == 0
    index = version / INDEX
    index.chmod(0o644)
    conn = apsw.Connection(str(index))
    conn.execute(damage)
    features = json.loads(
        conn.execute("SELECT value FROM meta WHERE key='index_features'").fetchall()[0][0]
    )
    conn.close()
    manifest = dataclasses.replace(read_manifest(version), features=features)
    (version / "manifest.json").chmod(0o644)
    version.chmod(0o755)
    write_manifest(
        version,
        dataclasses.replace(
            manifest, index_sha256=file_sha256(index), index_bytes=index.stat().st_size
        ),
    )
    result = runner.invoke(main, ["index", "--check", str(out / "lava")])
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and said in line and "damaged embedding windows or vectors" in line
