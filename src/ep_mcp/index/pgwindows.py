"""The vector leg of a PostgreSQL version with embedding windows: each chunk once, at its best.

A chunk's first window is in ``vectors``, its later ones in ``chunk_windows`` (``pgload``);
its similarity to a query is the best of its windows', as on SQLite (``vectors.py``). The
candidates are the ones SQLite's vec0 path takes (``vectors.vec0_top``): the ``n`` nearest
first windows (HNSW on ``vectors``) and the owners of the nearest later windows (HNSW on
``chunk_windows``, read ``2n`` at a time, doubled until ``n`` chunks are among them or the
table is read out) — no chunk outside them can rank in the top ``n``. Their similarities are
then computed from every stored window of theirs, and ranked best first, ties by chunk id.

HNSW returns at most ``hnsw.ef_search`` rows (pgvector caps it at ``EF_MAX``): when the
windows needed are more than that (a few chunks with very many close windows), the top ``n``
is computed over every window instead, exact and rare.
"""

from __future__ import annotations

from typing import Any

EF_MAX = 1000  # pgvector's largest hnsw.ef_search

SCORED = """
    SELECT chunk_id, max(1 - (vec <=> %(q)s::vector)) AS sim FROM (
        SELECT chunk_id, vec FROM vectors WHERE chunk_id = ANY(%(ids)s)
        UNION ALL
        SELECT chunk_id, vec FROM chunk_windows WHERE chunk_id = ANY(%(ids)s)
    ) AS w GROUP BY chunk_id ORDER BY sim DESC, chunk_id LIMIT %(n)s
"""

EVERY = """
    SELECT w.chunk_id, max(1 - (w.vec <=> %(q)s::vector)) AS sim FROM (
        SELECT chunk_id, vec FROM vectors
        UNION ALL
        SELECT c.chunk_id, c.vec FROM chunk_windows c JOIN vectors v ON v.chunk_id = c.chunk_id
    ) AS w GROUP BY w.chunk_id ORDER BY sim DESC, w.chunk_id LIMIT %(n)s
"""


def set_ef(conn: Any, k: int, ef_search: int) -> None:
    """HNSW's candidate list for a query of ``k`` rows: ``ef_search``, at least ``2k``, at
    most ``EF_MAX`` (for this transaction)."""
    ef = str(min(EF_MAX, max(ef_search, 2 * k)))
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef,))


def _nearest(conn: Any, table: str, literal: str, k: int) -> list[int]:
    rows = conn.execute(
        f"SELECT chunk_id FROM {table} ORDER BY vec <=> %s::vector LIMIT %s", (literal, k)
    ).fetchall()
    return [int(cid) for (cid,) in rows]


def top(conn: Any, literal: str, n: int, ef_search: int) -> list[tuple[int, float]]:
    """The top ``n`` chunks for the query vector ``literal`` (pgvector's text form), inside
    the caller's transaction: (chunk_id, similarity), best first."""
    set_ef(conn, n, ef_search)
    candidates = set(_nearest(conn, "vectors", literal, n))
    k = 2 * n
    while True:
        if k > EF_MAX:  # more than HNSW returns: every window scored instead
            rows = conn.execute(EVERY, {"q": literal, "n": n}).fetchall()
            return [(int(cid), float(sim)) for cid, sim in rows]
        set_ef(conn, k, ef_search)
        found = _nearest(conn, "chunk_windows", literal, k)
        owners = set(found)
        if len(owners) >= n or len(found) < k:
            break
        k *= 2
    candidates |= owners
    rows = conn.execute(SCORED, {"q": literal, "ids": sorted(candidates), "n": n}).fetchall()
    return [(int(cid), float(sim)) for cid, sim in rows]
