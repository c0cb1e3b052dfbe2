"""Cached-query cost of the hot-path changes, old (A) against new (B) in one process, after
checking query by query that both give byte-identical answers.

    EP_MCP_HOME=... python scripts/ab_cached_query.py [--blocks N] [--only NAME] [--render] \\
        [--lexical] PACK=GOLDEN.yaml [PACK=GOLDEN.yaml ...]

Every query of each golden set (dev, test and the pack's refusals) is answered by A and by B,
plainly and with ``explain``, and the JSON of the two answers must be the same bytes (``took_ms``
aside). Then ``--blocks`` rounds of each set's queries run, each query by A and by B back to
back (which one first alternates; with ``--render`` each answer is also made the dict a server
sends, ``to_dict``), and per pack the script prints p50/p95 of the wall time and of the
thread's CPU time (``time.thread_time``: what the query cost, whatever the load), and the
median of the paired CPU differences. ``--blocks 0`` only checks the answers. ``--lexical``
answers in lexical mode instead (no query vector: what ``ep-mcp bench query``'s lexical row
times, and what a pack without vectors serves).

A is the code before issue #21's hot-path stops, put back by replacing what each change
replaced (``CHANGES``: name → where, attribute, the old implementation); ``--only NAME`` puts
back only the changes whose name starts with NAME (or with any of NAME,NAME2…), so each
change gets its own figure. B is
the code as it is. (The CLI's one BLAS thread is process-wide: ``ep-mcp bench query`` with
and without ``OPENBLAS_NUM_THREADS`` measures it.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ep_mcp.cli.app import resolve_settings
from ep_mcp.eval.golden import load_golden, with_refusals
from ep_mcp.index import lexical, reads, vectors
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.index.records import ChunkRecord, StoredChunk
from ep_mcp.index.store import Store
from ep_mcp.library import runtime
from ep_mcp.library.opening import open_library
from ep_mcp.retrieval import engine, fallback, freshness, fusion, hits, profile, source
from ep_mcp.retrieval import settings as stage_settings
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.confidence import Logistic
from ep_mcp.retrieval.types import Hit, SearchRequest


def old_term_counts(self: Store, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    """``Store.term_counts`` before: every term counted again by FTS5 on every query."""
    return lexical.term_counts(self._reader(), terms)


def old_row(row: Sequence[Any]) -> StoredChunk:
    """``StoreReads._row`` before: the three records built (and the info decoded) per row."""
    cid, path, idx, hp, ls, le, bs, be, text, prefix, span, section, tokens = row[:13]
    heading_path = reads.json_tuple(hp)
    chunk = ChunkRecord(
        path, idx, heading_path, (ls, le), (bs, be), text, prefix, span, section, tokens
    )
    return StoredChunk(int(cid), chunk, reads._file_record((path, *row[13:])))


def old_fuse_weighted(
    lists: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float]
) -> list[tuple[int, float]]:
    """``fusion.fuse_weighted`` before: sorted on (-score, first-seen rank) from a second pass."""
    scores: dict[int, float] = {}
    for name, ranked in lists.items():
        w = weights.get(name, 1.0)
        for item, s in fusion.normalise(ranked).items():
            scores[item] = scores.get(item, 0.0) + w * s
    order: dict[int, int] = {}
    for ranked in lists.values():
        for item, _ in ranked:
            order.setdefault(item, len(order))
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def old_made(cls: type[Candidate], **values: object) -> Candidate:
    """Candidates made by the frozen ``__init__`` (what ``candidate_of`` called before)."""
    return cls(**values)  # type: ignore[arg-type]


def old_hit_with(hit: Hit, **changes: Any) -> Hit:
    return dataclasses.replace(hit, **changes)


def old_logit(self: Logistic, x: Mapping[str, float]) -> float:
    z = self.bias
    for name, w, m, s in zip(self.names, self.weights, self.mean, self.scale, strict=True):
        z += w * (x.get(name, 0.0) - m) / (s or 1.0)
    return z


def old_matrix_top(loaded: Any, query: Any, n: int) -> list[tuple[int, float]]:
    """``vectors.matrix_top`` before: int() and float() per element of the top."""
    ids = loaded.ids
    if len(ids) == 0:
        return []
    sims = vectors.similarities(loaded, query)
    n = min(n, len(ids))
    top = np.argpartition(-sims, n - 1)[:n]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(ids[i]), float(sims[i])) for i in top]


def old_features(self: Store) -> dict[str, Any]:
    """``Store.features`` before: the meta row read and its JSON decoded on every call."""
    raw = self.get_meta("index_features")
    return dict(json.loads(raw)) if raw else {}


def old_embedding_model(self: Store) -> str | None:
    name = old_features(self).get("embedder")
    return str(name) if name else None


def old_has_vectors(self: Store) -> bool:
    return bool(self._reader().execute("SELECT 1 FROM vectors LIMIT 1").fetchall())


def old_pending_count(self: Store) -> int:
    return Store._read_pending_count(self)


def old_chunks_by_ids(self: reads.StoreReads, chunk_ids: Sequence[int]) -> dict[int, Any]:
    """``chunks_by_ids`` before: every row read again by SQL on every call."""
    sql = (
        f"SELECT {self._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "
        "WHERE c.id IN ({marks})"
    )
    return {sc.id: sc for sc in map(self._row, self._batched(sql, chunk_ids))}


def old_load_matrix(self: Store) -> Any:
    """``Store._load_matrix`` before: the generation and the dimension read on every call."""
    generation = int(self.get_meta("generation") or "0")
    dim = old_features(self).get("dimension")
    return self._matrix.load(self._reader(), generation, int(dim) if dim else None)


def old_hit_to_dict(self: Hit) -> dict[str, Any]:
    """``Hit.to_dict`` before: ``dataclasses.asdict`` (a deep copy of every field)."""
    data = dataclasses.asdict(self)
    extra = data.pop("extra")
    data["tags"] = list(self.tags)
    data["heading_path"] = list(self.heading_path)
    data["line_range"] = list(self.line_range)
    if self.confidence is None:
        data.pop("confidence")
    data.update(extra)
    return data


def old_query_embedding(embedder: Any) -> Any:
    """``source.query_embedding`` before: ``isinstance`` against the runtime-checkable
    protocol on every query (it walks the protocol's members each time on Python 3.11)."""
    if embedder is None:
        return None
    return embedder if isinstance(embedder, source.QueryEmbedding) else source.Uncached(embedder)


def old_lexical_signals(terms: Sequence[str], text: str, path: str) -> tuple[float, float, float]:
    """``fallback.lexical_signals`` before: every candidate's words read again per query."""
    coverage = fallback.term_coverage(terms, text)
    found = fallback.words(text)
    wanted = set(terms)
    count = sum(1 for w in found if w in wanted)
    density = min(count / max(len(found), 1) * 20, 1.0)
    low = path.lower()
    in_path = sum(1 for t in terms if t in low) / len(terms) if terms else 0.0
    return coverage, density, in_path


def old_rescored(self: Candidate) -> Candidate:
    return dataclasses.replace(self, fused=self.score)


def old_same_named(cls: type[Any], s: Any, prefix: str = "") -> Any:
    """``settings.same_named`` before: a stage's settings made again on every query."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{name: getattr(s, prefix + name) for name in names})


CHANGES: dict[str, tuple[object, str, Any]] = {
    "freshness-memo": (hits, "freshness_of", freshness.freshness),
    "vector-tolist": (vectors, "matrix_top", old_matrix_top),
    "hit-copy": (hits, "hit_with", old_hit_with),
    "hit-copy-engine": (engine, "hit_with", old_hit_with),
    "logit-terms": (Logistic, "logit", old_logit),
    "candidate-made": (Candidate, "made", classmethod(old_made)),
    "fusion-sort": (fusion, "fuse_weighted", old_fuse_weighted),
    "profile-units": (profile, "_unit_once", profile._unit),
    "row-records": (reads.StoreReads, "_row", staticmethod(old_row)),
    "term-counts": (Store, "term_counts", old_term_counts),
    "version-memo-features": (Store, "features", old_features),
    "version-memo-model": (Store, "embedding_model", old_embedding_model),
    "version-memo-has-vectors": (Store, "has_vectors", old_has_vectors),
    "version-memo-pending": (Store, "pending_count", old_pending_count),
    "version-memo-matrix": (Store, "_load_matrix", old_load_matrix),
    "version-rows": (reads.StoreReads, "chunks_by_ids", old_chunks_by_ids),
    "hit-dict": (Hit, "to_dict", old_hit_to_dict),
    # issue #21, third stop (fastquery)
    "protocol-check": (runtime, "query_embedding", old_query_embedding),
    "fallback-words": (fallback, "lexical_signals", old_lexical_signals),
    "fallback-copy": (Candidate, "rescored", old_rescored),
    "stage-settings": (stage_settings, "same_named", old_same_named),
    "shown-memo": (hits, "_shown", hits.strip_leading_noise),
}
NEW = {name: vars(owner)[attr] for name, (owner, attr, _) in CHANGES.items()}  # descriptors


def use(old: bool, only: str | None) -> None:
    for name, (owner, attr, before) in CHANGES.items():
        back = old and (only is None or name.startswith(tuple(only.split(","))))
        setattr(owner, attr, before if back else NEW[name])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sets", nargs="+", metavar="PACK=GOLDEN")
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--only", help="comma-separated prefixes of CHANGES' names")
    parser.add_argument(
        "--render", action="store_true", help="time the answer's to_dict too (what a server does)"
    )
    parser.add_argument("--lexical", action="store_true", help="lexical mode (no query vector)")
    args = parser.parse_args()
    for prefix in (args.only or "").split(",") if args.only else ():
        if not any(name.startswith(prefix) for name in CHANGES):
            parser.error(f"--only {prefix!r} names no change — changes: {', '.join(CHANGES)}")
    for spec in args.sets:
        pack, golden = spec.split("=", 1)
        run_set(Path(pack), Path(golden), args.blocks, args.only, args.render, args.lexical)


def run_set(
    pack: Path, golden: Path, blocks: int, only: str | None, render: bool, lexical_mode: bool
) -> None:
    settings = resolve_settings(None, [str(pack)])
    # the lexical leg's time limit is wall clock: on a loaded machine one side could be cut
    # short and answer differently; the comparison is of the code, so the limit is out of reach
    retrieval = dataclasses.replace(settings.retrieval, lexical_time_limit_ms=600_000)
    settings = dataclasses.replace(settings, retrieval=retrieval)
    rt = open_library(settings, settings.home).get(None)
    queries = [q.query for q in with_refusals(load_golden(golden), pack).queries]
    base = rt.embedder.embedder if isinstance(rt.embedder, QueryEmbeddingCache) else rt.embedder
    cache = QueryEmbeddingCache(base)

    options = engine.SearchOptions(view=rt.view)

    def search(request: SearchRequest) -> Any:
        if lexical_mode:
            return engine.search(rt.store, rt.slug, request, rt.settings.retrieval, None, options)
        return rt.search(request, query_embedder=cache)

    def answer(q: str, explain: bool) -> str:
        result = search(SearchRequest(q, k=10, explain=explain))
        out = result.to_dict()
        out.pop("took_ms")
        return json.dumps(out, sort_keys=True)

    for q in queries:
        for explain in (False, True):
            use(True, only)
            before = answer(q, explain)
            use(False, only)
            assert answer(q, explain) == before, (pack.name, q, explain)
    print(f"{pack.name}: answers byte-identical on {len(queries)} queries (plain and explain)")
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for block in range(blocks):
        for i, q in enumerate(queries):  # A and B back to back per query, in turns first
            for old in (True, False) if (block + i) % 2 == 0 else (False, True):
                use(old, only)
                started, thread = time.perf_counter(), time.thread_time()
                result = search(SearchRequest(q, k=10))
                if render:
                    result.to_dict()
                cpu[old].append((time.thread_time() - thread) * 1000)
                wall[old].append((time.perf_counter() - started) * 1000)
    use(False, only)
    if not blocks:
        return
    for old, label in ((True, "before"), (False, "after")):
        print(f"  {label}: wall {_p(wall[old])}; cpu {_p(cpu[old])}; n={len(wall[old])}")
    # the same query, before and after, a moment apart: the median of the pairs' differences
    paired = [b - a for a, b in zip(cpu[True], cpu[False], strict=True)]
    change, base = statistics.median(paired), statistics.median(cpu[True])
    print(f"  cpu per query, paired: {change:+.3f} ms ({change / base:+.1%})")


def _p(ms: list[float]) -> str:
    p95 = statistics.quantiles(ms, n=100)[94]
    return f"p50 {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms"


if __name__ == "__main__":
    main()
