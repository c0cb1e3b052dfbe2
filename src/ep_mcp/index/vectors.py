"""The vector side of the index: float32 BLOBs, the exact numpy scan, the sqlite-vec mirror.

Vectors live in the ``vectors`` table (the store writes them). They are searched either by an
exact scan over an in-memory matrix (``VectorMatrix``, reloaded when the index's generation
changes) or through sqlite-vec's ``vec0`` table ``chunks_vec``, kept as a mirror whenever the
extension loads. numpy is imported where vectors are touched: a no-change run never needs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from ep_mcp.errors import IndexBuildError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

Connection = Any  # an apsw.Connection (apsw rows are loosely typed)


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


def load_sqlite_vec(conn: Connection) -> None:
    import sqlite_vec

    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())


def blob(vec: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.ascontiguousarray(vec, dtype="<f4").tobytes()


def dimension_error(got: int, detail: str) -> IndexBuildError:
    return IndexBuildError(
        f"query vector has {got} dimensions, {detail} — re-index with the same embedding model"
    )


# -- the sqlite-vec mirror ------------------------------------------------------------------


def has_vec0(conn: Connection) -> bool:
    rows = conn.execute("SELECT 1 FROM sqlite_master WHERE name='chunks_vec'").fetchall()
    return bool(rows)


def ensure_vec0(conn: Connection, dim: int) -> None:
    if not has_vec0(conn):
        conn.execute(
            f"CREATE VIRTUAL TABLE chunks_vec USING vec0(chunk_id INTEGER PRIMARY KEY, "
            f"embedding float[{int(dim)}] distance_metric=cosine)"
        )


def drop_vec0(conn: Connection) -> None:
    if has_vec0(conn):
        conn.execute("DROP TABLE chunks_vec")


def vec0_insert(conn: Connection, chunk_id: int, vec: bytes, dim: int) -> None:
    ensure_vec0(conn, dim)
    conn.execute("INSERT INTO chunks_vec(chunk_id, embedding) VALUES(?,?)", (chunk_id, vec))


def vec0_delete(conn: Connection, chunk_id: int) -> None:
    conn.execute("DELETE FROM chunks_vec WHERE chunk_id=?", (chunk_id,))


def vec0_top(conn: Connection, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
    """Nearest chunks through vec0, best first, as (chunk_id, cosine similarity)."""
    try:
        rows = conn.execute(
            "SELECT chunk_id, distance FROM chunks_vec "
            "WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (blob(query), int(n)),
        ).fetchall()
    except apsw.SQLError as exc:  # vec0 refuses a vector of another dimension
        raise dimension_error(query.shape[0], f"which the index does not accept ({exc})") from exc
    return [(int(cid), 1.0 - float(dist)) for cid, dist in rows]


# -- the exact numpy scan -------------------------------------------------------------------


class VectorMatrix:
    """Every stored vector as one matrix, kept per index generation.

    Loads under ``lock`` (the store's: no write commits halfway through a load).
    """

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._loaded: tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float32]] | None = None
        self.skipped: list[int] = []  # chunk ids of the last load's vectors of the wrong size

    def forget(self) -> None:
        self._loaded = None

    def load(
        self, conn: Connection, generation: int, dimension: int | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(ids ascending, matrix) of ``generation``, read from ``conn`` unless already held.

        A vector whose size is not ``dimension``'s (else the most common size) is damaged: it
        is left out and its chunk id kept in ``skipped``, so one bad row costs that row only.
        """
        import numpy as np

        cached = self._loaded
        if cached is not None and cached[0] == generation:
            return cached[1], cached[2]
        with self._lock:
            rows = conn.execute("SELECT chunk_id, vec FROM vectors ORDER BY chunk_id")
            ids: list[int] = []
            blobs: list[bytes] = []
            for cid, data in rows:
                ids.append(int(cid))
                blobs.append(bytes(data))
            size = 4 * dimension if dimension else _common_size(blobs)
            self.skipped = [cid for cid, b in zip(ids, blobs, strict=True) if len(b) != size]
            if self.skipped:
                kept = [(cid, b) for cid, b in zip(ids, blobs, strict=True) if len(b) == size]
                ids, blobs = [cid for cid, _ in kept], [b for _, b in kept]
            if blobs:
                dim = size // 4
                mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
            else:
                mat = np.zeros((0, 0), dtype=np.float32)
            loaded = (generation, np.asarray(ids, dtype=np.int64), mat.astype(np.float32))
            self._loaded = loaded
        return loaded[1], loaded[2]


def _common_size(blobs: Sequence[bytes]) -> int:
    """The most common blob size, as a whole number of float32s (0 for none)."""
    sizes: dict[int, int] = {}
    for b in blobs:
        sizes[len(b)] = sizes.get(len(b), 0) + 1
    best = max(sizes, key=lambda n: (sizes[n], n), default=0)
    return best - best % 4


def matrix_top(
    ids: npt.NDArray[np.int64],
    mat: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    n: int,
) -> list[tuple[int, float]]:
    """The exact top ``n`` by cosine (rows and query unit length), best first."""
    import numpy as np

    if len(ids) == 0:
        return []
    if mat.shape[1] != query.shape[0]:
        raise dimension_error(query.shape[0], f"the index {mat.shape[1]}")
    sims = mat @ query.astype(np.float32)
    n = min(n, len(ids))
    top = np.argpartition(-sims, n - 1)[:n]
    top = top[np.argsort(-sims[top], kind="stable")]
    # tolist: the same Python ints and floats as int()/float() per element, in one call
    return list(zip(ids[top].tolist(), sims[top].tolist(), strict=True))


def matrix_rows(
    ids: npt.NDArray[np.int64], mat: npt.NDArray[np.float32], chunk_ids: Sequence[int]
) -> dict[int, npt.NDArray[np.float32]]:
    """The stored vector of each of ``chunk_ids`` that has one."""
    import numpy as np

    if len(ids) == 0:
        return {}
    pos = np.searchsorted(ids, np.asarray(chunk_ids, dtype=np.int64))
    out: dict[int, npt.NDArray[np.float32]] = {}
    for cid, p in zip(chunk_ids, pos, strict=True):
        if p < len(ids) and ids[p] == cid:
            out[cid] = mat[p]
    return out


def choose_engine(
    conn: Connection, wanted: str, status: Callable[[], tuple[bool, str]] = sqlite_vec_status
) -> tuple[str, bool]:
    """Which engine answers vector queries, and whether the vec0 mirror is kept.

    ``auto`` keeps the sqlite-vec mirror when the extension loads but answers with the exact
    numpy scan over an in-memory matrix, which measured 3 to 4 times faster at every size up to
    100k chunks (docs/BENCHMARKS.md); ``sqlite-vec`` answers through vec0 (no matrix in
    memory); ``numpy`` never loads the extension.
    """
    if wanted == "numpy":
        return "numpy", False
    ok, detail = status()
    if ok:
        load_sqlite_vec(conn)
        return ("sqlite-vec" if wanted == "sqlite-vec" else "numpy"), True
    if wanted == "sqlite-vec":
        logger.warning("sqlite-vec did not load (%s) — using the exact numpy scan", detail)
    else:
        logger.info("sqlite-vec is not available (%s) — using the exact numpy scan", detail)
    return "numpy", False
