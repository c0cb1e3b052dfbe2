"""The vector leg of a PostgreSQL version with embedding windows: each chunk once, at its best.

A chunk's first window is in ``vectors``, its later ones in ``chunk_windows`` (``pgload``);
its similarity to a query is the best of its windows', as on SQLite (``vectors.py``). The
candidates are the ones SQLite's vec0 path takes (``vectors.vec0_top``): the ``n`` nearest
first windows (HNSW on ``vectors``) and the owners of the nearest later windows (HNSW on
``chunk_windows``, ``2n`` of them, doubled until ``n`` chunks are among them or the table is
read out) — no chunk outside them can rank in the top ``n``. Their similarities are then
computed from every stored window of theirs and ranked best first, ties by chunk id. The
first read of ``2n`` windows and the scoring are one statement (``AT_ONCE``): one round trip
unless a few chunks own all of those windows.

HNSW returns at most ``hnsw.ef_search`` rows (pgvector caps it at ``EF_MAX``): when the
windows needed are more than that, the top ``n`` is computed over every window instead,
exact and rare.
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

# the common case in one statement: the candidates of the first read of ``2n`` later windows,
# scored, with how many windows that read found and how many chunks own them (``w`` is read
# three times: PostgreSQL computes it once)
AT_ONCE = """
    WITH w AS (
        SELECT chunk_id FROM chunk_windows ORDER BY vec <=> %(q)s::vector LIMIT %(k)s
    ), c AS (
        SELECT chunk_id FROM (
            SELECT chunk_id FROM vectors ORDER BY vec <=> %(q)s::vector LIMIT %(n)s
        ) AS f
        UNION SELECT chunk_id FROM w
    )
    SELECT s.chunk_id, max(1 - (s.vec <=> %(q)s::vector)) AS sim,
        (SELECT count(*) FROM w), (SELECT count(DISTINCT chunk_id) FROM w)
    FROM (
        SELECT chunk_id, vec FROM vectors WHERE chunk_id IN (SELECT chunk_id FROM c)
        UNION ALL
        SELECT chunk_id, vec FROM chunk_windows WHERE chunk_id IN (SELECT chunk_id FROM c)
    ) AS s GROUP BY s.chunk_id ORDER BY sim DESC, s.chunk_id LIMIT %(n)s
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
    if n <= 0:
        return []
    k = 2 * n
    if k <= EF_MAX:
        set_ef(conn, k, ef_search)
        rows = conn.execute(AT_ONCE, {"q": literal, "n": n, "k": k}).fetchall()
        if not rows or rows[0][3] >= n or rows[0][2] < k:  # n owners, or every window read
            return [(int(cid), float(sim)) for cid, sim, _, _ in rows]
        k *= 2
    set_ef(conn, n, ef_search)
    candidates = set(_nearest(conn, "vectors", literal, n))
    while k <= EF_MAX:  # k doubles from 2 on: at most log2(EF_MAX) reads
        set_ef(conn, k, ef_search)
        found = _nearest(conn, "chunk_windows", literal, k)
        owners = set(found)
        if len(owners) >= n or len(found) < k:
            ids = sorted(candidates | owners)
            rows = conn.execute(SCORED, {"q": literal, "ids": ids, "n": n}).fetchall()
            return [(int(cid), float(sim)) for cid, sim in rows]
        k *= 2
    # more than HNSW returns: every window scored instead, one statement over the tables (a
    # chunk holds at most `windows.MAX_WINDOWS`: the load refuses more)
    rows = conn.execute(EVERY, {"q": literal, "n": n}).fetchall()
    return [(int(cid), float(sim)) for cid, sim in rows]
