"""The vector side of the index: float32 BLOBs, the exact numpy scan, the sqlite-vec mirror.

A chunk's vector lives in the ``vectors`` table (its first embedding window: the chunk's indexed
text as the model reads its head); a chunk longer than the model's window has its later windows
in ``chunk_windows`` (``index/windows.py``). A chunk's similarity to a query is the best of its
windows', so a search returns chunks, each once; ``vectors_for`` gives one vector per chunk (its
first window). They are searched either by an exact scan over in-memory matrices
(``VectorMatrix``, reloaded when the index's generation changes) or through sqlite-vec's
``vec0`` tables ``chunks_vec`` and ``windows_vec``, kept as a mirror whenever the extension
loads. numpy is imported where vectors are touched: a no-change run never needs it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(vec0_path())
        version = conn.execute("select vec_version()").fetchall()[0][0]
        conn.close()
        return True, str(version)
    except Exception as exc:  # any failure means "not available", with the reason
        return False, f"{type(exc).__name__}: {exc}"


def vec0_path() -> str:
    """sqlite-vec's loadable extension (``vec0`` in its package folder, as its
    ``loadable_path()`` says), found without running the package: its ``__init__`` imports
    sqlite3 and numpy, which opening an index does not need."""
    spec = importlib.util.find_spec("sqlite_vec")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not folders:
        raise ModuleNotFoundError("No module named 'sqlite_vec'", name="sqlite_vec")
    return os.path.normpath(os.path.join(folders[0], "vec0"))


def load_sqlite_vec(conn: Connection) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(vec0_path())


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


def _has(conn: Connection, name: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (name,)).fetchall())


def drop_vec0(conn: Connection) -> None:
    for table in ("chunks_vec", "windows_vec"):
        if _has(conn, table):
            conn.execute(f"DROP TABLE {table}")


def vec0_insert(conn: Connection, chunk_id: int, vec: bytes, dim: int) -> None:
    ensure_vec0(conn, dim)
    conn.execute("INSERT INTO chunks_vec(chunk_id, embedding) VALUES(?,?)", (chunk_id, vec))


def vec0_insert_window(conn: Connection, window_id: int, vec: bytes, dim: int) -> None:
    """Mirror one later window (``chunk_windows.id``) in ``windows_vec``."""
    if not _has(conn, "windows_vec"):
        conn.execute(
            f"CREATE VIRTUAL TABLE windows_vec USING vec0(window_id INTEGER PRIMARY KEY, "
            f"embedding float[{int(dim)}] distance_metric=cosine)"
        )
    conn.execute("INSERT INTO windows_vec(window_id, embedding) VALUES(?,?)", (window_id, vec))


def vec0_delete(conn: Connection, chunk_id: int) -> None:
    """Drop a chunk's vector and its later windows from the mirror (before their rows go)."""
    conn.execute("DELETE FROM chunks_vec WHERE chunk_id=?", (chunk_id,))
    if _has(conn, "windows_vec"):
        conn.execute(
            "DELETE FROM windows_vec WHERE window_id IN "
            "(SELECT id FROM chunk_windows WHERE chunk_id=?)",
            (chunk_id,),
        )


def _knn(conn: Connection, table: str, key: str, query: bytes, k: int) -> list[tuple[int, float]]:
    rows = conn.execute(
        f"SELECT {key}, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (query, int(k)),
    ).fetchall()
    return [(int(rid), 1.0 - float(dist)) for rid, dist in rows]


def vec0_top(conn: Connection, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
    """Nearest chunks through vec0, best first, as (chunk_id, cosine similarity): each chunk
    once, at the best of its windows. The candidates are the ``n`` nearest first windows
    (``chunks_vec``) and the owners of the nearest later ones (``windows_vec``, read until
    ``n`` chunks are among them, or all): no chunk outside them can rank in the top ``n``.
    Their similarities are then computed exactly from the stored rows."""
    data = blob(query)
    try:
        candidates = {cid for cid, _ in _knn(conn, "chunks_vec", "chunk_id", data, n)}
        if _has(conn, "windows_vec"):
            k = 2 * n
            while True:
                rows = _knn(conn, "windows_vec", "window_id", data, k)
                owners = set(_window_owners(conn, [wid for wid, _ in rows]).values())
                if len(owners) >= n or len(rows) < k:
                    break
                k *= 2
            candidates |= owners
    except apsw.SQLError as exc:  # vec0 refuses a vector of another dimension
        raise dimension_error(query.shape[0], f"which the index does not accept ({exc})") from exc
    ranked = sorted(_exact(conn, sorted(candidates), query).items(), key=lambda x: (-x[1], x[0]))
    return ranked[:n]


def _exact(
    conn: Connection, chunk_ids: Sequence[int], query: npt.NDArray[np.float32]
) -> dict[int, float]:
    """chunk id → the best cosine of its stored windows (rows of the wrong size skipped)."""
    import numpy as np

    best: dict[int, float] = {}
    if not chunk_ids:
        return best
    marks = ",".join("?" * len(chunk_ids))
    q = query.astype(np.float32)
    size = 4 * q.shape[0]
    for table in ("vectors", "chunk_windows")[: 2 if _has(conn, "chunk_windows") else 1]:
        for cid, data in conn.execute(
            f"SELECT chunk_id, vec FROM {table} WHERE chunk_id IN ({marks})", tuple(chunk_ids)
        ):
            if len(data) == size:
                sim = float(np.frombuffer(data, dtype="<f4") @ q)
                best[int(cid)] = max(best.get(int(cid), sim), sim)
    return best


def _window_owners(conn: Connection, window_ids: Sequence[int]) -> dict[int, int]:
    """window id → chunk id, for the windows found."""
    if not window_ids:
        return {}
    marks = ",".join("?" * len(window_ids))
    rows = conn.execute(
        f"SELECT id, chunk_id FROM chunk_windows WHERE id IN ({marks})", tuple(window_ids)
    )
    return {int(wid): int(cid) for wid, cid in rows}


# -- the exact numpy scan -------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """Every stored vector of one generation: ``ids`` ascending with their first windows as
    ``mat`` rows; the later windows as ``windows`` rows, grouped by chunk — group ``g`` starts
    at row ``starts[g]`` and belongs to the chunk at ``ids[owners[g]]``."""

    ids: npt.NDArray[np.int64]
    mat: npt.NDArray[np.float32]
    owners: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    windows: npt.NDArray[np.float32]


class VectorMatrix:
    """Every stored vector as matrices, kept per index generation.

    Loads under ``lock`` (the store's: no write commits halfway through a load).
    """

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._loaded: tuple[int, Loaded] | None = None
        self.skipped: list[int] = []  # chunk ids of the last load's vectors of the wrong size

    def forget(self) -> None:
        self._loaded = None

    def load(self, conn: Connection, generation: int, dimension: int | None = None) -> Loaded:
        """The vectors of ``generation``, read from ``conn`` unless already held.

        A vector whose size is not ``dimension``'s (else the most common size) is damaged: it
        is left out and its chunk id kept in ``skipped``, so one bad row costs that row only
        (a damaged later window costs that window).
        """
        cached = self._loaded
        if cached is not None and cached[0] == generation:
            return cached[1]
        with self._lock:
            first, blobs = _rows(conn, "SELECT chunk_id, vec FROM vectors ORDER BY chunk_id")
            size = 4 * dimension if dimension else _common_size(blobs)
            ids, mat, skipped = _matrix(first, blobs, size)
            try:
                wids, wblobs = _rows(
                    conn, "SELECT chunk_id, vec FROM chunk_windows ORDER BY chunk_id, position"
                )
            except apsw.SQLError:  # a read-only index of schema 2: no later windows
                wids, wblobs = [], []
            owned, windows, wskipped = _matrix(wids, wblobs, size)
            self.skipped = sorted({*skipped, *wskipped})
            keep = _owned_mask(ids, owned)  # a window whose chunk has no first one: left out
            if not keep.all():
                owned, windows = owned[keep], windows[keep]
            loaded = Loaded(ids, mat, *_groups(ids, owned), windows)
            self._loaded = (generation, loaded)
        return loaded


def _rows(conn: Connection, sql: str) -> tuple[list[int], list[bytes]]:
    ids: list[int] = []
    blobs: list[bytes] = []
    for cid, data in conn.execute(sql):
        ids.append(int(cid))
        blobs.append(bytes(data))
    return ids, blobs


def _matrix(
    ids: list[int], blobs: list[bytes], size: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], list[int]]:
    """(ids, rows, ids of the rows of the wrong size, left out)."""
    import numpy as np

    skipped = [cid for cid, b in zip(ids, blobs, strict=True) if len(b) != size]
    if skipped:
        kept = [(cid, b) for cid, b in zip(ids, blobs, strict=True) if len(b) == size]
        ids, blobs = [cid for cid, _ in kept], [b for _, b in kept]
    if blobs:
        dim = size // 4
        mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
    else:
        mat = np.zeros((0, size // 4 if size else 0), dtype=np.float32)
    return np.asarray(ids, dtype=np.int64), mat.astype(np.float32), skipped


def _owned_mask(ids: npt.NDArray[np.int64], owned: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """Which later windows belong to a chunk with a first window (others are left out)."""
    import numpy as np

    if len(ids) == 0:
        return np.zeros(len(owned), dtype=bool)
    pos = np.minimum(np.searchsorted(ids, owned), len(ids) - 1)
    mask: npt.NDArray[Any] = ids[pos] == owned
    return mask


def _groups(
    ids: npt.NDArray[np.int64], owned: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(position in ``ids`` of each group's chunk, first row of each group) of windows sorted
    by chunk id."""
    import numpy as np

    if len(owned) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    starts = np.flatnonzero(np.r_[True, owned[1:] != owned[:-1]]).astype(np.int64)
    return np.searchsorted(ids, owned[starts]).astype(np.int64), starts


def _common_size(blobs: Sequence[bytes]) -> int:
    """The most common blob size, as a whole number of float32s (0 for none)."""
    sizes: dict[int, int] = {}
    for b in blobs:
        sizes[len(b)] = sizes.get(len(b), 0) + 1
    best = max(sizes, key=lambda n: (sizes[n], n), default=0)
    return best - best % 4


def similarities(loaded: Loaded, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each chunk's (``loaded.ids``') cosine to the query: the best of its windows."""
    import numpy as np

    if loaded.mat.shape[1] != query.shape[0]:
        raise dimension_error(query.shape[0], f"the index {loaded.mat.shape[1]}")
    q = np.asarray(query, dtype=np.float32)  # no copy: a query vector is float32 already
    sims: npt.NDArray[np.float32] = loaded.mat @ q
    if len(loaded.starts):
        later = np.maximum.reduceat(loaded.windows @ q, loaded.starts)
        sims[loaded.owners] = np.maximum(sims[loaded.owners], later)
    return sims


def matrix_top(loaded: Loaded, query: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
    """The exact top ``n`` chunks by cosine (rows and query unit length), best first, equal
    cosines by chunk id — as PostgreSQL ranks them (``pgwindows``), and the same on every run
    whatever the partition picks (duplicate texts have equal cosines)."""
    import numpy as np

    ids = loaded.ids
    if len(ids) == 0 or n <= 0:
        return []
    sims = similarities(loaded, query)
    finite = np.flatnonzero(np.isfinite(sims))  # a damaged row's NaN is left out
    if len(finite) == 0:
        return []
    n = min(n, len(finite))
    cut = np.partition(-sims[finite], n - 1)[n - 1]  # the n-th best, negated
    # every chunk at least that good, ties at the cut included; ids ascend with the rows, so a
    # stable sort on the cosine leaves equal ones in chunk-id order
    top = finite[-sims[finite] <= cut]
    top = top[np.argsort(-sims[top], kind="stable")][:n]
    # tolist: the same Python ints and floats as int()/float() per element, in one call
    return list(zip(ids[top].tolist(), sims[top].tolist(), strict=True))


def matrix_rows(loaded: Loaded, chunk_ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
    """The vector of each of ``chunk_ids`` that has one: its first window's."""
    import numpy as np

    ids, mat = loaded.ids, loaded.mat
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
