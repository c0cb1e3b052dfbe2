"""Embedding windows on the postgres engine (fixture ``postgres_dsn``): a version built with
windows is loaded whole, each chunk is scored at the best of its windows and ranked exactly as
SQLite ranks it, a version loaded before windows still serves, and damaged windows are refused
before anything is loaded."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
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


def fresh_database(dsn: str) -> str:
    name = f"ep_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{dsn} dbname={name}"


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
def served(postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The pack built with windows by the windowed fake, served from SQLite and from
    PostgreSQL: each side's store, and each side's runtime (the whole search)."""
    root = tmp_path_factory.mktemp("pg-windows")
    pack = write_pack(root / "lava", PACK)
    embedder = WindowedHashingEmbedder(64, WINDOW)
    dsn = fresh_database(postgres_dsn)
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


def test_a_version_loaded_before_windows_still_serves(postgres_dsn: str, tmp_path: Path) -> None:
    """A version an ep-mcp before windows loaded has no `chunk_windows` table and no
    `windows` in its `pg_stats`: it opens and serves its one vector a chunk."""
    pack = write_pack(tmp_path / "lava", PACK)
    embedder = HashingEmbedder(64)
    lite = build_sqlite(pack, tmp_path / "old.db", embedder, overlap=None)
    lite.close()
    dsn = fresh_database(postgres_dsn)
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


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (
            "UPDATE chunk_windows SET vec = x'0000' WHERE id = (SELECT max(id) FROM chunk_windows)",
            "1 of the wrong size",
        ),
        (
            "DELETE FROM chunk_windows WHERE id = (SELECT min(id) FROM chunk_windows)",
            "1 of the wrong size or missing",
        ),
        (
            "DELETE FROM vectors WHERE chunk_id = (SELECT min(chunk_id) FROM chunk_windows)",
            "of no chunk vector",
        ),
    ],
)
def test_a_version_with_damaged_windows_is_refused_in_one_line_before_loading(
    postgres_dsn: str, tmp_path: Path, damage: str, said: str
) -> None:
    import apsw

    index = tmp_path / "damaged.db"
    pack = write_pack(tmp_path / "lava", PACK)
    build_sqlite(pack, index, WindowedHashingEmbedder(64, WINDOW)).close()
    conn = apsw.Connection(str(index))
    conn.execute(damage)
    conn.close()
    dsn = fresh_database(postgres_dsn)
    with pytest.raises(ArtifactError) as err:
        load_into_postgres(pg_settings(dsn), index, "lava")
    message = str(err.value)
    assert "\n" not in message and "damaged embedding windows" in message and said in message
    assert "nothing was published" in message
    with psycopg.connect(dsn) as pg_conn:
        versions = pg_conn.execute("SELECT count(*) FROM ep_mcp.versions").fetchone()[0]
        schemas = pg_conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'ep\\_v\\_%'"
        ).fetchone()[0]
    assert (versions, schemas) == (0, 0)


def test_the_cli_publishes_to_postgres_with_embedding_windows_on(
    tmp_path: Path, postgres_dsn: str
) -> None:
    """`--to postgres` with `index.embed_windows: true` builds and publishes (it refused
    while the engine served no windows)."""
    from click.testing import CliRunner

    from ep_mcp.cli import main

    pack = write_pack(tmp_path / "lava", PACK)
    dsn = fresh_database(postgres_dsn)
    config = tmp_path / "ep-mcp.yaml"
    config.write_text(
        "embedding: {provider: hashing}\n"
        f"index: {{engine: postgres, dsn: '{dsn}', embed_windows: true}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = ["index", str(pack), "--out", str(out), "--to", "postgres", "--config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "now current on PostgreSQL" in result.output
