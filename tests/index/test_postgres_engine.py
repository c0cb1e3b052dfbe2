"""The postgres engine against a real PostgreSQL + pgvector (fixture ``postgres_dsn``): it answers
as SQLite does, swaps versions under load, and says one line when the server is gone."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE_PACK, seed_compiled_model
from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings
from ep_mcp.errors import ConfigError, EpMcpError, IndexUnavailableError
from ep_mcp.index.pgload import Loaded, publish_version
from ep_mcp.library.artifacts import ArtifactWatcher
from ep_mcp.library.opening import open_library
from ep_mcp.library.publish import Published, publish
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.lexical import query_terms
from ep_mcp.retrieval.types import SearchRequest

psycopg = pytest.importorskip("psycopg")

QUERIES = (
    "install",
    "how do I configure the server",
    "vector search hybrid fusion",
    "rerank pool size",
    "publish an artifact with versions",
    "what is mmr",
    "Docker compose deploy replicas",
    "zzzz nothing matches",
)


def fresh_database(dsn: str) -> str:
    """A database of its own on the fixture's server (a test may lock it or flip its packs)."""
    name = f"ep_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{dsn} dbname={name}"


def settings_for(home: Path, provider: str, **extra: Any) -> Settings:
    return load_settings(data={"embedding": {"provider": provider}, "home": str(home), **extra})


def publish_pack(pack: Path, home: Path, out: Path, provider: str) -> Published:
    return publish(settings_for(home, provider, packs=[{"path": str(pack)}]), os.environ, out)


def load(dsn: str, published: Published, home: Path, provider: str) -> Loaded:
    pg = settings_for(home, provider, index={"engine": "postgres", "dsn": dsn})
    return publish_version(pg.index, published.version_dir)


def open_both(out: Path, slug: str, home: Path, provider: str, dsn: str) -> tuple[Library, Library]:
    packs = [{"artifact": str(out / slug)}]
    lite = open_library(settings_for(home, provider, packs=packs), home)
    pg = settings_for(home, provider, packs=packs, index={"engine": "postgres", "dsn": dsn})
    return lite, open_library(pg, home)


@pytest.fixture(scope="module")
def both(
    postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory, compiled_model: Path
) -> Iterator[tuple[Library, Library]]:
    """The example pack with the real local model, served from SQLite and from PostgreSQL."""
    root = tmp_path_factory.mktemp("pg-both")
    pack, home = root / "ep-mcp-docs", root / "home"
    shutil.copytree(EXAMPLE_PACK, pack)
    seed_compiled_model(home, compiled_model)
    published = publish_pack(pack, home, root / "out", "local")
    dsn = fresh_database(postgres_dsn)
    loaded = load(dsn, published, home, "local")
    assert (loaded.chunks, loaded.vectors) == (published.manifest.chunks,) * 2
    lite, pg = open_both(root / "out", published.slug, home, "local", dsn)
    yield lite, pg
    lite.close()
    pg.close()


def _hits(lib: Library, query: str) -> list[tuple[str, tuple[int, int], float]]:
    result = lib.get().search(SearchRequest(query, k=10))
    return [(h.source_file, h.line_range, h.score) for h in result.hits]


@pytest.mark.parametrize("query", QUERIES)
def test_the_postgres_engine_answers_every_query_as_sqlite_does(
    both: tuple[Library, Library], query: str
) -> None:
    lite, pg = both
    want, got = _hits(lite, query), _hits(pg, query)
    assert [h[:2] for h in got] == [h[:2] for h in want]
    # a hit's score is rounded to 6 decimals: pgvector's float4 cosine and numpy's differ by
    # ~1e-7, which can put two equal scores one unit of the sixth decimal apart, never more
    assert [h[2] for h in got] == pytest.approx([h[2] for h in want], abs=1.5e-6)


ODD_QUERIES = (
    'café résumé naïve "quoted" words',
    "don't won't it's the server's index",
    "covid-19 e.g. 3.14 v2 x86_64",
    "running runs run ran configure configured configuring",
    "the of and a to",
    "INDEX Index index",
    "ünïcödé ΑΘΗΝΑ 東京 emoji 🙂",
)


@pytest.mark.parametrize("query", QUERIES + ODD_QUERIES)
def test_the_lexical_leg_is_fts5s_bm25_to_the_last_digit(
    both: tuple[Library, Library], query: str
) -> None:
    lite, pg = both
    terms = query_terms(query)
    for weights in ((1.0, 3.0, 2.0), (1.0, 1.0, 1.0), (0.5, 4.25, 0.0)):
        want = lite.get().store.lexical_top(terms, 50, weights=weights)
        got = pg.get().store.lexical_top(terms, 50, weights=weights)
        assert [c for c, _ in got] == [c for c, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)
    assert pg.get().store.term_counts(terms) == lite.get().store.term_counts(terms)


def test_the_vector_leg_finds_the_exact_neighbours_and_reads_match(
    both: tuple[Library, Library],
) -> None:
    lite, pg = both
    assert lite.embedder is not None
    store_l, store_p = lite.get().store, pg.get().store
    for query in QUERIES:
        vec = lite.embedder.embed_query(query)
        want, got = store_l.vector_top(vec, 30), store_p.vector_top(vec, 30)
        assert [c for c, _ in got] == [c for c, _ in want]  # recall 1.0 at the pool size
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
        ids = [c for c, _ in want]
        assert store_p.chunks_by_ids(ids) == store_l.chunks_by_ids(ids)
    assert store_p.counts() == store_l.counts()
    assert store_p.features() == store_l.features()
    path = store_l.chunks_by_ids([1])[1].chunk.path
    assert store_p.chunks_for_path(path) == store_l.chunks_for_path(path)
    assert store_p.file_tokens([path]) == store_l.file_tokens([path])


GARDEN = {
    "manifest.yaml": "slug: garden\nname: Garden notes\ntype: product\n",
    "tomatoes.md": "---\ntitle: Growing tomatoes\ntype: howto\n---\n# Growing tomatoes\n\n"
    "Tomatoes need full sun, deep watering and a sturdy stake.\n",
    "compost.md": "---\ntitle: Making compost\ntype: concept\n---\n# Making compost\n\n"
    "Mix green and brown material; turn the heap monthly so it stays aerobic.\n",
}
NEW_WORD = "quokkazebra"


@pytest.fixture
def garden(make_pack: Any, tmp_path: Path, postgres_dsn: str) -> Iterator[dict[str, Any]]:
    """The garden pack published with the hashing embedder into a database of its own, and
    a library serving it from PostgreSQL."""
    pack: Path = make_pack(GARDEN, name="garden")
    home, out = tmp_path / "home", tmp_path / "out"
    dsn = fresh_database(postgres_dsn)
    load(dsn, publish_pack(pack, home, out, "hashing"), home, "hashing")
    _, lib = open_both(out, "garden", home, "hashing", dsn)
    _.close()
    yield {"pack": pack, "home": home, "out": out, "dsn": dsn, "lib": lib}
    lib.close()


def test_a_new_version_is_swapped_in_under_32_clients_with_no_failed_request(
    garden: dict[str, Any],
) -> None:
    lib: Library = garden["lib"]
    watcher = ArtifactWatcher(lib, poll_s=0.05)
    stop, errors, seen = threading.Event(), [], {"old": 0, "new": 0}

    def client() -> None:
        while not stop.is_set():
            try:
                hits = lib.get("garden").search(SearchRequest(NEW_WORD, k=3)).hits
                seen["new" if any(NEW_WORD in h.text for h in hits) else "old"] += 1
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(32)]
    for t in threads:
        t.start()
    watcher.start()
    try:
        (garden["pack"] / "zebra.md").write_text(f"# Zebras\n\nThe {NEW_WORD} grazes.\n")
        published = publish_pack(garden["pack"], garden["home"], garden["out"], "hashing")
        load(garden["dsn"], published, garden["home"], "hashing")
        wait = threading.Event()
        for _ in range(400):  # bounded: 400 polls of 0.05 s
            if lib.get("garden").store.version == published.manifest.version and seen["new"]:
                break
            wait.wait(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        watcher.stop()
    assert errors == []
    assert watcher.swaps == 1
    assert seen["old"] > 0 and seen["new"] > 0
    assert lib.get("garden").store.version == published.manifest.version


def _kill_backends(dsn: str, block: bool) -> None:
    with psycopg.connect(dsn.rsplit(" dbname=", 1)[0], autocommit=True) as admin:
        name = dsn.rsplit("dbname=", 1)[1]
        if block:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )


def _allow(dsn: str) -> None:
    with psycopg.connect(dsn.rsplit(" dbname=", 1)[0], autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dsn.rsplit("dbname=", 1)[1]}" ALLOW_CONNECTIONS true')


def test_a_killed_connection_is_retried_once_and_a_lost_server_is_one_line_and_degraded(
    garden: dict[str, Any],
) -> None:
    lib: Library = garden["lib"]
    rt = lib.get("garden")
    assert rt.search(SearchRequest("tomatoes", k=3)).hits
    _kill_backends(garden["dsn"], block=False)
    assert rt.search(SearchRequest("tomatoes", k=3)).hits  # reconnected, retried: answered
    assert rt.problems() == []
    _kill_backends(garden["dsn"], block=True)
    try:
        with pytest.raises(IndexUnavailableError) as caught:
            rt.search(SearchRequest("compost", k=3))
        assert "\n" not in str(caught.value) and "try again" in str(caught.value)
        assert [p for p in rt.problems() if "PostgreSQL connection lost" in p]
        health = _health(lib)
        assert health["status"] == "degraded" and "PostgreSQL" in health["reasons"][0]
    finally:
        _allow(garden["dsn"])
    assert rt.search(SearchRequest("compost", k=3)).hits
    assert rt.problems() == []
    assert _health(lib)["status"] == "ok"


def _health(lib: Library) -> dict[str, Any]:
    """GET /health of the HTTP app serving ``lib``."""
    import anyio
    import httpx2

    from ep_mcp.serve.app import open_context
    from ep_mcp.serve.http.app import create_app

    serve, ring = open_context(lib.settings, library=lib)
    app = create_app(serve, lib.settings.server, ring)
    out: dict[str, Any] = {}

    async def go() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            out.update((await c.get("/health")).json())

    anyio.run(go)
    return out


@pytest.mark.parametrize(
    ("index", "said"),
    [
        ({"dsn": "host=127.0.0.1 port=1 dbname=nothing connect_timeout=2"}, "cannot connect"),
        ({"dsn": "this is = not a dsn ==="}, "not a libpq connection string"),
        ({"dsn_file": "/nonexistent/ep-mcp-dsn"}, "cannot read"),
        ({}, "needs index.dsn"),
    ],
)
def test_a_bad_dsn_is_one_config_error_line(
    tmp_path: Path, make_pack: Any, index: dict[str, str], said: str
) -> None:
    pack = make_pack(GARDEN, name="garden")
    settings_data = {"index": {"engine": "postgres", **index}, "packs": [{"path": str(pack)}]}
    with pytest.raises(ConfigError) as caught:
        open_library(settings_for(tmp_path / "home", "hashing", **settings_data), tmp_path / "home")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_pack_never_published_to_postgres_is_one_line(
    tmp_path: Path, make_pack: Any, postgres_dsn: str
) -> None:
    pack = make_pack(GARDEN, name="garden")
    data = {"index": {"engine": "postgres", "dsn": fresh_database(postgres_dsn)}}
    with pytest.raises(EpMcpError, match="no version on PostgreSQL yet — publish one"):
        open_library(
            settings_for(tmp_path / "home", "hashing", packs=[{"path": str(pack)}], **data),
            tmp_path / "home",
        )


def _cli_config(tmp_path: Path, dsn: str) -> Path:
    config = tmp_path / "ep-mcp.yaml"
    config.write_text(
        f"embedding: {{provider: hashing}}\nindex: {{engine: postgres, dsn: '{dsn}'}}\n",
        encoding="utf-8",
    )
    return config


def test_the_cli_publishes_to_postgres_flips_current_and_keeps_the_newest(
    tmp_path: Path, make_pack: Any, postgres_dsn: str
) -> None:
    from click.testing import CliRunner

    from ep_mcp.cli import main

    pack: Path = make_pack(GARDEN, name="garden")
    dsn = fresh_database(postgres_dsn)
    config, out = _cli_config(tmp_path, dsn), tmp_path / "out"
    said = []
    for i in range(3):
        (pack / f"note{i}.md").write_text(f"# Note {i}\n\nThe note number {i}.\n")
        args = ["index", str(pack), "--out", str(out), "--to", "postgres", "--keep", "2"]
        result = CliRunner().invoke(main, [*args, "--config", str(config)])
        assert result.exit_code == 0, result.output
        said.append(result.output)
    assert "now current on PostgreSQL" in said[-1] and "dropped" in said[-1]
    with psycopg.connect(dsn) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM ep_mcp.versions")]
        current = conn.execute("SELECT version FROM ep_mcp.current").fetchone()[0]
        schemas = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'ep\\_v\\_%'"
        ).fetchone()[0]
    newest = artifact_current(out / "garden")
    assert current == newest and newest in versions and len(versions) == 2 and schemas == 2
    again = CliRunner().invoke(
        main, ["index", str(pack), "--out", str(out), "--to", "postgres", "--config", str(config)]
    )
    assert again.exit_code == 0 and "already loaded" in again.output


def artifact_current(folder: Path) -> str:
    from ep_mcp.index import artifact

    found = artifact.current_version(folder)
    assert found is not None
    return found.name


def test_the_cli_with_an_unreachable_dsn_fails_with_one_line_before_building(
    tmp_path: Path, make_pack: Any
) -> None:
    from click.testing import CliRunner

    from ep_mcp.cli import main

    pack: Path = make_pack(GARDEN, name="garden")
    config = _cli_config(tmp_path, "host=127.0.0.1 port=1 dbname=x connect_timeout=2")
    out = tmp_path / "out"
    args = ["index", str(pack), "--out", str(out), "--to", "postgres", "--config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "index.dsn: cannot connect to PostgreSQL" in result.output
    assert "Traceback" not in result.output and not (out / "garden").exists()
    no_out = CliRunner().invoke(main, ["index", str(pack), "--to", "postgres"])
    assert no_out.exit_code == 2 and "give --out DIR too" in no_out.output


def test_a_lexical_query_past_its_time_limit_answers_nothing_and_is_not_a_lost_server(
    garden: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ep_mcp.index import pgbm25

    store = garden["lib"].get("garden").store
    assert store.lexical_top(["tomatoes"], 10)
    slow = f"SELECT chunk_id, s FROM ({pgbm25.TOP_SQL}) AS q, pg_sleep(5) AS z"
    monkeypatch.setattr(pgbm25, "TOP_SQL", slow)  # the server's own timer cancels it
    assert store.lexical_top(["tomatoes"], 10, time_limit_ms=100) == []
    assert store.problems() == []
    monkeypatch.undo()
    assert store.lexical_top(["tomatoes"], 10)


def test_a_pack_served_from_its_path_follows_the_current_version_on_postgres(
    garden: dict[str, Any],
) -> None:
    data = {"packs": [{"path": str(garden["pack"])}]}
    index = {"engine": "postgres", "dsn": garden["dsn"]}
    lib = open_library(settings_for(garden["home"], "hashing", index=index, **data), garden["home"])
    try:
        watcher = ArtifactWatcher(lib, poll_s=0)
        assert watcher.poll() == []  # the current version is the one served
        (garden["pack"] / "zebra.md").write_text(f"# Zebras\n\nThe {NEW_WORD} grazes.\n")
        published = publish_pack(garden["pack"], garden["home"], garden["out"], "hashing")
        load(garden["dsn"], published, garden["home"], "hashing")
        assert watcher.poll() == ["garden"]
        rt = lib.get("garden")
        assert rt.store.version == published.manifest.version
        assert any(NEW_WORD in h.text for h in rt.search(SearchRequest(NEW_WORD, k=3)).hits)
    finally:
        lib.close()


def test_packs_names_the_version_a_pack_served_from_its_path_serves_on_postgres(
    garden: dict[str, Any],
) -> None:
    """`GET /packs`' `artifact_version` is the version served from PostgreSQL, not None for a
    pack configured by its path (the watcher's log lines said it; the listing did not)."""
    import anyio
    import httpx2

    from ep_mcp.serve.app import open_context
    from ep_mcp.serve.auth import KeyRing
    from ep_mcp.serve.http.app import create_app

    data = {"packs": [{"path": str(garden["pack"])}]}
    index = {"engine": "postgres", "dsn": garden["dsn"]}
    settings = settings_for(garden["home"], "hashing", index=index, **data)
    serve, _ = open_context(settings, build=False, words_first=False, child_env=os.environ)
    served = serve.library.get("garden").store.version
    assert served is not None
    app = create_app(serve, settings.server, KeyRing())

    async def go() -> dict[str, Any]:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                r = await c.get("/packs")
                assert r.status_code == 200, r.text
                return dict(r.json())

    try:
        listed = {p["slug"]: p["artifact_version"] for p in anyio.run(go)["packs"]}
    finally:
        serve.library.close()
    assert listed == {"garden": served}


def test_a_closed_version_opens_no_new_connection_and_says_so_in_one_line(
    garden: dict[str, Any],
) -> None:
    """A query that reaches a closed version (retired by a swap, or at shutdown) is one line,
    as on SQLite, not a new connection that nothing would ever close."""
    from ep_mcp.index.pgindex import PgIndex

    settings = settings_for(
        garden["home"], "hashing", index={"engine": "postgres", "dsn": garden["dsn"]}
    )
    index = PgIndex.open(settings.index, "garden")
    assert index.counts()["chunks"] > 0  # opened: this thread has its connection
    index.close()

    def backends() -> int:
        with psycopg.connect(garden["dsn"]) as conn:
            return int(
                conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                ).fetchone()[0]
            )

    before = backends()
    with pytest.raises(IndexUnavailableError, match=r"is closed .* ask again"):
        index.chunks_by_ids([1])
    assert backends() == before


@pytest.mark.parametrize(
    "damage",
    [
        "DELETE FROM {s}.meta WHERE key = 'pg_stats'",
        "UPDATE {s}.meta SET value = '{{\"rows\": 1}}' WHERE key = 'pg_stats'",
    ],
)
def test_a_version_without_its_load_statistics_is_one_line_naming_the_republish(
    tmp_path: Path, make_pack: Any, postgres_dsn: str, damage: str
) -> None:
    """A version loaded by an ep-mcp that wrote no `pg_stats` (or a damaged one) is refused
    with the fix, not a KeyError."""
    from ep_mcp.errors import IndexBuildError
    from ep_mcp.index.pgindex import PgIndex

    home = tmp_path / "home"
    dsn = fresh_database(postgres_dsn)
    loaded = load(
        dsn,
        publish_pack(make_pack(GARDEN, name="garden"), home, tmp_path / "out", "hashing"),
        home,
        "hashing",
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(damage.format(s=f'"{loaded.schema}"'))
    settings = settings_for(home, "hashing", index={"engine": "postgres", "dsn": dsn})
    with pytest.raises(IndexBuildError) as err:
        PgIndex.open(settings.index, "garden")
    message = str(err.value)
    assert "\n" not in message and "pg_stats" in message
    assert "republish" in message and "--to postgres" in message


def test_the_load_builds_hnsw_with_the_configured_memory(
    tmp_path: Path, make_pack: Any, postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    published = publish_pack(make_pack(GARDEN, name="garden"), home, tmp_path / "out", "hashing")
    pg = settings_for(
        home,
        "hashing",
        index={
            "engine": "postgres",
            "dsn": fresh_database(postgres_dsn),
            "pg_build_memory": "96MB",
        },
    )
    with caplog.at_level("INFO", logger="ep_mcp.index.pgload"):
        loaded = publish_version(pg.index, published.version_dir)
    assert loaded.vectors > 0
    assert f"building the HNSW index of {loaded.vectors} vectors with 96 MB" in caplog.text
