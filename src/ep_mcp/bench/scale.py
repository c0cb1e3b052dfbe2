"""`ep-mcp bench scale`: where one machine ends, on synthetic indexes of N chunks.

The index is written straight through the store (`bench.query.synthetic_store`: synthetic
Zipf text, random 384-d unit vectors, the sqlite-vec mirror when the extension loads), then
each vector engine opens it read-only, as a server would, and answers hybrid searches with a
cached query embedding (the vector is given, so the number measures the index, not ONNX).
Reported per size: build time, file size, the build's peak RSS, and per engine the RSS the
opened index adds (the numpy engine holds every vector in memory) and p50/p95 latency of the
whole search and of the vector leg alone, and the searches per second ``CLIENTS`` threads
sharing the opened index answer (as a worker's request threads would). The postgres engine
adds the publish (the load) and publish-to-first-new-answer: a second version of the same
index is loaded, ``CLIENTS`` threads keep searching the served version while a poller reads
the pack's current version every ``server.artifact_poll_s`` (as the server's watcher does),
opens and warms a new one beside it and swaps it in; the figure is the time from the flip to
the first search answered by the new version.
"""

from __future__ import annotations

import gc
import logging
import os
import resource
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ep_mcp.bench.query import _VOCAB, synthetic_store
from ep_mcp.config.model import Settings
from ep_mcp.eval.metrics import percentile
from ep_mcp.index.pgconnect import connect, resolve_dsn
from ep_mcp.index.pgindex import PgIndex, current_version
from ep_mcp.index.pgload import flip, load_into_postgres
from ep_mcp.index.store import Store
from ep_mcp.retrieval import engine
from ep_mcp.retrieval.source import ChunkSource
from ep_mcp.retrieval.types import SearchRequest

if TYPE_CHECKING:
    from ep_mcp.index.pgindex import PgIndex

logger = logging.getLogger(__name__)

ENGINES = ("numpy", "sqlite-vec")  # and "postgres" when asked for (index.dsn)
DIM = 384
CLIENTS = 32  # concurrent searchers for the QPS and swap figures
SEARCHES_PER_CLIENT = 4  # the QPS figure is CLIENTS x this many searches
SWAP_BOUND_S = 600.0  # the swap measurement gives up (an error) if no new answer came by then


@dataclass(frozen=True)
class EngineRow:
    engine: str
    open_s: float  # open + the first query (the numpy engine loads its matrix then)
    rss_added_mb: float
    search_p50_ms: float
    search_p95_ms: float
    vector_p50_ms: float
    vector_p95_ms: float
    search_cpu_ms: float  # CPU time per search (queries per core = 1000 / this)
    server_cpu_ms: float = 0.0  # postgres: the backend's CPU per search (beside this one's)
    publish_s: float = 0.0  # postgres: loading the built index (COPY, HNSW, postings)
    qps: float = 0.0  # searches per second, CLIENTS threads sharing the opened index
    first_new_answer_s: float = 0.0  # postgres: the flip to the first answer from it
    poll_s: float = 0.0  # postgres: the poll interval the swap was measured with


@dataclass(frozen=True)
class ScaleRow:
    chunks: int
    build_s: float
    build_cpu_s: float  # CPU time of the build: on a shared machine wall time follows the load
    reused: bool  # the index was already on disk (build_s is then the open time)
    file_mb: float
    build_peak_rss_mb: float
    engines: tuple[EngineRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rss_mb() -> float:
    """This process's resident set now (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _queries(n: int, seed: int = 11) -> list[SearchRequest]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        vec = rng.normal(size=DIM).astype(np.float32)
        vec /= np.linalg.norm(vec)
        words = " ".join(_VOCAB[int(w)] for w in rng.integers(0, len(_VOCAB), size=4))
        out.append(SearchRequest(words, k=10, vector=tuple(float(x) for x in vec)))
    return out


def _ms(samples: list[float]) -> tuple[float, float]:
    return round(percentile(samples, 50), 2), round(percentile(samples, 95), 2)


def concurrent_qps(
    source: ChunkSource, reqs: Sequence[SearchRequest], settings: Settings, clients: int
) -> float:
    """Searches per second when ``clients`` threads answer ``reqs`` (each its share) at once
    over ``source``; every thread has made one search before the clock starts."""
    ready = threading.Barrier(clients + 1)
    warm = reqs[0]

    def client(mine: Sequence[SearchRequest]) -> None:
        engine.search(source, "synthetic", warm, settings.retrieval, None)  # its connection
        ready.wait()
        for req in mine:
            engine.search(source, "synthetic", req, settings.retrieval, None)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        futures = [pool.submit(client, reqs[i::clients]) for i in range(clients)]
        ready.wait()
        started = time.perf_counter()
        for f in futures:
            f.result()  # a failed search fails the benchmark
        took = time.perf_counter() - started
    return round(len(reqs) / took, 1)


def _qps_requests(n: int) -> list[SearchRequest]:
    return _queries(n, seed=23)


def _timed_searches(
    store: ChunkSource,
    reqs: Sequence[SearchRequest],
    settings: Settings,
    server_cpu: Callable[[], float] = lambda: 0.0,
) -> tuple[list[float], list[float], float, float]:
    """Each request searched whole and by its vector leg alone (top 50): the whole search's and
    the leg's ms, and the client's and the server's CPU seconds; the first two are warm-up."""
    search: list[float] = []
    vector: list[float] = []
    cpu = server = 0.0
    for i, req in enumerate(reqs):
        assert req.vector is not None
        t, c, b = time.perf_counter(), time.process_time(), server_cpu()
        engine.search(store, "synthetic", req, settings.retrieval, None)
        t2 = time.perf_counter()
        if i >= 2:
            cpu += time.process_time() - c
            server += server_cpu() - b
        store.vector_top(np.asarray(req.vector, dtype=np.float32), 50)
        t3 = time.perf_counter()
        if i >= 2:
            search.append((t2 - t) * 1000)
            vector.append((t3 - t2) * 1000)
    return search, vector, cpu, server


def measure_engine(path: Path, name: str, settings: Settings, queries: int) -> EngineRow:
    """Open ``path`` read-only with engine ``name`` and time ``queries`` searches."""
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    store = Store(path, read_only=True, vector_engine=name)
    try:
        if store.vector_engine != name:
            raise RuntimeError(f"vector engine {name} is not available here")
        reqs = _queries(queries + 3)
        engine.search(store, "synthetic", reqs[0], settings.retrieval, None)
        opened = time.perf_counter() - started
        search, vector, cpu, _ = _timed_searches(store, reqs[1:], settings)
        added = rss_mb() - before
        qps = concurrent_qps(store, _qps_requests(CLIENTS * SEARCHES_PER_CLIENT), settings, CLIENTS)
    finally:
        store.close()
    cpu_ms = round(cpu * 1000 / max(1, len(search)), 2)
    (s50, s95), (v50, v95) = _ms(search), _ms(vector)
    return EngineRow(name, round(opened, 2), round(added, 1), s50, s95, v50, v95, cpu_ms, qps=qps)


def _backend_cpu_s(pid: int) -> float:
    """utime + stime of a local PostgreSQL backend (/proc; 0 when it is not readable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_postgres(path: Path, settings: Settings, queries: int, chunks: int) -> EngineRow:
    """Load ``path`` into PostgreSQL (``index.dsn``) and time ``queries`` searches on it; the
    server's CPU is its backend's, read from /proc (the server must be on this machine)."""

    started = time.perf_counter()
    loaded = load_into_postgres(settings, path, f"synthetic-{chunks}")
    publish = time.perf_counter() - started
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    store = PgIndex.open(settings.index, loaded.slug)
    try:
        reqs = _queries(queries + 3)
        engine.search(store, "synthetic", reqs[0], settings.retrieval, None)
        opened = time.perf_counter() - started
        pid = store.backend_pid()
        search, vector, cpu, server = _timed_searches(
            store, reqs[1:], settings, lambda: _backend_cpu_s(pid)
        )
        added = rss_mb() - before
        qps = concurrent_qps(store, _qps_requests(CLIENTS * SEARCHES_PER_CLIENT), settings, CLIENTS)
    finally:
        store.close()
    poll_s = settings.server.artifact_poll_s or 2.0
    swap = first_new_answer(path, settings, loaded.slug, loaded.version, poll_s)
    n = max(1, len(search))
    (s50, s95), (v50, v95) = _ms(search), _ms(vector)
    return EngineRow(
        "postgres",
        round(opened, 2),
        round(added, 1),
        s50,
        s95,
        v50,
        v95,
        round(cpu * 1000 / n, 2),
        round(server * 1000 / n, 2),
        round(publish, 1),
        qps,
        round(swap, 2),
        poll_s,
    )


class _Served:
    """What a polling server serves: one opened version, swapped by one assignment."""

    def __init__(self, index: PgIndex) -> None:
        self.index = index
        self.retired: list[PgIndex] = []
        self.first: dict[str | None, float] = {}  # version -> when it first answered
        self.lock = threading.Lock()

    def answered(self, version: str | None, at: float) -> None:
        with self.lock:
            self.first.setdefault(version, at)


def first_new_answer(
    path: Path, settings: Settings, slug: str, version: str, poll_s: float
) -> float:
    """Seconds from flipping ``slug`` to a second version of ``path`` to the first search
    answered from it, while ``CLIENTS`` threads search and a poller swaps (see the module)."""

    new = load_into_postgres(settings, path, slug, suffix="-next").version  # now current
    dsn = resolve_dsn(settings.index)
    with connect(dsn, "index.dsn") as conn:
        flip(conn, slug, version, keep=2)  # serve the first one again
    served = _Served(PgIndex.open(settings.index, slug))
    stop = threading.Event()
    reqs = _queries(CLIENTS * 8, seed=31)

    def client(i: int) -> None:
        while not stop.is_set():
            index = served.index
            engine.search(index, "synthetic", reqs[i % len(reqs)], settings.retrieval, None)
            served.answered(index.version, time.perf_counter())
            i += CLIENTS

    def poller() -> None:
        while not stop.wait(poll_s):
            current = current_version(settings.index, slug)
            if current is None or current == served.index.version:
                continue
            opened = PgIndex.open(settings.index, slug, current)
            engine.search(opened, "synthetic", reqs[0], settings.retrieval, None)  # warm up
            served.retired.append(served.index)
            served.index = opened  # one assignment: the next search uses it

    with ThreadPoolExecutor(max_workers=CLIENTS + 1) as pool:
        futures = [pool.submit(client, i) for i in range(CLIENTS)] + [pool.submit(poller)]
        try:
            _wait_for(lambda: version in served.first, stop, futures)
            with connect(dsn, "index.dsn") as conn:
                flipped = time.perf_counter()
                flip(conn, slug, new, keep=2)
            _wait_for(lambda: new in served.first, stop, futures)
        finally:
            stop.set()
            for f in futures:
                f.result()  # a failed search or poll fails the benchmark
            for index in (served.index, *served.retired):
                index.close()
    return served.first[new] - flipped


def _wait_for(done: Callable[[], bool], stop: threading.Event, threads: list[Future[None]]) -> None:
    """Wait (bounded) until ``done()``; a thread that ended (it failed) or ``SWAP_BOUND_S``
    passing is an error."""
    give_up = time.monotonic() + SWAP_BOUND_S
    while not done():
        for f in threads:
            if f.done():
                f.result()  # raises what failed
                raise RuntimeError("a client of the swap measurement stopped early")
        if time.monotonic() > give_up:
            raise RuntimeError(f"no answer from the new version within {SWAP_BOUND_S:.0f} s")
        stop.wait(0.005)


def scale_row(
    work: Path,
    chunks: int,
    settings: Settings,
    *,
    queries: int = 50,
    engines: tuple[str, ...] = ENGINES,
) -> ScaleRow:
    """Build (or reuse) the synthetic index of ``chunks`` under ``work`` and measure it."""
    path = work / f"scale-{chunks}" / "index.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    reused = path.exists()
    started, cpu = time.perf_counter(), time.process_time()
    synthetic_store(path, chunks, dim=DIM, vector_engine="auto").close()
    build, build_cpu = time.perf_counter() - started, time.process_time() - cpu
    size = sum(p.stat().st_size for p in path.parent.iterdir() if p.is_file()) / 2**20
    peak = peak_rss_mb()
    rows = tuple(
        measure_postgres(path, settings, queries, chunks)
        if e == "postgres"
        else measure_engine(path, e, settings, queries)
        for e in engines
    )
    return ScaleRow(
        chunks, round(build, 2), round(build_cpu, 2), reused, round(size, 1), round(peak, 1), rows
    )


def render(rows: list[ScaleRow]) -> str:
    lines = [
        f"{'chunks':>9}{'build s':>9}{'cpu s':>8}{'file MB':>9}{'engine':>12}{'RSS+ MB':>9}"
        f"{'open s':>8}{'search p50':>12}{'p95':>8}{'vector p50':>12}{'p95':>8}{'cpu':>8}"
        f"{'QPS@' + str(CLIENTS):>8}{'server':>8}{'publish s':>10}{'new ans s':>10}  (ms)"
    ]
    for r in rows:
        build = f"{r.build_s}{'*' if r.reused else ''}"
        for i, e in enumerate(r.engines):
            head = (
                f"{r.chunks:>9,}{build:>9}{r.build_cpu_s:>8}{r.file_mb:>9}" if i == 0 else " " * 35
            )
            lines.append(
                f"{head}{e.engine:>12}{e.rss_added_mb:>9}{e.open_s:>8}"
                f"{e.search_p50_ms:>12}{e.search_p95_ms:>8}{e.vector_p50_ms:>12}"
                f"{e.vector_p95_ms:>8}{e.search_cpu_ms:>8}{e.qps:>8}"
                + (
                    f"{e.server_cpu_ms:>8}{e.publish_s:>10}{e.first_new_answer_s:>10}"
                    if e.engine == "postgres"
                    else ""
                )
            )
    if any(r.reused for r in rows):
        lines.append("* reused an index already on disk: the build time is not measured")
    return "\n".join(lines)
