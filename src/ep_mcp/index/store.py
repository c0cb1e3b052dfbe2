"""One pack's index in SQLite: writes, the lexical leg, reads — the ``ChunkSource`` of retrieval.

One SQLite file per pack, opened through apsw (it can load extensions; the stdlib sqlite3 of
many Python builds cannot) by ``schema.open_index`` (damage checks, migrations). FTS5 holds the
lexical index; vectors are float32 BLOBs, searched as ``vectors.py`` says (an exact numpy scan,
or sqlite-vec's ``vec0``). A build writes every change of one run in a single transaction, so a
crash leaves the previous index serving.
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

from ep_mcp.index import diskerrors, integrity, lexical, vectorcheck
from ep_mcp.index import vectors as vx
from ep_mcp.index.embed.base import key_dimension
from ep_mcp.index.reads import StoreReads
from ep_mcp.index.records import ChunkRecord, FileRecord, FileWrite, StoredChunk
from ep_mcp.index.schema import FORMAT_VERSION, NOFOLLOW, open_index, real_path
from ep_mcp.index.vectors import sqlite_vec_status
from ep_mcp.index.versioned import VersionMemo

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


class Store(StoreReads):
    """One pack's index. Thread-safe for readers; one writer at a time (reads: ``reads.py``)."""

    def __init__(self, path: Path, *, read_only: bool = False, vector_engine: str = "auto"):
        self.path = path
        self.read_only = read_only
        self._conn: Any = open_index(path, read_only=read_only)  # rows are loosely typed
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._matrix = vx.VectorMatrix(self._lock)
        # vec0: whether the sqlite-vec mirror is kept (whichever engine answers)
        status = sqlite_vec_status  # looked up here: tests stand in a failing extension
        self.vector_engine, self.vec0 = vx.choose_engine(self._conn, vector_engine, status)
        self.writes = diskerrors.WriteWatch(path)  # whether the disk takes our writes
        self.repair_needed = self._check_content()  # damaged or missing rows, for the build

    def _check_content(self) -> str | None:
        """What the open-time content check found (``vectorcheck``), or None."""
        try:
            found = vectorcheck.check(self._conn, self.dimension())
        except integrity.DAMAGE_ERRORS as exc:
            self.close()
            raise integrity.damaged(self.path, integrity.describe(exc)) from exc
        return found.problem()

    def dimension(self) -> int | None:
        """The dimension of the index's vectors (None: lexical only)."""
        dim = self.features().get("dimension")
        return int(dim) if dim else None

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
            conn = apsw.Connection(real_path(self.path), flags=apsw.SQLITE_OPEN_READONLY | NOFOLLOW)
            conn.setbusytimeout(5000)
            if self.vector_engine == "sqlite-vec":
                vx.load_sqlite_vec(conn)
            self._local.conn = conn
            self._local.term_counts = lexical.TermCounts()
            self._local.memo = VersionMemo()
            with self._lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            try:
                with self._conn:
                    yield
            except apsw.SQLError as exc:
                # On SQLITE_FULL (and some I/O errors) SQLite rolls the transaction back by
                # itself, so apsw's own rollback finds none: raise the error that mattered
                cause = exc.__context__
                if isinstance(cause, diskerrors.SQLITE_DISK_ERRORS):
                    raise cause from None
                raise
            self.writes.committed()

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
        return dict(self._memo().value("features", self._read_features))

    def _read_features(self) -> dict[str, Any]:
        raw = self.get_meta("index_features")
        return dict(json.loads(raw)) if raw else {}

    def embedding_model(self) -> str | None:
        """The embedder the index's vectors were made with (None: lexical only)."""
        name = self._memo().value("features", self._read_features).get("embedder")
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
            "vectors": one("SELECT count(*) FROM vectors"),  # chunks with a vector
            "cached": one("SELECT count(*) FROM embed_cache"),
            "pending": self.pending_count(),
        }

    def window_count(self) -> int:
        """Later embedding windows stored (0 on an index from before windows)."""
        try:
            rows = self._reader().execute("SELECT count(*) FROM chunk_windows").fetchall()
        except apsw.SQLError:  # a read-only index of schema 2
            return 0
        return int(rows[0][0])

    # -- embedding cache ---------------------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        import numpy as np

        sql = "SELECT key, vec FROM embed_cache WHERE key IN ({marks})"
        return {
            key: np.frombuffer(blob, dtype="<f4")
            for key, blob in self._batched(sql, keys)
            if len(blob) == 4 * key_dimension(key)  # a damaged entry is embedded again
        }

    def cache_vectors(self, items: Mapping[str, npt.NDArray[np.float32]]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO embed_cache(key, vec) VALUES(?, ?)",
                [(k, vx.blob(v)) for k, v in items.items()],
            )

    def try_cache_vectors(self, items: Mapping[str, npt.NDArray[np.float32]]) -> bool:
        """``cache_vectors`` where a refusal of the disk (full, read-only) costs only the cache:
        logged once, until a write commits again (``writes.problem`` says why meanwhile)."""
        try:
            self.cache_vectors(items)
        except diskerrors.SQLITE_DISK_ERRORS as exc:
            self.writes.refused(exc)
            return False
        except apsw.BusyError:  # another process is writing: the next query caches them
            logger.debug("index at %s is locked — embedding cache not written", self.path)
            return False
        return True

    @property
    def write_problem(self) -> str | None:
        return self.writes.problem

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def version(self) -> str | None:
        """None: an index built in place (an artifact's version is its folder's name)."""
        return None

    def problems(self) -> list[str]:
        """Damaged or missing rows awaiting their repair (the next build or backfill)."""
        repair = self.repair_needed
        fix = "rebuild it where it is built" if self.read_only else "awaiting repair"
        return [f"{repair} — {fix}"] if repair else []

    # -- writes ------------------------------------------------------------------------------

    def clear(self) -> None:
        """Drop every file and chunk (the embedding cache stays)."""
        self._conn.execute(
            "DELETE FROM pending_vectors; DELETE FROM chunk_windows; DELETE FROM vectors; "
            "DELETE FROM chunks; DELETE FROM files;"
        )
        self._conn.execute("DELETE FROM chunks_fts")
        if self.vec0:
            vx.drop_vec0(self._conn)

    def remove_files(self, paths: Iterable[str]) -> None:
        mirror = self.vec0 and vx.has_vec0(self._conn)
        for path in paths:
            ids = [r[0] for r in self._conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
            for cid in ids:
                self._conn.execute("DELETE FROM chunks_fts WHERE rowid=?", (cid,))
                if mirror:
                    vx.vec0_delete(self._conn, cid)
            for table in ("chunk_windows", "vectors", "pending_vectors"):
                self._conn.execute(
                    f"DELETE FROM {table} WHERE chunk_id IN (SELECT id FROM chunks WHERE path=?)",
                    (path,),
                )
            self._conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            self._conn.execute("DELETE FROM files WHERE path=?", (path,))

    def write_file(self, item: FileWrite, *, new: bool = False) -> None:
        """Replace one file's record, chunks, lexical rows and vectors (``new``: the index
        holds nothing of the file yet, so there is nothing to remove first)."""
        self.write_files([(item, new)])

    def write_files(self, items: Iterable[tuple[FileWrite, bool]]) -> None:
        """:meth:`write_file` for many files: the rows of consecutive new files go in together,
        one prepared statement per table (chunk ids given as SQLite would have given them:
        one past the largest)."""
        batch = _RowBatch(self._next_chunk_id())
        for item, new in items:
            if not new:
                self._flush(batch)
                self.remove_files([item.record.path])
                batch = _RowBatch(self._next_chunk_id())
            ids = batch.add(item)
            for i, cid in enumerate(ids):
                if i in item.pending:
                    batch.pending.append((cid,))
                elif item.vectors is not None:
                    batch.vectors.append((cid, item.vectors[i], item.windows.get(i)))
        self._flush(batch)

    def _next_chunk_id(self) -> int:
        rows = self._conn.execute("SELECT max(id) FROM chunks").fetchall()
        return int(rows[0][0] or 0) + 1

    def _flush(self, batch: _RowBatch) -> None:
        conn = self._conn
        conn.executemany(
            "INSERT INTO files(path, file_hash, sidecar_hash, content_hash, title, type, tags, "
            "doc_id, info) VALUES(?,?,?,?,?,?,?,?,?)",
            batch.files,
        )
        conn.executemany(
            "INSERT INTO chunks(id, path, chunk_index, heading_path, line_start, line_end, "
            "byte_start, byte_end, text, context_prefix, span_hash, section, tokens) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
            batch.chunks,
        )
        conn.executemany(
            "INSERT INTO chunks_fts(rowid, text, title, headings) VALUES(?,?,?,?)", batch.lexical
        )
        conn.executemany("INSERT INTO pending_vectors(chunk_id) VALUES(?)", batch.pending)
        for cid, vec, windows in batch.vectors:
            self._insert_vector(cid, vec, windows)
        batch.clear()

    def _insert_vector(
        self,
        chunk_id: int,
        vec: npt.NDArray[np.float32],
        windows: npt.NDArray[np.float32] | None = None,
    ) -> None:
        """A chunk's vector (its first window) and the vectors of its later windows."""
        blob = vx.blob(vec)
        later = 0 if windows is None else len(windows)
        self._conn.execute(
            "INSERT INTO vectors(chunk_id, vec, windows) VALUES(?,?,?)", (chunk_id, blob, later)
        )
        if self.vec0:
            vx.vec0_insert(self._conn, chunk_id, blob, len(vec))
        for position, row in enumerate(() if windows is None else windows, start=1):
            data = vx.blob(row)
            cursor = self._conn.execute(
                "INSERT INTO chunk_windows(chunk_id, position, vec) VALUES(?,?,?) RETURNING id",
                (chunk_id, position, data),
            )
            window_id = int(cursor.fetchall()[0][0])
            if self.vec0:
                vx.vec0_insert_window(self._conn, window_id, data, len(row))

    # -- chunks awaiting vectors (kept apart: a build that lost its provider carries on) -----

    def pending_count(self) -> int:
        """Chunks indexed lexically whose vector is still missing (0 on an index from before
        pending vectors were recorded)."""
        return self._memo().value("pending", self._read_pending_count)

    def _read_pending_count(self) -> int:
        try:
            rows = self._reader().execute("SELECT count(*) FROM pending_vectors").fetchall()
        except apsw.SQLError:  # a read-only index of schema 1: nothing is pending there
            return 0
        return int(rows[0][0])

    def pending_texts(self) -> list[tuple[int, str, str]]:
        """(chunk_id, context prefix, span) of every pending chunk (embedded as
        ``windows.joined(prefix, span)``, or as windows of it)."""
        try:
            rows = self._reader().execute(
                "SELECT c.id, c.context_prefix, c.text FROM pending_vectors p "
                "JOIN chunks c ON c.id = p.chunk_id ORDER BY c.id"
            )
            return [(int(cid), str(pre), str(text)) for cid, pre, text in rows]
        except apsw.SQLError:
            return []

    def fill_pending(
        self,
        vectors: Mapping[int, npt.NDArray[np.float32]],
        windows: Mapping[int, npt.NDArray[np.float32]] | None = None,
    ) -> None:
        """Store the vectors (and later windows, by chunk id) of pending chunks (call inside
        the build's transaction)."""
        for cid, vec in vectors.items():
            deleted = self._conn.execute(
                "DELETE FROM pending_vectors WHERE chunk_id=? RETURNING chunk_id", (cid,)
            ).fetchall()
            if deleted:
                self._insert_vector(cid, vec, (windows or {}).get(cid))

    def finish_build(self, features: Mapping[str, Any]) -> None:
        """Record the build's features and bump the generation (call inside the transaction)."""
        self.set_meta("index_features", json.dumps(dict(features), sort_keys=True))
        rows = self._conn.execute("SELECT value FROM meta WHERE key='generation'").fetchall()
        self.set_meta("generation", str(int(rows[0][0] if rows else 0) + 1))
        self.set_meta("indexed_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self._matrix.forget()

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
        """Chunks matching any term, best BM25 first, as (chunk_id, score ≥ 0) (``lexical``)."""
        out = lexical.top(self._reader(), terms, n, weights, time_limit_ms)
        if paths is not None:
            allowed = set(paths)
            owners = self.paths_of([cid for cid, _ in out])
            out = [(cid, s) for cid, s in out if owners.get(cid) in allowed]
        return out

    def term_counts(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Chunks containing each term (FTS5, stemmed) and the number of chunks: for IDF."""
        conn = self._reader()  # first: it makes this thread's counts too
        counts: lexical.TermCounts = self._local.term_counts
        return counts(conn, terms)

    # -- vectors (index/vectors.py: the numpy scan and the vec0 mirror) ---------------------

    def has_vectors(self) -> bool:
        return self._memo().value("has_vectors", self._read_has_vectors)

    def _read_has_vectors(self) -> bool:
        return bool(self._reader().execute("SELECT 1 FROM vectors LIMIT 1").fetchall())

    def vector_top(self, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine similarity, best first, as (chunk_id, similarity): each
        chunk once, at the best of its embedding windows (``vectors.py``)."""
        if self.vector_engine == "sqlite-vec" and vx.has_vec0(self._reader()):
            return vx.vec0_top(self._reader(), query, n)
        return vx.matrix_top(self._load_matrix(), query, n)

    def vectors_for(self, chunk_ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """One vector per chunk (its first window: what the model reads of its head)."""
        return vx.matrix_rows(self._load_matrix(), chunk_ids)

    def _load_matrix(self) -> vx.Loaded:
        memo = self._memo()
        generation = memo.value("generation", lambda: int(self.get_meta("generation") or "0"))
        dim = memo.value("features", self._read_features).get("dimension")
        loaded = self._matrix.load(self._reader(), generation, int(dim) if dim else None)
        skipped = len(self._matrix.skipped)
        if skipped and self.repair_needed is None:
            self.repair_needed = f"{skipped} damaged vector(s) skipped by searches"
            logger.warning(
                "index at %s: %s — run `ep-mcp index PACK` to repair them",
                self.path,
                self.repair_needed,
            )
        return loaded

    def repair(self) -> tuple[list[int], list[str]]:
        """Queue the bad or missing vectors as pending, list the files missing chunk rows:
        (chunk ids queued, files to index again). The build calls it when ``repair_needed``."""
        dim = self.dimension()
        with self.transaction():
            queued = vectorcheck.queue_damaged(self._conn, dim, self.vec0) if dim else []
            files = vectorcheck.incomplete_files(self._conn)
        self.repair_needed = None
        return queued, files


_INFO_JSON = json.JSONEncoder(default=str).encode  # one encoder, not one per file


class _RowBatch:
    """Rows of consecutive files waiting to be written, chunk ids counted from ``next_id``."""

    def __init__(self, next_id: int) -> None:
        self.next_id = next_id
        self.files: list[tuple[Any, ...]] = []
        self.chunks: list[tuple[Any, ...]] = []
        self.lexical: list[tuple[Any, ...]] = []
        self.pending: list[tuple[int]] = []
        self.vectors: list[tuple[int, npt.NDArray[np.float32], npt.NDArray[np.float32] | None]] = []

    def add(self, item: FileWrite) -> range:
        rec = item.record
        self.files.append(
            (
                rec.path,
                rec.file_hash,
                rec.sidecar_hash,
                rec.content_hash,
                rec.title,
                rec.type,
                json.dumps(list(rec.tags)),
                rec.doc_id,
                _INFO_JSON({**rec.info, "chunks": len(item.chunks)}),
            )
        )
        ids = range(self.next_id, self.next_id + len(item.chunks))
        self.next_id = ids.stop
        for cid, ch in zip(ids, item.chunks, strict=True):
            self.chunks.append(
                (
                    cid,
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
                )
            )
            lexical_text = f"{ch.context_prefix}\n\n{ch.text}" if ch.context_prefix else ch.text
            self.lexical.append((cid, lexical_text, rec.title, " ".join(ch.heading_path)))
        return ids

    def clear(self) -> None:
        for rows in (self.files, self.chunks, self.lexical, self.pending, self.vectors):
            rows.clear()
