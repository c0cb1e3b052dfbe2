"""Is the content of an index whole? The checks SQLite's own cannot make, and the repair.

SQLite's quick check proves the b-trees sound, not the rows: a vector a byte short, or chunk
rows deleted, pass it and then break every search or go unnoticed. So opening an index also
counts the rows against each other and checks the size of every stored vector against the
index's dimension — in full up to ``FULL_CHECK_MAX_ROWS`` vectors, on ``SAMPLE_ROWS`` rows in
runs spread over the table above it (a bad row missed there is skipped at query time, and found
then). What is found is repaired by the next build: bad or missing vectors are queued as
pending and embedded again, files whose chunk rows are missing are indexed again.

Measured on this machine (SQLite 3.54, warm cache, docs/BENCHMARKS.md): the whole check costs
about 1.5 ms on the SciFact index (5k files) and 55 ms on a synthetic 100k-chunk index.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import apsw

FULL_CHECK_MAX_ROWS = 50_000
SAMPLE_ROWS = 5_000
SAMPLE_RUN = 100  # rows read from each random start

Connection = Any  # an apsw.Connection


@dataclass(frozen=True)
class VectorCheck:
    """What opening found: vectors of the wrong size (in the rows looked at), chunks with no
    vector and none pending, vectors of no chunk, files missing chunk rows."""

    bad: int = 0
    missing: int = 0
    orphans: int = 0
    incomplete_files: int = 0
    sampled: bool = False

    def problem(self) -> str | None:
        """One line for /health and the log, or None when the content is whole."""
        parts = []
        if self.bad:
            parts.append(f"{self.bad} damaged vector(s)")
        if self.missing:
            parts.append(f"{self.missing} chunk(s) without a vector")
        if self.orphans:
            parts.append(f"{self.orphans} vector(s) of no chunk")
        if self.incomplete_files:
            parts.append(f"{self.incomplete_files} file(s) missing chunk rows")
        return ", ".join(parts) or None


def _one(conn: Connection, sql: str, args: tuple[Any, ...] = ()) -> int:
    return int(conn.execute(sql, args).fetchall()[0][0] or 0)


INCOMPLETE_FILES = """
    SELECT f.path FROM files f LEFT JOIN (
        SELECT path, count(*) AS n, max(chunk_index) AS m FROM chunks GROUP BY path
    ) c ON c.path = f.path
    WHERE coalesce(c.n, 0) != coalesce(json_extract(f.info, '$.chunks'), c.m + 1, 0)
"""


def check(conn: Connection, dimension: int | None) -> VectorCheck:
    """The cheap open-time check (``dimension``: the index's, None for a lexical index)."""
    incomplete = len(conn.execute(INCOMPLETE_FILES).fetchall())
    if not dimension:
        return VectorCheck(incomplete_files=incomplete)
    chunks = _one(conn, "SELECT count(*) FROM chunks")
    vectors = _one(conn, "SELECT count(*) FROM vectors")
    try:
        pending = _one(conn, "SELECT count(*) FROM pending_vectors")
    except apsw.SQLError:  # a read-only index of schema 1: nothing is pending there
        pending = 0
    size = 4 * int(dimension)
    if vectors <= FULL_CHECK_MAX_ROWS:
        bad = _one(conn, "SELECT count(*) FROM vectors WHERE length(vec) != ?", (size,))
        sampled = False
    else:
        bad, sampled = _sampled_bad(conn, size, vectors), True
    gap = chunks - vectors - pending
    return VectorCheck(
        bad=bad,
        missing=max(gap, 0),
        orphans=max(-gap, 0),
        incomplete_files=incomplete,
        sampled=sampled,
    )


def _sampled_bad(conn: Connection, size: int, rows: int) -> int:
    low = _one(conn, "SELECT min(chunk_id) FROM vectors")
    high = _one(conn, "SELECT max(chunk_id) FROM vectors")
    rng = random.Random(rows)  # the same rows for the same index: a check that repeats itself
    bad = 0
    for _ in range(SAMPLE_ROWS // SAMPLE_RUN):
        start = rng.randint(low, high)
        bad += _one(
            conn,
            "SELECT count(*) FROM (SELECT vec FROM vectors WHERE chunk_id >= ? "
            "ORDER BY chunk_id LIMIT ?) WHERE length(vec) != ?",
            (start, SAMPLE_RUN, size),
        )
    return bad


# -- the repair (inside the build's own transaction) ---------------------------------------


def queue_damaged(conn: Connection, dimension: int, vec0: bool) -> list[int]:
    """Drop every vector of no chunk; queue every chunk whose vector is of the wrong size or
    missing (and not already pending) as pending, to be embedded again: their chunk ids."""
    mirror = vec0 and bool(
        conn.execute("SELECT 1 FROM sqlite_master WHERE name='chunks_vec'").fetchall()
    )
    for table in ("vectors", "pending_vectors", *(("chunks_vec",) if mirror else ())):
        conn.execute(f"DELETE FROM {table} WHERE chunk_id NOT IN (SELECT id FROM chunks)")
    ids = [
        int(r[0])
        for r in conn.execute(
            "SELECT c.id FROM chunks c LEFT JOIN vectors v ON v.chunk_id = c.id "
            "WHERE c.id NOT IN (SELECT chunk_id FROM pending_vectors) "
            "AND (v.chunk_id IS NULL OR length(v.vec) != ?)",
            (4 * int(dimension),),
        )
    ]
    for cid in ids:
        conn.execute("DELETE FROM vectors WHERE chunk_id=?", (cid,))
        if mirror:
            conn.execute("DELETE FROM chunks_vec WHERE chunk_id=?", (cid,))
        conn.execute("INSERT OR IGNORE INTO pending_vectors(chunk_id) VALUES(?)", (cid,))
    return ids


def incomplete_files(conn: Connection) -> list[str]:
    """Files some of whose chunk rows are gone (their lexical rows of no chunk are dropped
    too): the build indexes them again."""
    conn.execute("DELETE FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)")
    return sorted(str(r[0]) for r in conn.execute(INCOMPLETE_FILES))
