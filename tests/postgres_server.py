"""A throwaway PostgreSQL with pgvector for the postgres engine's tests (fixture ``postgres_dsn``).

Minimal stand-in (branch ``pg``): the ``pginfra`` branch brings the real one at this path.
``EP_MCP_TEST_POSTGRES_DSN`` names a server to use (a fresh database is made on it); else a
cluster is started from the ``pgserver`` wheel's binaries (PostgreSQL 16 + pgvector) on a free
port of 127.0.0.1 as an unprivileged user, and stopped at the end. Without either the tests
skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "EP_MCP_TEST_POSTGRES_DSN"


def _bin_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pgserver")  # found, not imported: it warns on import
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "initdb").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fresh_database(admin_dsn: str) -> str:
    import psycopg

    name = f"ep_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = f"{admin_dsn} dbname={name}"
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return dsn


def _as_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "nobody", "--", *cmd]


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[dev]')")
    given = os.environ.get(ENV)
    if given:
        yield _fresh_database(given)
        return
    bindir = _bin_dir()
    if bindir is None:
        pytest.skip(f"no PostgreSQL with pgvector: set {ENV} or install the pgserver wheel")
    root = Path(tempfile.mkdtemp(prefix="ep-pg-"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
    data, port = root / "data", _free_port()
    env = {**os.environ, "LC_ALL": "C"}
    try:
        subprocess.run(
            _as_user([str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres",
                      "-E", "UTF8", "--locale=C"]),
            check=True, capture_output=True, timeout=120, env=env, cwd=root,
        )  # fmt: skip
        opts = f"-c listen_addresses=127.0.0.1 -c port={port} -c fsync=off -k {root}"
        subprocess.run(
            _as_user([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"),
                      "-o", opts, "-w", "-t", "120", "start"]),
            check=True, capture_output=True, timeout=150, env=env, cwd=root,
        )  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not start PostgreSQL from {bindir}: {exc}")
    try:
        yield _fresh_database(f"host=127.0.0.1 port={port} user=postgres")
    finally:
        subprocess.run(
            _as_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True, timeout=60, env=env, cwd=root,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
