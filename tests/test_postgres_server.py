"""The throwaway PostgreSQL of tests/postgres_server.py: pgvector works in it (an HNSW index
too), extra databases are fresh and go away, and with nothing installed the skip says what is
missing and how to get it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from postgres_server import HOW, PG_BIN_ENV, PgCluster, PgError, PgInstall, find_postgres


def test_the_dsn_names_a_fresh_database_where_pgvector_answers(
    postgres_dsn: str, postgres_cluster: PgCluster
) -> None:
    assert postgres_dsn.startswith("host=127.0.0.1 port=")
    assert postgres_dsn.endswith("dbname=ep_test")
    version = postgres_cluster.sql(
        "ep_test", "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    )
    assert version.split(".")[0].isdigit(), version
    distance = "SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector, '[3,4]'::vector <-> '[0,0]'::vector"
    assert postgres_cluster.sql("ep_test", distance) == "1|5"


def test_an_hnsw_index_is_built_and_used_on_a_tiny_table(
    postgres_database: Callable[[], str], postgres_cluster: PgCluster
) -> None:
    db = postgres_database().rsplit("dbname=", 1)[1]
    postgres_cluster.sql(db, "CREATE TABLE items (id int PRIMARY KEY, embedding vector(3))")
    postgres_cluster.sql(
        db,
        "INSERT INTO items SELECT i, ARRAY[cos(i), sin(i), i % 7]::vector"
        " FROM generate_series(1, 200) AS i",
    )
    postgres_cluster.sql(
        db, "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)"
    )
    nearest = (
        "SELECT id FROM items"
        " ORDER BY embedding <=> (SELECT embedding FROM items WHERE id = 42) LIMIT 1"
    )
    plan = postgres_cluster.sql(db, f"SET enable_seqscan = off; EXPLAIN {nearest}")
    assert "items_hnsw" in plan, plan
    assert postgres_cluster.sql(db, f"SET enable_seqscan = off; {nearest}") == "42"


def test_each_extra_database_is_fresh_and_dropped_after_the_test(
    postgres_database: Callable[[], str], postgres_cluster: PgCluster
) -> None:
    first, second = postgres_database(), postgres_database()
    assert first != second
    first_db, second_db = (dsn.rsplit("dbname=", 1)[1] for dsn in (first, second))
    postgres_cluster.sql(first_db, "CREATE TABLE only_here (x int)")
    tables = "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'"
    assert postgres_cluster.sql(second_db, tables) == "0"
    for db in (first_db, second_db):
        assert (
            postgres_cluster.sql(db, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
            == "1"
        )
    postgres_cluster.drop_database(second_db)
    listed = postgres_cluster.sql("postgres", "SELECT datname FROM pg_database").split()
    assert first_db in listed and second_db not in listed


def test_with_nothing_installed_the_reason_names_each_place_and_how_to_get_one(
    tmp_path: Path,
) -> None:
    reason = find_postgres({}, system_roots=(tmp_path / "none",), pgserver=False)
    assert isinstance(reason, str)
    assert "\n" not in reason
    assert f"{PG_BIN_ENV} is not set" in reason
    assert "the pgserver wheel is not installed" in reason
    assert f"no system PostgreSQL under {tmp_path / 'none'}" in reason
    assert reason.endswith(HOW)
    assert "scripts/install_pgvector.sh" in HOW and "pip install pgserver" in HOW


def test_an_ep_pg_bin_without_a_server_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    reason = find_postgres({PG_BIN_ENV: str(tmp_path)}, pgserver=False)
    assert reason == f"{PG_BIN_ENV}={tmp_path} has no initdb, pg_ctl, postgres, psql — {HOW}"


def _fake_server(bindir: Path) -> None:
    bindir.mkdir(parents=True)
    for tool in ("initdb", "pg_ctl", "postgres", "psql"):
        (bindir / tool).write_text("#!/bin/sh\nexit 1\n")
        os.chmod(bindir / tool, 0o755)


def test_a_system_postgres_without_pgvector_is_passed_over_and_one_with_it_chosen(
    tmp_path: Path,
) -> None:
    root = tmp_path / "usr" / "lib" / "postgresql"
    _fake_server(root / "15" / "bin")
    reason = find_postgres({}, system_roots=(root,), pgserver=False)
    assert isinstance(reason, str)
    assert f"the system's PostgreSQL 15 ({root / '15'}) has no pgvector" in reason
    # Debian's layout: the extensions of /usr/lib/postgresql/15 are in /usr/share/postgresql/15
    extensions = tmp_path / "usr" / "share" / "postgresql" / "15" / "extension"
    extensions.mkdir(parents=True)
    (extensions / "vector.control").write_text("default_version = '0.8.0'\n")
    found = find_postgres({}, system_roots=(root,), pgserver=False)
    assert found == PgInstall(root / "15" / "bin", "the system's PostgreSQL 15")


def test_an_ep_pg_bin_whose_server_lacks_pgvector_says_so(tmp_path: Path) -> None:
    _fake_server(tmp_path / "bin")
    reason = find_postgres({PG_BIN_ENV: str(tmp_path / "bin")}, pgserver=False)
    assert reason == (
        f"{PG_BIN_ENV}={tmp_path / 'bin'}: that server has no pgvector (no vector.control) — {HOW}"
    )


def test_a_read_replica_follows_the_primary_and_a_dsn_can_prefer_it(
    postgres_database: Callable[[], str], postgres_cluster: PgCluster
) -> None:
    """The primary + read replica of docs/deploy.md: the replica streams the primary's WAL,
    refuses writes, and a two-host DSN picks it (prefer-standby) or the primary (read-write)."""
    replica = postgres_cluster.start_replica()
    try:
        db = postgres_database().rsplit("dbname=", 1)[1]
        postgres_cluster.sql(db, "CREATE TABLE published (version text)")
        postgres_cluster.sql(db, "INSERT INTO published VALUES ('v2')")
        for _ in range(600):  # a bounded poll: replay takes milliseconds, a loaded box longer
            try:
                if replica.sql(db, "SELECT version FROM published") == "v2":
                    break
            except PgError:  # the database or table has not been replayed yet
                pass
            time.sleep(0.1)
        assert replica.sql(db, "SELECT version FROM published") == "v2"
        assert replica.sql(db, "SELECT pg_is_in_recovery()") == "t"
        with pytest.raises(PgError, match="read-only transaction"):
            replica.sql(db, "INSERT INTO published VALUES ('v3')")
        both = (
            f"host=127.0.0.1,127.0.0.1 port={replica.port},{postgres_cluster.port} "
            f"user=postgres dbname={db}"
        )
        for attrs, standby in (("prefer-standby", "t"), ("read-write", "f")):
            got = replica.sql_dsn(
                f"{both} target_session_attrs={attrs}", "SELECT pg_is_in_recovery()"
            )
            assert got == standby, attrs
    finally:
        replica.stop()


def _install(prefix: Path) -> subprocess.CompletedProcess[str]:
    script = Path(__file__).resolve().parents[1] / "scripts" / "install_pgvector.sh"
    return subprocess.run(
        ["bash", str(script), str(prefix)], capture_output=True, text=True, timeout=60
    )


def test_the_install_script_reuses_a_finished_build_it_owns(tmp_path: Path) -> None:
    prefix = tmp_path / "pg"
    prefix.mkdir(mode=0o755)
    os.chmod(prefix, 0o755)
    (prefix / ".ep-mcp-pgvector").write_text("PostgreSQL 15.20 + pgvector 0.8.0\n")
    done = _install(prefix)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(prefix / "usr/lib/postgresql/15/bin")
    assert "reusing PostgreSQL 15.20 + pgvector 0.8.0" in done.stderr


def test_the_install_script_never_reuses_a_folder_others_may_write_or_a_half_build(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / ".ep-mcp-pgvector").write_text("PostgreSQL 15.20 + pgvector 0.8.0\n")
    os.chmod(shared, 0o777)  # anyone could have put a server there
    half = tmp_path / "half"
    half.mkdir()  # no marker: an interrupted or foreign folder
    for prefix in (shared, half):
        done = _install(prefix)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.strip() == (
            f"install_pgvector: {prefix} exists but is not a finished build: remove it first"
        )
