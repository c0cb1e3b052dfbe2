"""Publish a built index to PostgreSQL + pgvector: one schema per pack version, flipped current.

SQLite stays the build format (docs/SCALING.md says why): ``ep-mcp index PACK --out DIR --to
postgres`` publishes the artifact as ever, then loads its ``index.db`` here. In one
transaction: a fresh schema ``ep_v_<hash of slug and version>`` gets the files, chunks and
embedding cache (COPY), the vectors — each chunk's first embedding window in ``vectors``, the
later windows of long chunks in ``chunk_windows``, as in SQLite — (binary COPY into
``vector(dim)``), FTS5's own postings
(``fts5vocab`` of type ``instance``: see ``pgbm25``) with each row's length and each term's row
count, then its indexes (HNSW cosine on the vectors and on the later windows, b-trees on the
postings); the vectors and later windows were checked whole before
(``artifact.vector_damage``, by ``artifact.check`` or ``load_into_postgres``: sizes, finite
values, 32-bit ids, the per-chunk window limit), a value PostgreSQL still refuses rolls the
load back with one line, the row counts are checked against the manifest and the SQLite file,
and the version is recorded with its counts (``meta.pg_stats``; a version loaded before
windows has no ``windows`` there, and no ``chunk_windows`` table: it is served as it always
was). A second, short transaction makes it the pack's current version and drops all but the
newest ``keep`` (the current one always stays). Servers poll ``ep_mcp.current``
(``PgIndex.current_version``). Nothing a pack brings names a schema: the name is a hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from ep_mcp import __version__
from ep_mcp.config.model import IndexSettings, Settings, memory_mb
from ep_mcp.index.artifact import (
    INDEX,
    ArtifactError,
    Manifest,
    check,
    file_sha256,
    index_features,
    schema_version,
    vector_damage,
)
from ep_mcp.index.pgconnect import connect, psycopg_module, resolve_dsn
from ep_mcp.index.store import Store
from ep_mcp.index.vectorcheck import recorded_dimension

logger = logging.getLogger(__name__)

CONTROL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS ep_mcp;
CREATE TABLE IF NOT EXISTS ep_mcp.versions(
    slug text NOT NULL, version text NOT NULL, schema_name text NOT NULL UNIQUE,
    manifest jsonb NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slug, version));
CREATE TABLE IF NOT EXISTS ep_mcp.current(
    slug text PRIMARY KEY, version text NOT NULL, flipped_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (slug, version) REFERENCES ep_mcp.versions(slug, version));
"""

TABLES = """
CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE files(path text PRIMARY KEY, file_hash text NOT NULL, sidecar_hash text,
    content_hash text NOT NULL, title text NOT NULL, type text NOT NULL, tags text NOT NULL,
    doc_id text, info text NOT NULL);
CREATE TABLE chunks(id integer PRIMARY KEY, path text NOT NULL, chunk_index integer NOT NULL,
    heading_path text NOT NULL, line_start integer NOT NULL, line_end integer NOT NULL,
    byte_start integer NOT NULL, byte_end integer NOT NULL, text text NOT NULL,
    context_prefix text NOT NULL, span_hash text NOT NULL, section text,
    tokens integer NOT NULL);
CREATE TABLE embed_cache(key text PRIMARY KEY, vec bytea NOT NULL);
CREATE TABLE postings(term text NOT NULL, chunk_id integer NOT NULL, tf0 integer NOT NULL,
    tf1 integer NOT NULL, tf2 integer NOT NULL);
CREATE TABLE doclen(chunk_id integer PRIMARY KEY, len integer NOT NULL);
CREATE TABLE terms(term text PRIMARY KEY, df integer NOT NULL);
"""

FILE_COLUMNS = "path, file_hash, sidecar_hash, content_hash, title, type, tags, doc_id, info"
CHUNK_COLUMNS = (
    "id, path, chunk_index, heading_path, line_start, line_end, byte_start, byte_end, text, "
    "context_prefix, span_hash, section, tokens"
)
# `index.pg_build_memory: auto`: the HNSW graph held in memory while it is built (with
# PostgreSQL's 64 MB default it spills to disk and a 100k build ran past 16 min): about
# 4·dim + 512 bytes a vector (~2 KB at 384-d), a quarter more for headroom, within these
AUTO_BUILD_MB = (64, 2048)


def schema_name(slug: str, version: str) -> str:
    """The schema of one pack version: a hash, so no slug or version text reaches SQL."""
    digest = hashlib.sha256(f"{slug}\0{version}".encode()).hexdigest()[:24]
    return f"ep_v_{digest}"


@dataclass(frozen=True)
class Loaded:
    """What a load did."""

    slug: str
    version: str
    schema: str
    chunks: int
    vectors: int
    postings: int
    seconds: float
    already: bool  # the version was loaded before: only the flip ran
    removed: tuple[str, ...] = ()
    windows: int = 0  # later embedding windows loaded (-1: not now)


def publish_version(settings: IndexSettings, version_dir: Path, keep: int = 3) -> Loaded:
    """Load an artifact version (checked first) and make it the pack's current version."""
    manifest = check(version_dir)
    return load_index(settings, version_dir / INDEX, manifest, keep)


def load_index(settings: IndexSettings, index: Path, manifest: Manifest, keep: int = 3) -> Loaded:
    """Load the SQLite ``index`` as ``manifest``'s version (unless it is loaded already) and
    make it the pack's current version; ``manifest.chunks`` is checked against the rows. The
    caller has checked its vectors (``artifact.vector_damage``): ``publish_version`` through
    ``artifact.check``, ``load_into_postgres`` itself."""
    started = time.perf_counter()
    with connect(resolve_dsn(settings), "index.dsn") as conn:
        conn.execute(CONTROL)
        schema = schema_name(manifest.slug, manifest.version)
        row = conn.execute(
            "SELECT schema_name FROM ep_mcp.versions WHERE slug=%s AND version=%s",
            (manifest.slug, manifest.version),
        ).fetchone()
        loaded_before = (manifest.chunks, -1, -1, -1)  # chunks, vectors, postings, windows
        counts = (
            _load(conn, index, manifest, schema, settings.pg_build_memory)
            if row is None
            else loaded_before
        )
        removed = flip(conn, manifest.slug, manifest.version, keep)
    chunks, vectors, postings, windows = counts
    return Loaded(
        manifest.slug,
        manifest.version,
        schema,
        chunks,
        vectors,
        postings,
        time.perf_counter() - started,
        already=row is not None,
        removed=tuple(removed),
        windows=windows,
    )


def flip(conn: Any, slug: str, version: str, keep: int) -> list[str]:
    """Make ``version`` current and drop all but the newest ``keep`` versions, in one
    transaction; returns the versions dropped."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO ep_mcp.current(slug, version) VALUES(%s, %s) ON CONFLICT(slug) "
            "DO UPDATE SET version=excluded.version, flipped_at=now()",
            (slug, version),
        )
        rows = conn.execute(
            "SELECT version, schema_name FROM ep_mcp.versions WHERE slug=%s "
            "ORDER BY loaded_at DESC, version DESC",
            (slug,),
        ).fetchall()
        old = [(v, s) for i, (v, s) in enumerate(rows) if i >= keep and v != version]
        for v, s in old:
            conn.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')
            conn.execute("DELETE FROM ep_mcp.versions WHERE slug=%s AND version=%s", (slug, v))
    return [v for v, _ in old]


def _open_sqlite(index: Path) -> apsw.Connection:
    """The artifact's index, read-only (a version is never written again)."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    return apsw.Connection(f"file:{index}?immutable=1", flags=flags)


def build_memory_mb(setting: str, vectors: int, dim: int) -> int:
    """`maintenance_work_mem` (MB) of the HNSW build of ``vectors`` of ``dim``: the
    configured size, or for `auto` the graph's estimate within `AUTO_BUILD_MB`."""
    explicit = memory_mb(setting)
    if explicit is not None:
        return explicit
    need = math.ceil(vectors * (4 * dim + 512) * 1.25 / 2**20)
    return max(AUTO_BUILD_MB[0], min(AUTO_BUILD_MB[1], need))


def _load(
    conn: Any, index: Path, manifest: Manifest, schema: str, build_memory: str = "auto"
) -> tuple[int, int, int, int]:
    """Copy one version into ``schema`` and check it, in one transaction: (chunks, vectors,
    postings, later windows) loaded."""
    src = _open_sqlite(index)
    try:
        features = _features(src)
        dim = recorded_dimension(features) or 0  # checked by the caller (vector_damage)
        has_windows = bool(dim) and _has_sqlite(src, "chunk_windows")  # none before schema 3
        with _refusing_bad_data(manifest), conn.transaction():
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # a load that died
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(f'SET LOCAL search_path TO "{schema}", public')
            conn.execute(TABLES)
            if dim:
                conn.execute(
                    "CREATE TABLE vectors(chunk_id integer PRIMARY KEY, "
                    f"vec vector({dim}) NOT NULL)"
                )
                conn.execute(
                    "CREATE TABLE chunk_windows(id integer PRIMARY KEY, chunk_id integer NOT NULL, "
                    f"position integer NOT NULL, vec vector({dim}) NOT NULL, "
                    "UNIQUE (chunk_id, position))"
                )
            _copy_rows(conn, "meta", "key, value", src.execute("SELECT key, value FROM meta"))
            _copy_rows(
                conn, "files", FILE_COLUMNS, src.execute(f"SELECT {FILE_COLUMNS} FROM files")
            )
            _copy_rows(
                conn, "chunks", CHUNK_COLUMNS, src.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks")
            )
            _copy_rows(
                conn, "embed_cache", "key, vec", src.execute("SELECT key, vec FROM embed_cache")
            )
            vectors = _copy_vectors(conn, src, dim) if dim else 0
            windows = _copy_windows(conn, src, dim) if has_windows else 0
            postings = _copy_postings(conn, src)
            conn.execute(
                "INSERT INTO doclen SELECT chunk_id, sum(tf0 + tf1 + tf2) FROM postings "
                "GROUP BY chunk_id"
            )
            conn.execute("INSERT INTO terms SELECT term, count(*) FROM postings GROUP BY term")
            conn.execute("CREATE INDEX postings_term ON postings(term)")
            conn.execute("CREATE INDEX chunks_path ON chunks(path)")
            if dim:  # the graphs built in memory (pgvector's default 64 MB spills to disk)
                _build_hnsw(conn, "vectors", vectors, dim, build_memory, manifest.slug)
            if windows:
                _build_hnsw(conn, "chunk_windows", windows, dim, build_memory, manifest.slug)
            pending = _one(src, "SELECT count(*) FROM pending_vectors")
            chunks = _one(conn, "SELECT count(*) FROM chunks")
            _check_counts(conn, src, manifest, chunks, vectors, windows if has_windows else None)
            total = _one(conn, "SELECT coalesce(sum(len), 0) FROM doclen")
            stats = {
                "rows": chunks,
                "tokens": total,
                "pending": pending,
                "vectors": vectors,
                "windows": windows,
            }
            conn.execute("INSERT INTO meta VALUES('pg_stats', %s)", (json.dumps(stats),))
            conn.execute(
                "INSERT INTO ep_mcp.versions(slug, version, schema_name, manifest) "
                "VALUES(%s, %s, %s, %s)",
                (manifest.slug, manifest.version, schema, json.dumps(manifest.to_dict())),
            )
        conn.execute(f'ANALYZE "{schema}".postings, "{schema}".chunks')
    finally:
        src.close()
    logger.info("pack %s: version %s loaded into %s", manifest.slug, manifest.version, schema)
    return chunks, vectors, postings, windows


def _build_hnsw(conn: Any, table: str, rows: int, dim: int, setting: str, slug: str) -> None:
    """The HNSW (cosine) index of ``table``'s vectors, built with `build_memory_mb`."""
    build_mb = build_memory_mb(setting, rows, dim)
    what = "vectors" if table == "vectors" else "later windows"
    logger.info("pack %s: building the HNSW index of %d %s with %d MB", slug, rows, what, build_mb)
    conn.execute(f"SET LOCAL maintenance_work_mem = '{int(build_mb)}MB'")
    conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (vec vector_cosine_ops)")


def _has_sqlite(src: apsw.Connection, table: str) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"
    return bool(src.execute(sql, (table,)).fetchall())


@contextlib.contextmanager
def _refusing_bad_data(manifest: Manifest) -> Iterator[None]:
    """A value PostgreSQL refuses (psycopg's ``DataError``: a number out of range, a text it
    cannot take): the transaction rolled back, one line instead of a traceback."""
    psycopg = psycopg_module()
    try:
        yield
    except psycopg.DataError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ArtifactError(
            f"version {manifest.version} of pack '{manifest.slug}' holds a value PostgreSQL "
            f"refuses ({first}) — nothing was published; build the pack again and publish it"
        ) from None


def _features(src: apsw.Connection) -> dict[str, Any]:
    rows = src.execute("SELECT value FROM meta WHERE key='index_features'").fetchall()
    return dict(json.loads(str(rows[0][0]))) if rows else {}


def _one(conn: Any, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _check_counts(
    conn: Any,
    src: apsw.Connection,
    manifest: Manifest,
    chunks: int,
    vectors: int,
    windows: int | None,
) -> None:
    """The rows loaded against the manifest's and the SQLite file's (``windows`` None: the
    file has no ``chunk_windows``, or no vectors)."""
    want = {
        "chunks": (manifest.chunks, chunks),
        "files": (
            _one(src, "SELECT count(*) FROM files"),
            _one(conn, "SELECT count(*) FROM files"),
        ),
        "vectors": (_one(src, "SELECT count(*) FROM vectors"), vectors),
    }
    if windows is not None:
        want["windows"] = (_one(src, "SELECT count(*) FROM chunk_windows"), windows)
    wrong = {k: v for k, v in want.items() if v[0] != v[1]}
    if wrong:
        said = ", ".join(f"{k} {a} expected, {b} loaded" for k, (a, b) in wrong.items())
        raise ArtifactError(
            f"version {manifest.version} of pack '{manifest.slug}' did not load whole ({said}) "
            "— nothing was published; check the artifact with `ep-mcp index --check DIR`"
        )


def _copy_rows(conn: Any, table: str, columns: str, rows: Iterator[Any]) -> None:
    with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _copy_vectors(conn: Any, src: apsw.Connection, dim: int) -> int:
    """Each chunk's first window (``vectors``)."""
    sql = "SELECT chunk_id, vec FROM vectors ORDER BY chunk_id"
    return _copy_binary(conn, "vectors (chunk_id, vec)", src.execute(sql), 1, dim)


def _copy_windows(conn: Any, src: apsw.Connection, dim: int) -> int:
    """The later windows of long chunks (``chunk_windows``, their ids kept)."""
    sql = "SELECT id, chunk_id, position, vec FROM chunk_windows ORDER BY id"
    return _copy_binary(
        conn, "chunk_windows (id, chunk_id, position, vec)", src.execute(sql), 3, dim
    )


def _copy_binary(conn: Any, target: str, rows: Iterator[Any], ints: int, dim: int) -> int:
    """Rows of ``ints`` integers then a vector, in PostgreSQL's binary COPY format
    (pgvector's ``vector_recv``: int16 dim, int16 0, then big-endian float4s): no float ever
    goes through text. A vector of the wrong size is left out (the count check refuses the
    version)."""
    import numpy as np

    head = struct.Struct(">h" + "ii" * ints + "ihh")  # fields, (len, int)…, len, dim, unused
    count = 0
    with conn.cursor().copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0))
        batch: list[bytes] = []
        for *keys, blob in rows:
            if len(blob) != 4 * dim:
                continue  # a damaged row: the count check below refuses the version
            vec = np.frombuffer(blob, dtype="<f4")
            fields = [x for key in keys for x in (4, int(key))]
            batch.append(
                head.pack(ints + 1, *fields, 4 + 4 * dim, dim, 0) + vec.astype(">f4").tobytes()
            )
            count += 1
            if len(batch) >= 2000:
                copy.write(b"".join(batch))
                batch.clear()
        copy.write(b"".join(batch) + struct.pack(">h", -1))
    return count


def _copy_postings(conn: Any, src: apsw.Connection) -> int:
    """FTS5's own postings: (term, chunk, tokens in text, title, headings) per term and row."""
    src.execute("CREATE VIRTUAL TABLE temp.ep_vocab USING fts5vocab(main, chunks_fts, instance)")
    sql = (
        "SELECT term, doc, sum(col = 'text'), sum(col = 'title'), sum(col = 'headings') "
        "FROM temp.ep_vocab GROUP BY term, doc"
    )
    count = 0
    with conn.cursor().copy("COPY postings (term, chunk_id, tf0, tf1, tf2) FROM STDIN") as copy:
        for row in src.execute(sql):
            copy.write_row(row)
            count += 1
    return count


def psycopg_ready() -> None:
    """Raise the friendly error when psycopg is not installed."""
    psycopg_module()


def load_into_postgres(settings: Settings, index: Path, slug: str, *, suffix: str = "") -> Loaded:
    """A built SQLite ``index`` loaded into PostgreSQL (``index.dsn``) as the current version
    of ``slug``, named by the file's checksum and ``suffix`` (a second run finds it loaded)."""
    digest = file_sha256(index)
    damage = vector_damage(index, index_features(index))  # before the store reads the dimension
    if damage:
        raise ArtifactError(
            f"{index}: damaged embedding windows or vectors ({'; '.join(damage)}) — nothing was "
            "published; build the pack again"
        )
    store = Store(index, read_only=True, vector_engine="numpy")
    try:
        counts, features = store.counts(), store.features()
    finally:
        store.close()
    manifest = Manifest(
        slug=slug,
        version=f"bench-{digest[:16]}{suffix}",
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        ep_mcp_version=__version__,
        content_hash=digest,
        files=counts["files"],
        git_commit=None,
        index_sha256=digest,
        index_bytes=index.stat().st_size,
        schema_version=schema_version(index),
        features=features,
        chunks=counts["chunks"],
        build_key={},
    )
    loaded = load_index(settings.index, index, manifest, keep=2)
    logger.info("loaded into PostgreSQL in %.1f s (%s)", loaded.seconds, loaded.schema)
    return loaded
