"""The lexical leg's SQL: FTS5 BM25 over the chunks, bounded in CPU time (``Store`` calls these)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import apsw

logger = logging.getLogger(__name__)


def top(
    conn: Any, terms: Sequence[str], n: int, weights: tuple[float, float, float], time_limit_ms: int
) -> list[tuple[int, float]]:
    """Chunks matching any term, best BM25 first, as (chunk_id, score ≥ 0).

    Terms are quoted here, so no FTS5 syntax from a user ever reaches SQLite; a query that
    runs past ``time_limit_ms`` of this thread's CPU time is cut short and returns what it has.
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
    # the limit is CPU time of this thread, not the wall clock: on a loaded machine a search
    # waiting for a core was cut short although it had barely run
    deadline = time.thread_time() + time_limit_ms / 1000.0
    out: list[tuple[int, float]] = []
    conn.set_progress_handler(lambda: int(time.thread_time() > deadline), 1000)
    try:
        for rowid, score in conn.execute(sql, (match, n)):
            out.append((int(rowid), float(score)))
    except apsw.InterruptError:
        logger.warning("lexical search hit its %d ms limit — partial result", time_limit_ms)
    except apsw.SQLError as exc:
        logger.warning("lexical search failed for %r: %s", match[:200], exc)
    finally:
        conn.set_progress_handler(None)
    return out


def term_counts(conn: Any, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    """Chunks containing each term (FTS5, stemmed) and the number of chunks: for IDF."""
    sql = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    safe = {t: t.replace('"', "") for t in terms if t.replace('"', "").strip()}
    counts = {t: int(conn.execute(sql, (f'"{q}"',)).fetchall()[0][0]) for t, q in safe.items()}
    return counts, int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])


class TermCounts:
    """``term_counts`` of one reader connection, remembered while the index stays the same.

    A term's chunk count and the number of chunks are constants of an index version: the
    confidence stage asks for them on every query (one FTS5 count per term and one of the
    chunks), so they are counted once per term per version. The version is SQLite's
    ``PRAGMA data_version`` of the connection, which changes whenever another connection
    (a build, a backfill) has committed; any change forgets everything counted.
    """

    MAX_TERMS = 8192  # remembered per version; past it the memory starts again

    def __init__(self) -> None:
        self.version: int | None = None
        self.total = 0
        self.counts: dict[str, int] = {}

    def __call__(self, conn: Any, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        version = int(conn.execute("PRAGMA data_version").fetchall()[0][0])
        if version != self.version or len(self.counts) > self.MAX_TERMS:
            self.version, self.counts = None, {}
            self.total = int(conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0])
            self.version = version
        unknown = [t for t in terms if t not in self.counts]
        if unknown:
            self.counts.update(term_counts(conn, unknown)[0])
        counts = self.counts
        return {t: counts[t] for t in terms if t in counts}, self.total
