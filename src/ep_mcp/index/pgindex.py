"""A pack version served from PostgreSQL + pgvector: the ``ServedIndex`` of ``index.engine:
postgres``.

It reads the schema ``pgload`` published (one per version, never written again), so what is
constant for the version — features, counts, FTS5's row and token totals — is read once at
open. The lexical leg is FTS5's BM25 over FTS5's own postings (``pgbm25``); the vector leg is
pgvector's HNSW (cosine) with ``hnsw.ef_search`` well above the pool — for a version with
embedding windows over SQLite's vec0 candidates, each chunk once at the best of its windows
(``pgwindows``); chunks are read back in SQLite's row shape (``reads.StoreReads._row``). Each
thread has its own connection. A connection that breaks (a restarted server, a killed
backend) is opened again and the query retried once; if that fails too the query is one
`IndexUnavailableError` line and ``problems()`` (so ``/health``) says degraded until a query
succeeds again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ep_mcp.config.model import IndexSettings
from ep_mcp.errors import IndexBuildError, IndexUnavailableError, NotFoundError
from ep_mcp.index import pgbm25, pgwindows
from ep_mcp.index.embed.base import key_dimension
from ep_mcp.index.pgconnect import connect, first_line, psycopg_module, resolve_dsn
from ep_mcp.index.pgload import schema_name
from ep_mcp.index.reads import StoreReads
from ep_mcp.index.records import StoredChunk
from ep_mcp.index.vectors import dimension_error

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

T = TypeVar("T")

CHUNK_SQL = f"SELECT {StoreReads._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "


def current_version(settings: IndexSettings, slug: str, conn: Any = None) -> str | None:
    """The pack's current version on the server (None: none published yet)."""
    own = conn is None
    conn = conn or connect(resolve_dsn(settings), at_start=False)
    try:
        row = conn.execute(
            "SELECT c.version FROM ep_mcp.current c WHERE c.slug = %s", (slug,)
        ).fetchone()
    except psycopg_module().errors.UndefinedTable:
        return None
    finally:
        if own:
            conn.close()
    return str(row[0]) if row else None


def published_version(settings: IndexSettings, slug: str) -> str:
    """The pack's current version, at start: a server that cannot be reached is a
    `ConfigError` line, a pack never published a `NotFoundError` line."""
    conn = connect(resolve_dsn(settings))
    try:
        version = current_version(settings, slug, conn)
    finally:
        conn.close()
    if version is None:
        raise NotFoundError(
            f"pack '{slug}' has no version on PostgreSQL yet — publish one with "
            "`ep-mcp index PACK --out DIR --to postgres`"
        )
    return version


def _load_stats(raw: object) -> dict[str, int] | None:
    """The counts `pgload` wrote at the load (`pg_stats`); None when missing or damaged. A
    version loaded before embedding windows records none: 0 later windows."""
    with contextlib.suppress(KeyError, TypeError, ValueError, RecursionError):
        stats = json.loads(raw) if isinstance(raw, str) else None
        if isinstance(stats, dict):
            found = {k: int(stats[k]) for k in ("rows", "tokens", "vectors", "pending")}
            return {**found, "windows": int(stats.get("windows", 0))}
    return None


class PgIndex:
    """One published version of one pack on PostgreSQL (read-only)."""

    read_only = True

    def __init__(self, dsn: str, slug: str, version: str, ef_search: int) -> None:
        self._dsn = dsn
        self.slug = slug
        self._version = version
        self.schema = schema_name(slug, version)
        self.ef_search = ef_search
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[Any] = []
        self._lost: str | None = None
        self._closed = False
        meta = dict(self._run(lambda c: c.execute("SELECT key, value FROM meta").fetchall()))
        self._features: dict[str, Any] = dict(json.loads(meta.get("index_features") or "{}"))
        stats = _load_stats(meta.get("pg_stats"))
        if stats is None:
            self.close()
            raise IndexBuildError(
                f"pack '{slug}' version {version} on PostgreSQL has no load statistics "
                "(`pg_stats`: loaded by an older ep-mcp, or damaged) — republish it with "
                "`ep-mcp index PACK --out DIR --to postgres`"
            ) from None
        self._rows, self._tokens = stats["rows"], stats["tokens"]
        self._windows = stats["windows"]
        self._counts = {
            "files": self._count("files"),
            "chunks": self._rows,
            "vectors": stats["vectors"],
            "cached": self._count("embed_cache"),
            "pending": stats["pending"],
        }

    @classmethod
    def open(cls, settings: IndexSettings, slug: str, version: str | None = None) -> PgIndex:
        """The pack's ``version`` (default: its current one); a bad DSN or an unreachable
        server is a `ConfigError` line, a pack never published a `NotFoundError` line."""
        version = version or published_version(settings, slug)
        return cls(resolve_dsn(settings), slug, version, settings.pg_ef_search)

    # -- connections ------------------------------------------------------------------------

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if self._closed:  # no connection opens after close (none would ever be closed)
            raise IndexUnavailableError(
                f"pack '{self.slug}': version {self._version} is closed (a newer version took "
                "its place, or the server is stopping) — ask again"
            )
        if conn is None or conn.closed:
            conn = connect(self._dsn, at_start=False)
            conn.execute(f'SET search_path TO "{self.schema}", public')
            self._local.conn = conn
            with self._lock:
                self._conns = [c for c in self._conns if not c.closed] + [conn]
        return conn

    def _run(self, query: Callable[[Any], T]) -> T:
        """``query`` on this thread's connection; a broken connection is replaced and the
        query tried once more, then it is one line (and ``/health`` degraded)."""
        psycopg = psycopg_module()
        for attempt in (1, 2):
            try:
                out = query(self._conn())
            except psycopg.errors.QueryCanceled:  # a statement_timeout: the caller's to answer
                raise
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                self._drop_conn()
                if attempt == 2 or self._closed:
                    self._lost = f"PostgreSQL connection lost ({first_line(exc)})"
                    raise IndexUnavailableError(
                        f"pack '{self.slug}': the PostgreSQL server of the index does not answer "
                        f"({first_line(exc)}) — try again shortly"
                    ) from None
                logger.warning("pack %s: PostgreSQL connection lost — retrying once", self.slug)
                continue
            except IndexUnavailableError as exc:  # could not reconnect
                self._lost = f"PostgreSQL connection lost, not reopened ({exc})"
                raise
            except psycopg.errors.UndefinedTable:
                raise IndexUnavailableError(
                    f"pack '{self.slug}': version {self._version} was removed from PostgreSQL "
                    "— this server switches to the current one at its next poll; ask again"
                ) from None
            self._lost = None
            return out
        raise AssertionError("unreachable")

    def _drop_conn(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except (psycopg_module().Error, OSError):  # a broken socket may refuse even this
                logger.debug("closing a broken connection failed", exc_info=True)

    def backend_pid(self) -> int:
        """The server process of this thread's connection (benchmarks read its CPU)."""
        return int(self._run(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0]))

    def _count(self, table: str) -> int:
        return int(self._run(lambda c: c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]))

    # -- what the runtime reads (constant for a version: read once) -------------------------

    @property
    def location(self) -> str:
        return f"PostgreSQL (schema {self.schema}, version {self._version})"

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def write_problem(self) -> str | None:
        return None

    def problems(self) -> list[str]:
        lost = self._lost
        return [f"{lost} — retried on the next query"] if lost else []

    def features(self) -> dict[str, Any]:
        return dict(self._features)

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def embedding_model(self) -> str | None:
        name = self._features.get("embedder")
        return str(name) if name else None

    def dimension(self) -> int | None:
        dim = self._features.get("dimension")
        return int(dim) if dim else None

    def has_vectors(self) -> bool:
        return self._counts["vectors"] > 0

    def pending_count(self) -> int:
        return self._counts["pending"]

    def window_count(self) -> int:
        """Later embedding windows loaded (0 for a version loaded before windows)."""
        return self._windows

    def close(self) -> None:
        self._closed = True
        errors = (psycopg_module().Error, OSError)
        with self._lock:
            for conn in self._conns:
                try:
                    conn.close()
                except errors:  # closing must never fail a swap
                    logger.debug("closing a connection failed", exc_info=True)
            self._conns.clear()

    # -- the lexical leg: FTS5's BM25 (pgbm25) ------------------------------------------------

    def _df(self, conn: Any, tokens: Sequence[str]) -> dict[str, int]:
        rows = conn.execute(
            "SELECT term, df FROM terms WHERE term = ANY(%s)", (list(set(tokens)),)
        ).fetchall()
        return {str(t): int(n) for t, n in rows}

    def lexical_top(
        self,
        terms: Sequence[str],
        n: int,
        *,
        weights: tuple[float, float, float] = (1.0, 3.0, 2.0),
        time_limit_ms: int = 250,
    ) -> list[tuple[int, float]]:
        """Chunks matching any term, best BM25 first, as (chunk_id, score ≥ 0): FTS5's
        answer; past ``time_limit_ms`` the query is cancelled and answers nothing."""
        tokens = [tok for _, toks in pgbm25.phrases(terms) for tok in toks]
        if not tokens or n <= 0:
            return []
        avgdl = self._tokens / self._rows if self._rows else 0.0
        psycopg = psycopg_module()

        def run(conn: Any) -> list[tuple[int, float]]:
            with conn.transaction():
                limit = str(max(1, time_limit_ms))  # 0 is no limit to PostgreSQL
                conn.execute("SELECT set_config('statement_timeout', %s, true)", (limit,))
                df = self._df(conn, tokens)
                idfs = [pgbm25.idf(self._rows, df.get(t, 0)) for t in tokens]
                params = pgbm25.top_params(tokens, idfs, n, weights, avgdl)
                rows = conn.execute(pgbm25.TOP_SQL, params).fetchall()
            return [(int(cid), float(s)) for cid, s in rows]

        try:
            return self._run(run)
        except psycopg.errors.QueryCanceled:
            logger.warning("lexical search hit its %d ms limit — no lexical result", time_limit_ms)
            return []

    def term_counts(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """Chunks holding each term (its tokens' least row count when it has several)."""
        found = pgbm25.phrases(terms)
        tokens = [tok for _, toks in found for tok in toks]
        df = self._run(lambda c: self._df(c, tokens)) if tokens else {}
        counts = {t: min((df.get(x, 0) for x in toks), default=0) for t, toks in found}
        return counts, self._rows

    # -- the vector leg: pgvector HNSW ------------------------------------------------------

    def vector_top(self, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine similarity, best first, as (chunk_id, similarity): each
        chunk once, at the best of its embedding windows (as ``Store.vector_top``)."""
        if not self.has_vectors() or n <= 0:
            return []

        dim = self.dimension()
        if dim is not None and query.shape[0] != dim:
            raise dimension_error(query.shape[0], f"the index {dim}")
        literal = "[" + ",".join(repr(float(x)) for x in query.tolist()) + "]"

        def run(conn: Any) -> list[tuple[int, float]]:
            with conn.transaction():
                if self._windows:
                    return pgwindows.top(conn, literal, n, self.ef_search)
                pgwindows.set_ef(conn, n, self.ef_search)
                rows = conn.execute(
                    "SELECT chunk_id, 1 - (vec <=> %s::vector) AS sim FROM vectors "
                    "ORDER BY vec <=> %s::vector LIMIT %s",
                    (literal, literal, n),
                ).fetchall()
            return [(int(cid), float(sim)) for cid, sim in rows]

        return self._run(run)

    def vectors_for(self, chunk_ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """One vector per chunk (its first window: what the model reads of its head)."""
        import numpy as np

        if not chunk_ids or not self.has_vectors():
            return {}
        rows = self._run(
            lambda c: c.execute(
                "SELECT chunk_id, vec::real[] FROM vectors WHERE chunk_id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        )
        return {int(cid): np.asarray(vec, dtype=np.float32) for cid, vec in rows}

    # -- reads -------------------------------------------------------------------------------

    def chunks_by_ids(self, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]:
        if not chunk_ids:
            return {}
        rows = self._run(
            lambda c: c.execute(CHUNK_SQL + "WHERE c.id = ANY(%s)", (list(chunk_ids),)).fetchall()
        )
        return {sc.id: sc for sc in map(StoreReads._row, rows)}

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        rows = self._run(
            lambda c: c.execute(
                CHUNK_SQL + "WHERE c.path = %s ORDER BY c.chunk_index", (path,)
            ).fetchall()
        )
        return [StoreReads._row(r) for r in rows]

    def file_tokens(self, paths: Sequence[str]) -> dict[str, int]:
        rows = self._run(
            lambda c: c.execute(
                "SELECT path, sum(tokens) FROM chunks WHERE path = ANY(%s) GROUP BY path",
                (list(paths),),
            ).fetchall()
        )
        return {str(p): int(t) for p, t in rows}

    def paths_of(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        rows = self._run(
            lambda c: c.execute(
                "SELECT id, path FROM chunks WHERE id = ANY(%s)", (list(chunk_ids),)
            ).fetchall()
        )
        return {int(i): str(p) for i, p in rows}

    # -- the embedding cache (file profiles) -------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        import numpy as np

        if not keys:
            return {}
        rows = self._run(
            lambda c: c.execute(
                "SELECT key, vec FROM embed_cache WHERE key = ANY(%s)", (list(keys),)
            ).fetchall()
        )
        return {
            str(key): np.frombuffer(bytes(blob), dtype="<f4")
            for key, blob in rows
            if len(blob) == 4 * key_dimension(str(key))  # a damaged entry is embedded again
        }

    def try_cache_vectors(self, items: Mapping[str, npt.NDArray[np.float32]]) -> bool:
        return False  # a published version is never written: profiles cost one embedding
