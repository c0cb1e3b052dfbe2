"""All SQL lives here: schema, migrations, writes, lexical and vector look-ups, reads.

One SQLite file per pack, opened through apsw (it can load extensions; the stdlib sqlite3 of
many Python builds cannot). FTS5 holds the lexical index; vectors are float32 BLOBs, searched
by sqlite-vec's ``vec0`` when it loads, else by an exact numpy scan over an in-memory matrix.
A build writes every change of one run in a single transaction, so a crash leaves the previous
index serving.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ep_mcp.errors import IndexBuildError
from ep_mcp.index import integrity
from ep_mcp.index.records import ChunkRecord, FileRecord, FileWrite, StoredChunk

if TYPE_CHECKING:  # numpy is imported where vectors are touched: a no-change run never needs it
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "FORMAT_VERSION",
    "ChunkRecord",
    "FileRecord",
    "FileWrite",
    "Store",
    "StoredChunk",
    "sqlite_vec_status",
]

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1

_MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files(
        path TEXT PRIMARY KEY,
        file_hash TEXT NOT NULL,
        sidecar_hash TEXT,
        content_hash TEXT NOT NULL,
        title TEXT NOT NULL,
        type TEXT NOT NULL,
        tags TEXT NOT NULL,
        doc_id TEXT,
        info TEXT NOT NULL
    );
    CREATE TABLE chunks(
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        heading_path TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        byte_start INTEGER NOT NULL,
        byte_end INTEGER NOT NULL,
        text TEXT NOT NULL,
        context_prefix TEXT NOT NULL,
        span_hash TEXT NOT NULL,
        section TEXT,
        tokens INTEGER NOT NULL,
        UNIQUE(path, chunk_index)
    );
    CREATE INDEX chunks_path ON chunks(path);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, title, headings, tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE vectors(chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
                         vec BLOB NOT NULL);
    CREATE TABLE embed_cache(key TEXT PRIMARY KEY, vec BLOB NOT NULL);
    """,
    # 2: chunks whose vector the provider has not given yet (a build carried on lexically)
    """
    CREATE TABLE pending_vectors(
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE
    );
    """,
)


def sqlite_vec_status() -> tuple[bool, str]:
    """Whether sqlite-vec loads into apsw here, and its version or the reason it does not."""
    try:
        import sqlite_vec

        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        version = conn.execute("select vec_version()").fetchall()[0][0]
        conn.close()
        return True, str(version)
    except Exception as exc:  # any failure means "not available", with the reason
        return False, f"{type(exc).__name__}: {exc}"


def _blob(vec: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.ascontiguousarray(vec, dtype="<f4").tobytes()


class Store:
    """One pack's index. Thread-safe for readers; one writer at a time."""

    def __init__(self, path: Path, *, read_only: bool = False, vector_engine: str = "auto"):
        self.path = path
        self.read_only = read_only
        existed = path.exists()
        if existed:
            reason = integrity.check_file(path)
            if reason is not None:
                raise integrity.damaged(path, reason)
        elif not read_only:
            integrity.clear_mark(path)  # a marker outliving its index
        try:
            if read_only:
                flags = apsw.SQLITE_OPEN_READONLY
                if not path.exists():
                    raise IndexBuildError(
                        f"no index at {path} — build it first with `ep-mcp index PACK`"
                    )
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
            self._conn: Any = apsw.Connection(str(path), flags=flags)  # rows are loosely typed
        except (apsw.Error, OSError) as exc:
            raise IndexBuildError(f"cannot open index {path}: {exc} — check the folder") from exc
        self._conn.setbusytimeout(5000)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._matrix: tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float32]] | None = None
        try:
            if existed:
                self._refuse_newer()  # another version's index is not damage: never rebuild it
                reason = integrity.check_database(self._conn, path.stat().st_size)
                if reason is not None:
                    raise integrity.damaged(path, reason)
            if not read_only:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._migrate()
            self._conn.execute("PRAGMA foreign_keys=ON")
        except integrity.DAMAGE_ERRORS as exc:
            self._conn.close()
            raise integrity.damaged(path, integrity.describe(exc)) from exc
        except BaseException:
            self._conn.close()
            raise
        self.vector_engine = self._choose_engine(vector_engine)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            self._conn.close()

    def _reader(self) -> Any:
        """This thread's own read-only connection (WAL readers never block each other).

        Queries run on worker threads in the servers; one connection per thread keeps apsw's
        per-connection state (the progress handler that bounds a lexical query) private.
        """
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
            conn.setbusytimeout(5000)
            if self.vector_engine == "sqlite-vec":
                import sqlite_vec

                conn.enable_load_extension(True)
                conn.load_extension(sqlite_vec.loadable_path())
            self._local.conn = conn
            with self._lock:
                self._readers.append(conn)
        return conn

    def _refuse_newer(self) -> int:
        version = int(self._conn.execute("PRAGMA user_version").fetchall()[0][0])
        if version > len(_MIGRATIONS):
            raise IndexBuildError(
                f"index {self.path} was written by a newer ep-mcp — delete it to rebuild"
            )
        return version

    def _migrate(self) -> None:
        version = self._refuse_newer()
        for number, script in enumerate(_MIGRATIONS[version:], start=version + 1):
            with self._conn:
                self._conn.execute(script)
                self._conn.execute(f"PRAGMA user_version={number}")

    def _choose_engine(self, wanted: str) -> str:
        """Which engine answers vector queries; also whether the vec0 mirror is kept.

        ``auto`` keeps the sqlite-vec mirror when the extension loads but answers with the exact
        numpy scan over an in-memory matrix, which measured 3 to 4 times faster at every size up to
        100k chunks (docs/BENCHMARKS.md); ``sqlite-vec`` answers through vec0 (no matrix in
        memory); ``numpy`` never loads the extension.
        """
        self.vec0 = False
        if wanted == "numpy":
            return "numpy"
        ok, detail = sqlite_vec_status()
        if ok:
            import sqlite_vec

            self._conn.enable_load_extension(True)
            self._conn.load_extension(sqlite_vec.loadable_path())
            self.vec0 = True
            return "sqlite-vec" if wanted == "sqlite-vec" else "numpy"
        if wanted == "sqlite-vec":
            logger.warning("sqlite-vec did not load (%s) — using the exact numpy scan", detail)
        else:
            logger.info("sqlite-vec is not available (%s) — using the exact numpy scan", detail)
        return "numpy"

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock, self._conn:
            yield

    # -- metadata ----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self._reader().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchall()
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def features(self) -> dict[str, Any]:
        raw = self.get_meta("index_features")
        return dict(json.loads(raw)) if raw else {}

    def embedding_model(self) -> str | None:
        """The embedder the index's vectors were made with (None: lexical only)."""
        name = self.features().get("embedder")
        return str(name) if name else None

    def file_states(self) -> dict[str, tuple[str, str | None]]:
        """path → (file_hash, sidecar_hash) of every indexed file."""
        rows = self._reader().execute("SELECT path, file_hash, sidecar_hash FROM files")
        return {r[0]: (r[1], r[2]) for r in rows}

    def counts(self) -> dict[str, int]:
        def one(sql: str) -> int:
            return int(self._reader().execute(sql).fetchall()[0][0])

        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "vectors": one("SELECT count(*) FROM vectors"),
            "cached": one("SELECT count(*) FROM embed_cache"),
            "pending": self.pending_count(),
        }

    # -- embedding cache ---------------------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        import numpy as np

        found: dict[str, npt.NDArray[np.float32]] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            sql = f"SELECT key, vec FROM embed_cache WHERE key IN ({marks})"
            for key, blob in self._reader().execute(sql, tuple(batch)):
                found[key] = np.frombuffer(blob, dtype="<f4")
        return found

    def cache_vectors(self, items: Mapping[str, npt.NDArray[np.float32]]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO embed_cache(key, vec) VALUES(?, ?)",
                [(k, _blob(v)) for k, v in items.items()],
            )

    # -- writes ------------------------------------------------------------------------------

    def clear(self) -> None:
        """Drop every file and chunk (the embedding cache stays)."""
        self._conn.execute(
            "DELETE FROM pending_vectors; DELETE FROM vectors; DELETE FROM chunks; "
            "DELETE FROM files;"
        )
        self._conn.execute("DELETE FROM chunks_fts")
        self._drop_vec0()

    def remove_files(self, paths: Iterable[str]) -> None:
        mirror = self.vec0 and self._has_vec0(self._conn)
        for path in paths:
            ids = [r[0] for r in self._conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
            for cid in ids:
                self._conn.execute("DELETE FROM chunks_fts WHERE rowid=?", (cid,))
                if mirror:
                    self._conn.execute("DELETE FROM chunks_vec WHERE chunk_id=?", (cid,))
            for table in ("vectors", "pending_vectors"):
                self._conn.execute(
                    f"DELETE FROM {table} WHERE chunk_id IN (SELECT id FROM chunks WHERE path=?)",
                    (path,),
                )
            self._conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            self._conn.execute("DELETE FROM files WHERE path=?", (path,))

    def write_file(self, item: FileWrite) -> None:
        """Replace one file's record, chunks, lexical rows and vectors."""
        rec = item.record
        self.remove_files([rec.path])
        self._conn.execute(
            "INSERT INTO files(path, file_hash, sidecar_hash, content_hash, title, type, tags, "
            "doc_id, info) VALUES(?,?,?,?,?,?,?,?,?)",
            (
                rec.path,
                rec.file_hash,
                rec.sidecar_hash,
                rec.content_hash,
                rec.title,
                rec.type,
                json.dumps(list(rec.tags)),
                rec.doc_id,
                json.dumps(rec.info, default=str),
            ),
        )
        for i, ch in enumerate(item.chunks):
            cursor = self._conn.execute(
                "INSERT INTO chunks(path, chunk_index, heading_path, line_start, line_end, "
                "byte_start, byte_end, text, context_prefix, span_hash, section, tokens) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (
                    ch.path,
                    ch.chunk_index,
                    json.dumps(list(ch.heading_path)),
                    ch.line_range[0],
                    ch.line_range[1],
                    ch.byte_range[0],
                    ch.byte_range[1],
                    ch.text,
                    ch.context_prefix,
                    ch.span_hash,
                    ch.section,
                    ch.tokens,
                ),
            )
            cid = int(cursor.fetchall()[0][0])
            lexical_text = f"{ch.context_prefix}\n\n{ch.text}" if ch.context_prefix else ch.text
            self._conn.execute(
                "INSERT INTO chunks_fts(rowid, text, title, headings) VALUES(?,?,?,?)",
                (cid, lexical_text, rec.title, " ".join(ch.heading_path)),
            )
            if i in item.pending:
                self._conn.execute("INSERT INTO pending_vectors(chunk_id) VALUES(?)", (cid,))
            elif item.vectors is not None:
                self._insert_vector(cid, item.vectors[i])

    def _insert_vector(self, chunk_id: int, vec: npt.NDArray[np.float32]) -> None:
        blob = _blob(vec)
        self._conn.execute("INSERT INTO vectors(chunk_id, vec) VALUES(?,?)", (chunk_id, blob))
        if self.vec0:
            self._ensure_vec0(len(vec))
            self._conn.execute(
                "INSERT INTO chunks_vec(chunk_id, embedding) VALUES(?,?)", (chunk_id, blob)
            )

    # -- chunks awaiting vectors (kept apart: a build that lost its provider carries on) -----

    def pending_count(self) -> int:
        """Chunks indexed lexically whose vector is still missing (0 on an index from before
        pending vectors were recorded)."""
        try:
            rows = self._reader().execute("SELECT count(*) FROM pending_vectors").fetchall()
        except apsw.SQLError:  # a read-only index of schema 1: nothing is pending there
            return 0
        return int(rows[0][0])

    def pending_texts(self) -> list[tuple[int, str]]:
        """(chunk_id, embedded text: the context prefix, then the span) of every pending chunk."""
        try:
            rows = self._reader().execute(
                "SELECT c.id, c.context_prefix, c.text FROM pending_vectors p "
                "JOIN chunks c ON c.id = p.chunk_id ORDER BY c.id"
            )
            return [(int(cid), f"{pre}\n\n{text}" if pre else str(text)) for cid, pre, text in rows]
        except apsw.SQLError:
            return []

    def fill_pending(self, vectors: Mapping[int, npt.NDArray[np.float32]]) -> None:
        """Store the vectors of pending chunks (call inside the build's transaction)."""
        for cid, vec in vectors.items():
            deleted = self._conn.execute(
                "DELETE FROM pending_vectors WHERE chunk_id=? RETURNING chunk_id", (cid,)
            ).fetchall()
            if deleted:
                self._insert_vector(cid, vec)

    def finish_build(self, features: Mapping[str, Any]) -> None:
        """Record the build's features and bump the generation (call inside the transaction)."""
        self.set_meta("index_features", json.dumps(dict(features), sort_keys=True))
        rows = self._conn.execute("SELECT value FROM meta WHERE key='generation'").fetchall()
        self.set_meta("generation", str(int(rows[0][0] if rows else 0) + 1))
        self.set_meta("indexed_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self._matrix = None

    # -- sqlite-vec mirror -------------------------------------------------------------------

    def _has_vec0(self, conn: Any = None) -> bool:
        rows = (
            (conn or self._reader())
            .execute("SELECT 1 FROM sqlite_master WHERE name='chunks_vec'")
            .fetchall()
        )
        return bool(rows)

    def _ensure_vec0(self, dim: int) -> None:
        if not self._has_vec0(self._conn):
            self._conn.execute(
                f"CREATE VIRTUAL TABLE chunks_vec USING vec0(chunk_id INTEGER PRIMARY KEY, "
                f"embedding float[{int(dim)}] distance_metric=cosine)"
            )

    def _drop_vec0(self) -> None:
        if self.vec0 and self._has_vec0(self._conn):
            self._conn.execute("DROP TABLE chunks_vec")

    # -- lexical -----------------------------------------------------------------------------

    def lexical_top(
        self,
        terms: Sequence[str],
        n: int,
        *,
        weights: tuple[float, float, float] = (1.0, 3.0, 2.0),
        time_limit_ms: int = 250,
        paths: Sequence[str] | None = None,
    ) -> list[tuple[int, float]]:
        """Chunks matching any term, best BM25 first, as (chunk_id, score ≥ 0).

        Terms are quoted here, so no FTS5 syntax from a user ever reaches SQLite; a query that
        runs past ``time_limit_ms`` is cut short and returns what it has.
        """
        quoted = [f'"{t.replace(chr(34), "")}"' for t in terms if t.replace('"', "").strip()]
        if not quoted:
            return []
        match = " OR ".join(quoted)
        w = ", ".join(f"{float(x):.3f}" for x in weights)
        sql = (
            f"SELECT rowid, -bm25(chunks_fts, {w}) AS s FROM chunks_fts "
            f"WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, {w}) LIMIT ?"
        )
        deadline = time.monotonic() + time_limit_ms / 1000.0
        out: list[tuple[int, float]] = []
        conn = self._reader()
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            for rowid, score in conn.execute(sql, (match, n)):
                out.append((int(rowid), float(score)))
        except apsw.InterruptError:
            logger.warning("lexical search hit its %d ms limit — partial result", time_limit_ms)
        except apsw.SQLError as exc:
            logger.warning("lexical search failed for %r: %s", match[:200], exc)
        finally:
            conn.set_progress_handler(None)
        if paths is not None:
            allowed = set(paths)
            owners = self.paths_of([cid for cid, _ in out])
            out = [(cid, s) for cid, s in out if owners.get(cid) in allowed]
        return out

    # -- vectors -----------------------------------------------------------------------------

    def _load_matrix(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        import numpy as np

        gen = int(self.get_meta("generation") or "0")
        cached = self._matrix
        if cached is not None and cached[0] == gen:
            return cached[1], cached[2]
        with self._lock:
            rows = self._reader().execute("SELECT chunk_id, vec FROM vectors ORDER BY chunk_id")
            ids: list[int] = []
            blobs: list[bytes] = []
            for cid, blob in rows:
                ids.append(int(cid))
                blobs.append(bytes(blob))
            if blobs:
                dim = len(blobs[0]) // 4
                mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
            else:
                mat = np.zeros((0, 0), dtype=np.float32)
            loaded = (gen, np.asarray(ids, dtype=np.int64), mat.astype(np.float32))
            self._matrix = loaded
        return loaded[1], loaded[2]

    def has_vectors(self) -> bool:
        return bool(self._reader().execute("SELECT 1 FROM vectors LIMIT 1").fetchall())

    def vector_top(self, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine similarity, best first, as (chunk_id, similarity)."""
        import numpy as np

        if self.vector_engine == "sqlite-vec" and self._has_vec0():
            try:
                rows = (
                    self._reader()
                    .execute(
                        "SELECT chunk_id, distance FROM chunks_vec "
                        "WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                        (_blob(query), int(n)),
                    )
                    .fetchall()
                )
            except apsw.SQLError as exc:  # vec0 refuses a vector of another dimension
                raise IndexBuildError(
                    f"query vector has {query.shape[0]} dimensions, which the index does not "
                    f"accept ({exc}) — re-index with the same embedding model"
                ) from exc
            return [(int(cid), 1.0 - float(dist)) for cid, dist in rows]
        ids, mat = self._load_matrix()
        if len(ids) == 0:
            return []
        if mat.shape[1] != query.shape[0]:
            raise IndexBuildError(
                f"query vector has {query.shape[0]} dimensions, the index {mat.shape[1]} — "
                "re-index with the same embedding model"
            )
        sims = mat @ query.astype(np.float32)
        n = min(n, len(ids))
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(ids[i]), float(sims[i])) for i in top]

    def vectors_for(self, chunk_ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        import numpy as np

        ids, mat = self._load_matrix()
        if len(ids) == 0:
            return {}
        pos = np.searchsorted(ids, np.asarray(chunk_ids, dtype=np.int64))
        out: dict[int, npt.NDArray[np.float32]] = {}
        for cid, p in zip(chunk_ids, pos, strict=True):
            if p < len(ids) and ids[p] == cid:
                out[cid] = mat[p]
        return out

    # -- reads -------------------------------------------------------------------------------

    _CHUNK_COLUMNS = (
        "c.id, c.path, c.chunk_index, c.heading_path, c.line_start, c.line_end, c.byte_start, "
        "c.byte_end, c.text, c.context_prefix, c.span_hash, c.section, c.tokens, "
        "f.file_hash, f.sidecar_hash, f.content_hash, f.title, f.type, f.tags, f.doc_id, f.info"
    )

    @staticmethod
    def _row(row: Sequence[Any]) -> StoredChunk:
        (
            cid,
            path,
            idx,
            hp,
            ls,
            le,
            bs,
            be,
            text,
            prefix,
            span,
            section,
            tokens,
            fh,
            sh,
            ch,
            title,
            typ,
            tags,
            doc_id,
            info,
        ) = row
        file = FileRecord(
            path, fh, sh, ch, title, typ, tuple(json.loads(tags)), doc_id, json.loads(info)
        )
        chunk = ChunkRecord(
            path,
            idx,
            tuple(json.loads(hp)),
            (ls, le),
            (bs, be),
            text,
            prefix,
            span,
            section,
            tokens,
        )
        return StoredChunk(int(cid), chunk, file)

    def chunks_by_ids(self, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        for start in range(0, len(chunk_ids), 500):
            batch = tuple(chunk_ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            sql = (
                f"SELECT {self._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "
                f"WHERE c.id IN ({marks})"
            )
            rows = self._reader().execute(sql, batch).fetchall()
            for row in rows:
                sc = self._row(row)
                out[sc.id] = sc
        return out

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        sql = (
            f"SELECT {self._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "
            "WHERE c.path = ? ORDER BY c.chunk_index"
        )
        return [self._row(r) for r in self._reader().execute(sql, (path,)).fetchall()]

    def file_tokens(self, paths: Sequence[str]) -> dict[str, int]:
        """Token count of each indexed file (the sum over its chunks)."""
        out: dict[str, int] = {}
        for start in range(0, len(paths), 500):
            batch = tuple(paths[start : start + 500])
            marks = ",".join("?" * len(batch))
            rows = (
                self._reader()
                .execute(
                    f"SELECT path, sum(tokens) FROM chunks WHERE path IN ({marks}) GROUP BY path",
                    batch,
                )
                .fetchall()
            )
            out.update({str(r[0]): int(r[1]) for r in rows})
        return out

    def paths_of(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(chunk_ids), 500):
            batch = tuple(chunk_ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            rows = (
                self._reader()
                .execute(f"SELECT id, path FROM chunks WHERE id IN ({marks})", batch)
                .fetchall()
            )
            out.update({int(r[0]): str(r[1]) for r in rows})
        return out

    def files(self) -> list[FileRecord]:
        rows = (
            self._reader()
            .execute(
                "SELECT path, file_hash, sidecar_hash, content_hash, title, type, tags, doc_id, "
                "info FROM files ORDER BY path"
            )
            .fetchall()
        )
        return [
            FileRecord(
                r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])), r[7], json.loads(r[8])
            )
            for r in rows
        ]
