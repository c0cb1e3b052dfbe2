"""A throwaway PostgreSQL with pgvector for the tests, on 127.0.0.1 and a free port.

Fixtures (registered from tests/conftest.py through ``pytest_plugins``):

- ``postgres_cluster`` (session): the running cluster, a `PgCluster` (``.dsn(db)``,
  ``.sql(db, q)``, ``.create_database()``, ``.drop_database(db)``, ``.start_replica()`` — a
  streaming read replica on its own port);
- ``postgres_dsn`` (session): a libpq DSN of a fresh database where ``CREATE EXTENSION
  vector`` worked;
- ``postgres_database`` (per test): a factory of more fresh databases (each with ``vector``),
  dropped after the test.

PostgreSQL + pgvector is looked for in this order: ``EP_PG_BIN`` (a bin folder with initdb,
pg_ctl, postgres and psql whose server has pgvector: what ``.ci/run`` sets from
scripts/install_pgvector.sh), the ``pgserver`` wheel's bundled server, then the system's
PostgreSQL (``/usr/lib/postgresql/<version>``) if pgvector is installed there. With none of
them the tests skip with a reason that says what is missing and how to get it; an
``EP_PG_BIN`` that does not hold a usable server fails them (it was asked for).

The cluster is initialised with ``--auth=trust`` and runs with ``fsync=off``; run as root (CI
is), the cluster belongs to ``nobody``, since initdb refuses root. It is stopped and removed at
the end of the run.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BIN_ENV = "EP_PG_BIN"
SYSTEM_ROOTS = (Path("/usr/lib/postgresql"),)
SERVER_TOOLS = ("initdb", "pg_ctl", "postgres", "psql")
UNPRIVILEGED = "nobody"  # the cluster's owner when the tests run as root
HOW = (
    "to get one: `bash scripts/install_pgvector.sh /var/tmp/ep-mcp-pgvector` (Debian 12, root or "
    f"sudo; it builds pgvector into a copy of PostgreSQL 15) and set {PG_BIN_ENV} to the folder it "
    "prints, or `pip install pgserver`"
)
_WAIT_S = 300  # a bound on pg_ctl's waits, far above a start on a loaded machine (seconds)


@dataclass(frozen=True)
class PgInstall:
    """A PostgreSQL bin folder whose server has pgvector, and where it was found."""

    bindir: Path
    origin: str


def _missing_tools(bindir: Path) -> list[str]:
    return [t for t in SERVER_TOOLS if not os.access(bindir / t, os.X_OK)]


def _extension_dirs(bindir: Path) -> list[Path]:
    """Where the server in ``bindir`` keeps its extensions: what its pg_config says, else the
    usual layouts (``<root>/share/…`` and Debian's ``/usr/share/postgresql/<version>``)."""
    dirs: list[Path] = []
    pg_config = bindir / "pg_config"
    if os.access(pg_config, os.X_OK):
        try:
            out = subprocess.run(
                [str(pg_config), "--sharedir"], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.SubprocessError):
            out = None
        if out is not None and out.returncode == 0 and out.stdout.strip():
            dirs.append(Path(out.stdout.strip()) / "extension")
    root = bindir.parent
    dirs += [root / "share" / "extension", root / "share" / "postgresql" / "extension"]
    if len(bindir.parents) > 3:  # <prefix>/lib/postgresql/<version>/bin
        dirs.append(bindir.parents[3] / "share" / "postgresql" / root.name / "extension")
    return dirs


def _has_pgvector(bindir: Path) -> bool:
    return any((d / "vector.control").is_file() for d in _extension_dirs(bindir))


def _pgserver_bindir() -> Path | None:
    """The bin folder inside the ``pgserver`` wheel, found without importing it (imported as
    root, it adds a user and changes folder modes)."""
    try:
        spec = importlib.util.find_spec("pgserver")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "pginstall" / "bin"


def find_postgres(
    env: Mapping[str, str],
    *,
    system_roots: Sequence[Path] = SYSTEM_ROOTS,
    pgserver: bool = True,
) -> PgInstall | str:
    """The PostgreSQL + pgvector to test against, or why there is none (one line: each place
    looked at and what it lacked, then how to get one)."""
    named = env.get(PG_BIN_ENV, "")
    if named:
        bindir = Path(named)
        lacking = _missing_tools(bindir)
        if lacking:
            return f"{PG_BIN_ENV}={named} has no {', '.join(lacking)} — {HOW}"
        if not _has_pgvector(bindir):
            return f"{PG_BIN_ENV}={named}: that server has no pgvector (no vector.control) — {HOW}"
        return PgInstall(bindir, PG_BIN_ENV)
    missing = [f"{PG_BIN_ENV} is not set"]
    wheel = _pgserver_bindir() if pgserver else None
    if wheel is None:
        missing.append("the pgserver wheel is not installed")
    elif _missing_tools(wheel) or not _has_pgvector(wheel):
        missing.append(f"the pgserver wheel at {wheel} has no usable server with pgvector")
    else:
        return PgInstall(wheel, "the pgserver wheel")
    versions = sorted(
        (p for root in system_roots if root.is_dir() for p in root.iterdir() if p.is_dir()),
        key=lambda p: (not p.name.isdigit(), -int(p.name) if p.name.isdigit() else 0, p.name),
    )
    for version in versions:
        bindir = version / "bin"
        if _missing_tools(bindir):
            missing.append(f"{version} has no {', '.join(_missing_tools(bindir))}")
        elif not _has_pgvector(bindir):
            missing.append(f"the system's PostgreSQL {version.name} ({version}) has no pgvector")
        else:
            return PgInstall(bindir, f"the system's PostgreSQL {version.name}")
    if not versions:
        missing.append(f"no system PostgreSQL under {', '.join(map(str, system_roots))}")
    return f"no PostgreSQL with pgvector: {'; '.join(missing)} — {HOW}"


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can reach ``path`` (every folder up to it searchable)."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgError(AssertionError):
    """A command against the test cluster failed (its stderr says why)."""


class PgCluster:
    """A running throwaway cluster: superuser ``postgres``, trust auth, TCP on 127.0.0.1 only."""

    def __init__(self, install: PgInstall, root: Path, port: int, owner: str | None) -> None:
        self.install = install
        self.root = root
        self.data = root / "data"
        self.port = port
        self.owner = owner
        self._names = itertools.count(1)

    @classmethod
    def start(cls, install: PgInstall, *, primary: PgCluster | None = None) -> PgCluster:
        """A new cluster; with ``primary``, a streaming read replica of it (pg_basebackup -R:
        a hot standby that follows the primary's WAL and refuses writes)."""
        owner = UNPRIVILEGED if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="ep-pg-"))
        try:
            if owner is not None:
                if primary is None:
                    install = _reachable_copy(install, root)
                os.chown(root, pwd.getpwnam(owner).pw_uid, -1)
            cluster = cls(install, root, 0, owner)
            if primary is None:
                cluster._run(
                    "initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust",
                    "--encoding=UTF8", "--locale=C", "--no-sync",
                )  # fmt: skip
            else:  # initdb's pg_hba.conf lets 127.0.0.1 replicate (trust)
                cluster._run(
                    "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U",
                    "postgres", "-D", str(cluster.data), "-R", "-X", "stream", "--no-sync",
                )  # fmt: skip
            for _ in range(3):  # a free port can be taken between the probe and the bind
                cluster.port = free_port()
                if cluster._pg_ctl_start():
                    return cluster
            log = (root / "server.log").read_text(errors="replace")[-2000:]
            raise PgError(f"PostgreSQL did not start on 127.0.0.1: {log}")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def _env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LC_ALL": "C",
        }

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.install.bindir / tool), *args],
            capture_output=True,
            text=True,
            env=self._env(),
            user=self.owner,
            cwd=self.root,
            timeout=_WAIT_S,
        )
        if done.returncode != 0 and tool != "pg_ctl":
            raise PgError(f"{tool} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done

    def _pg_ctl_start(self) -> bool:
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off "
            f"-c unix_socket_directories={self.root}"
        )
        done = self._run(
            "pg_ctl", "start", "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-w", "-t", str(_WAIT_S), "-o", options,
        )  # fmt: skip
        return done.returncode == 0

    def start_replica(self) -> PgCluster:
        """A streaming read replica of this cluster on its own port (stop it when done)."""
        if not os.access(self.install.bindir / "pg_basebackup", os.X_OK):
            pytest.skip(f"no pg_basebackup in {self.install.bindir}: no read replica here")
        return PgCluster.start(self.install, primary=self)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def sql(self, dbname: str, query: str) -> str:
        """Run ``query`` with psql in ``dbname``; its unaligned, tuples-only output."""
        return self.sql_dsn(self.dsn(dbname), query)

    def sql_dsn(self, dsn: str, query: str) -> str:
        """Run ``query`` with psql connected by ``dsn`` (any libpq DSN)."""
        done = subprocess.run(
            [str(self.install.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-d", dsn, "-c", query],
            capture_output=True, text=True, env=self._env(), timeout=_WAIT_S,
        )  # fmt: skip
        if done.returncode != 0:
            raise PgError(f"psql ({dsn}) failed: {done.stderr.strip()[-2000:]}")
        return done.stdout.strip()

    def create_database(self, name: str | None = None) -> str:
        """A fresh database (``ep_<n>`` unless named) with the vector extension; its DSN."""
        name = name or f"ep_{next(self._names)}"
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name {name!r}: letters, digits and _ only")
        self.sql("postgres", f'CREATE DATABASE "{name}"')
        self.sql(name, "CREATE EXTENSION IF NOT EXISTS vector")
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        self.sql("postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            done = self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")
            if done.returncode != 0:
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _reachable_copy(install: PgInstall, root: Path) -> PgInstall:
    """``install`` itself if the unprivileged owner can run it; else (the pgserver wheel inside
    a root-only virtual environment) a copy of its install folder beside the cluster."""
    if _reachable_by_others(install.bindir):
        return install
    if install.origin != "the pgserver wheel":
        raise PgError(
            f"{install.bindir} is not reachable by {UNPRIVILEGED} (a folder above it is not "
            f"searchable by others), and initdb refuses root — put it in a world-readable folder"
        )
    os.chmod(root, 0o755)
    # the wheel's binaries find their libraries at $ORIGIN/../../../pgserver.libs: copy both
    package = install.bindir.parents[1]  # site-packages/pgserver
    for folder in (package, package.with_name("pgserver.libs")):
        if folder.is_dir():
            shutil.copytree(folder, root / "wheel" / folder.name, symlinks=True)
    return PgInstall(root / "wheel" / package.name / "pginstall" / "bin", install.origin)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PgCluster]:
    found = find_postgres(os.environ)
    if isinstance(found, str):
        if os.environ.get(PG_BIN_ENV):
            pytest.fail(found)  # asked for by name: a broken one is an error, not a skip
        pytest.skip(found)
    cluster = PgCluster.start(found)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_dsn(postgres_cluster: PgCluster) -> str:
    """A libpq DSN of a fresh database of the run's cluster, ``vector`` created in it."""
    return postgres_cluster.create_database("ep_test")


@pytest.fixture
def postgres_database(postgres_cluster: PgCluster) -> Iterator[Callable[[], str]]:
    """``make()`` → the DSN of another fresh database (with ``vector``); dropped after the test."""
    made: list[str] = []

    def make() -> str:
        dsn = postgres_cluster.create_database()
        made.append(dsn.rsplit("dbname=", 1)[1])
        return dsn

    yield make
    for name in made:
        postgres_cluster.drop_database(name)
