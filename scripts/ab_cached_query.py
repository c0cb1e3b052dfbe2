"""Cached-query latency of this stop's hot-path change, old against new in one process,
interleaved (A B A B ...), after checking that both give identical answers.

    EP_MCP_HOME=... python scripts/ab_cached_query.py PACK GOLDEN.yaml [BLOCKS]

A is ``dataclasses.replace`` for ``Candidate`` copies and an uncached JSON decode of the
heading-path and tag columns (what ran before); B is what runs now.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ep_mcp.cli.app import resolve_settings
from ep_mcp.index import reads
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.opening import open_library
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.types import SearchRequest

NEW = (Candidate._with, reads.json_tuple)


def old_with(self: Candidate, **changes: Any) -> Candidate:
    return dataclasses.replace(self, **changes)


def old_json(raw: str) -> tuple[str, ...]:
    return tuple(json.loads(raw))


def use(old: bool) -> None:
    Candidate._with, reads.json_tuple = (old_with, old_json) if old else NEW  # type: ignore[method-assign,assignment]


def main(pack: str, golden: str, blocks: int = 10) -> None:
    settings = resolve_settings(None, [pack])
    rt = open_library(settings, settings.home).get(None)
    queries = [q["query"] for q in yaml.safe_load(Path(golden).read_text())["queries"]]
    base = rt.embedder.embedder if isinstance(rt.embedder, QueryEmbeddingCache) else rt.embedder
    cache = QueryEmbeddingCache(base)

    def answer(q: str) -> dict[str, Any]:
        result = rt.search(SearchRequest(q, k=10), query_embedder=cache).to_dict()
        result.pop("took_ms")
        return result

    for q in queries:
        use(True)
        before = answer(q)
        use(False)
        assert answer(q) == before, q
    print(f"answers identical on {len(queries)} queries")
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(blocks):
        for old in (True, False):
            use(old)
            for q in queries:
                started = time.perf_counter()
                rt.search(SearchRequest(q, k=10), query_embedder=cache)
                timings[old].append((time.perf_counter() - started) * 1000)
    for old, label in ((True, "before"), (False, "after")):
        ms = timings[old]
        p95 = statistics.quantiles(ms, n=100)[94]
        print(f"{label}: p50 {statistics.median(ms):.2f} ms, p95 {p95:.2f} ms, n={len(ms)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
