"""Benchmarks through the real pipeline: BEIR sets, query latency, a synthetic 100k-chunk index."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ep_mcp.config.model import IndexEngine, Settings
from ep_mcp.eval.beir import BeirAnswer, BeirReport, evaluate_run, load_beir, materialise
from ep_mcp.eval.metrics import percentile
from ep_mcp.eval.run import open_runtime, served_from_postgres
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.index.store import ChunkRecord, FileRecord, FileWrite, Store
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval import engine
from ep_mcp.retrieval.confidence import ConfidenceModel
from ep_mcp.retrieval.engine import SearchOptions
from ep_mcp.retrieval.legs import LegChoice
from ep_mcp.retrieval.types import SearchRequest, SearchResult

logger = logging.getLogger(__name__)

MODES: dict[str, LegChoice] = {"hybrid": "both", "lexical": "lexical", "dense": "vector"}


def run_beir(
    folder: Path,
    settings: Settings,
    work: Path,
    *,
    split: str = "test",
    mode: str = "hybrid",
    k: int = 100,
    served_k: int = 10,
    embedder: Embedder | str | None = "auto",
    confidence: ConfidenceModel | None = None,
) -> BeirReport:
    """Index the corpus (cached in ``work``) and answer every query of ``split`` twice.

    As served: ``PackRuntime.search`` with the request ``ep_search`` makes by default
    (``served_k`` hits, the floors on) — a query answered with nothing scores 0. Floor off:
    ``k`` hits with ``include_low_confidence``, the ranking whole. ``confidence`` replaces the
    shipped model (tests)."""
    data = load_beir(folder, split)
    mapping = materialise(data, work / "docs")
    emb = make_embedder(settings) if embedder == "auto" else embedder
    postgres = settings.index.engine == IndexEngine.POSTGRES
    built_with = settings
    if postgres:  # built in SQLite (the build format), then loaded and served from PostgreSQL
        sqlite = dataclasses.replace(settings.index, engine=IndexEngine.SQLITE)
        built_with = dataclasses.replace(settings, index=sqlite)
    rt = open_runtime(
        work / "docs",
        built_with,
        None if isinstance(emb, str) else emb,
        work,
        kind="markdown",
        slug=data.name,
        build=False,
    )
    report = rt.index(show_progress=None)
    record = work / "index-seconds.txt"  # the time of the last real build (reruns reuse it)
    if report.changed or report.rebuilt or not record.exists():
        record.write_text(f"{report.seconds:.2f}\n", encoding="utf-8")
    if postgres:
        rt = served_from_postgres(rt, settings)
    legs = MODES[mode]

    def ids(result: SearchResult) -> list[str]:
        return [mapping.get(h.source_file, h.source_file) for h in result.hits]

    def answer(query: str) -> BeirAnswer:
        started = time.perf_counter()
        served = rt.search(SearchRequest(query=query, k=served_k), legs=legs, confidence=confidence)
        took = (time.perf_counter() - started) * 1000
        whole = SearchRequest(query=query, k=k, include_low_confidence=True)
        ranking = rt.search(whole, legs=legs, confidence=confidence)
        return BeirAnswer(ids(served), ids(ranking), took)

    try:
        scores = evaluate_run(data, answer)
    finally:
        rt.close()
    return BeirReport(
        name=data.name,
        split=split,
        mode=mode,
        queries=len(data.queries),
        served_ndcg_at_10=scores.served_ndcg_at_10,
        withheld=scores.withheld,
        ndcg_at_10=scores.ndcg_at_10,
        recall_at_100=scores.recall_at_100,
        p50_ms=percentile(scores.took_ms, 50),
        p95_ms=percentile(scores.took_ms, 95),
        index_seconds=float(record.read_text(encoding="utf-8")),
        docs=len(data.corpus),
        served_k=served_k,
        k=k,
    )


@dataclass(frozen=True)
class Latency:
    label: str
    queries: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    cpu_p50_ms: float | None = None  # the process's CPU time per query (every thread)

    def to_dict(self) -> dict[str, object]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in vars(self).items()}


def latency(label: str, samples: Sequence[float], cpu: Sequence[float] = ()) -> Latency:
    return Latency(
        label,
        len(samples),
        percentile(samples, 50),
        percentile(samples, 95),
        statistics.fmean(samples) if samples else 0.0,
        percentile(cpu, 50) if cpu else None,
    )


class _Clock:
    """Wall and CPU milliseconds of each timed call: CPU is the process's (``process_time``:
    the model's threads count too), so a figure taken beside other jobs still says what a
    query cost, while the wall time says how long it waited too."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def time(self, call: Callable[..., object], *args: object, **kwargs: object) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        call(*args, **kwargs)
        self.cpu.append((time.process_time() - cpu) * 1000)
        self.wall.append((time.perf_counter() - wall) * 1000)

    def row(self, label: str) -> Latency:
        return latency(label, self.wall, self.cpu)


def query_latency(
    rt: PackRuntime, queries: Sequence[str], *, k: int = 10, repeats: int = 3
) -> list[Latency]:
    """p50/p95 of whole searches: embedding each query, then with its embedding cached; and
    of the model alone embedding one query (what "embedding the query" is compared with).

    "cached, right after an embed" is the cached search again, each one straight after the
    model has run on another query: a cold query costs about the model plus this row, and its
    excess over the cached row is what the model's run evicted from the CPU caches."""

    emb = rt.embedder
    base = emb.embedder if isinstance(emb, QueryEmbeddingCache) else emb
    settings = rt.settings.retrieval
    out = []
    for q in queries[:3]:  # warm the model, the matrix and SQLite's pages
        rt.search(SearchRequest(q, k=k))
    if base is not None:
        bare, cold = _Clock(), _Clock()
        for _ in range(repeats):
            for q in queries:
                bare.time(base.embed_query, q)
                cold.time(rt.search, SearchRequest(q, k=k), query_embedder=base)
        out.append(cold.row("embedding the query"))
        out.append(bare.row("the model alone, one query"))
        cache = QueryEmbeddingCache(base)
        vectors = {q: cache.embed_query(q) for q in queries}
        warm = _Clock()
        for _ in range(repeats):
            for q in queries:
                warm.time(rt.search, SearchRequest(q, k=k), query_embedder=cache)
        out.append(warm.row("cached query embedding"))
        after = _Clock()
        for _ in range(repeats):
            for i, q in enumerate(queries):
                base.embed_query(queries[(i + 1) % len(queries)])  # not timed
                after.time(rt.search, SearchRequest(q, k=k), query_embedder=cache)
        out.append(after.row("cached, right after an embed"))
        del vectors
    if rt.reranker is not None:  # what the reranker adds: off, and on with no cached score
        off, fresh = _Clock(), _Clock()
        for _ in range(repeats):
            for q in queries:
                off.time(rt.search, SearchRequest(q, k=k, rerank=False))
                rt.reranker.clear()
                fresh.time(rt.search, SearchRequest(q, k=k))
        out.append(off.row("reranker off"))
        out.append(fresh.row(f"{rt.reranker.name}, no cached score"))
    lexical = _Clock()
    options = SearchOptions(view=rt.view)
    for _ in range(repeats):
        for q in queries:
            request = SearchRequest(q, k=k)
            lexical.time(engine.search, rt.store, rt.slug, request, settings, None, options)
    out.append(lexical.row("lexical mode (no vectors)"))
    return out


def cold_over_model(rows: Sequence[Latency]) -> dict[str, float]:
    """The cold query (embedding the query) over the model alone embedding it, p50 to p50: on
    the wall clock and in CPU time (the process's: on a loaded machine the wall clock mostly
    says how long both waited). Empty when either row is missing."""
    by = {r.label: r for r in rows}
    cold, bare = by.get("embedding the query"), by.get("the model alone, one query")
    if cold is None or bare is None:
        return {}
    out = {"cold_over_model_p50": round(cold.p50_ms / bare.p50_ms, 2)} if bare.p50_ms > 0 else {}
    if cold.cpu_p50_ms is not None and bare.cpu_p50_ms:
        out["cold_over_model_cpu_p50"] = round(cold.cpu_p50_ms / bare.cpu_p50_ms, 2)
    return out


_VOCAB = tuple(hashlib.sha1(str(i).encode()).hexdigest()[: 4 + i % 6] for i in range(20000))


def synthetic_store(
    path: Path,
    chunks: int,
    *,
    dim: int = 384,
    seed: int = 7,
    per_file: int = 10,
    vector_engine: str = "auto",
) -> Store:
    """An index of ``chunks`` random unit vectors and synthetic texts, written directly."""
    rng = np.random.default_rng(seed)
    store = Store(path, vector_engine=vector_engine)
    if store.counts()["chunks"] == chunks:
        return store
    with store.transaction():
        store.clear()
        for f in range(0, chunks, per_file):
            n = min(per_file, chunks - f)
            vecs = rng.normal(size=(n, dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            words = rng.zipf(1.3, size=(n, 60)) % len(_VOCAB)
            fpath = f"doc{f // per_file:06d}.md"
            recs = []
            for i in range(n):
                text = " ".join(_VOCAB[w] for w in words[i])
                recs.append(
                    ChunkRecord(
                        fpath,
                        i,
                        (f"Doc {f}",),
                        (i * 3 + 1, i * 3 + 3),
                        (i * 400, i * 400 + len(text)),
                        text,
                        "",
                        hashlib.sha256(text.encode()).hexdigest(),
                        None,
                        80,
                    )
                )
            rec = FileRecord(fpath, "x", None, "sha256:x", f"Doc {f}", "", (), None, {})
            store.write_file(FileWrite(rec, tuple(recs), vecs))
        store.finish_build({"synthetic": chunks, "dimension": dim})
    return store


def synthetic_latency(
    work: Path, settings: Settings, *, chunks: int = 100_000, queries: int = 50, k: int = 10
) -> tuple[Latency, float]:
    """Latency of hybrid searches with caller-supplied query vectors on a synthetic index."""
    started = time.perf_counter()
    store = synthetic_store(
        work / f"synthetic-{chunks}" / "index.db",
        chunks,
        vector_engine=settings.index.vector_engine,
    )
    build = time.perf_counter() - started
    rng = np.random.default_rng(11)
    samples = []
    try:
        for i in range(queries + 3):
            vec = rng.normal(size=384).astype(np.float32)
            vec /= np.linalg.norm(vec)
            # content-like terms: uniform over the vocabulary (the documents are Zipf-skewed, so
            # a query of the few most frequent words would match most of the index)
            words = " ".join(_VOCAB[int(w)] for w in rng.integers(0, len(_VOCAB), size=4))
            req = SearchRequest(words, k=k, vector=tuple(float(x) for x in vec))
            t = time.perf_counter()
            engine.search(store, "synthetic", req, settings.retrieval, None)
            if i >= 3:
                samples.append((time.perf_counter() - t) * 1000)
    finally:
        store.close()
    return latency(f"synthetic {chunks:,} chunks ({store.vector_engine})", samples), build
