"""BEIR-layout benchmarks (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

The corpus goes through the real pipeline: every document becomes a markdown file
``# title\\n\\ntext`` in a work folder, the folder is indexed like any pack (cached, so a rerun only
opens the index), and every query is answered by the engine twice: as served (the request
``ep_search``, ``/search`` and ``ep-mcp search`` make, the "not covered" floor included — a query
answered with nothing scores 0) and with the floor off (the ranking whole). Metrics: the served
nDCG@10 (the headline) and how many queries it answered with nothing, the floor-off nDCG@10 and
recall@100, query latency p50/p95 (served) and the index build time.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.errors import NotFoundError
from ep_mcp.eval.metrics import ndcg_at, recall_at

Qrels = dict[str, dict[str, int]]  # query id → {doc id: relevance}

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class BeirSet:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id → (title, text)
    queries: dict[str, str]  # query id → text (only those with qrels in the split)
    qrels: Qrels


@dataclass(frozen=True)
class BeirReport:
    name: str
    split: str
    mode: str
    queries: int
    served_ndcg_at_10: float  # as served, floor included: a query answered with nothing is 0
    withheld: int  # queries the served path answered with nothing (all are answerable)
    ndcg_at_10: float  # the floor off (``include_low_confidence``): the ranking whole
    recall_at_100: float  # the floor off
    p50_ms: float  # served searches
    p95_ms: float
    index_seconds: float
    docs: int
    served_k: int = 10  # hits asked for as served (the default request's k)
    k: int = 100  # hits asked for with the floor off

    def to_dict(self) -> dict[str, object]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in vars(self).items()}


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_beir(folder: Path, split: str = "test") -> BeirSet:
    """Read a BEIR folder; queries are limited to those judged in ``split``."""
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for need in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not need.is_file():
            raise NotFoundError(
                f"{need} is missing — a BEIR folder holds corpus.jsonl, "
                f"queries.jsonl and qrels/{split}.tsv"
            )
    qrels: Qrels = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if (i == 0 and parts[0] == "query-id") or len(parts) < 3:
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    corpus = {
        str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or ""))
        for d in _jsonl(folder / "corpus.jsonl")
    }
    queries = {
        str(q["_id"]): str(q["text"])
        for q in _jsonl(folder / "queries.jsonl")
        if str(q["_id"]) in qrels
    }
    return BeirSet(folder.name, corpus, queries, qrels)


def doc_filename(doc_id: str) -> str:
    """A safe, reversible-enough file name for a corpus id."""
    return _UNSAFE.sub("_", doc_id) + ".md"


def materialise(data: BeirSet, folder: Path) -> dict[str, str]:
    """Write each document as ``# title\\n\\ntext`` (only when changed); returns path → doc id."""
    folder.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    for doc_id, (title, text) in data.corpus.items():
        name = doc_filename(doc_id)
        mapping[name] = doc_id
        body = f"# {title.strip() or doc_id}\n\n{text.strip()}\n"
        target = folder / name
        if not target.exists() or target.read_text(encoding="utf-8") != body:
            target.write_text(body, encoding="utf-8")
    return mapping


@dataclass(frozen=True)
class BeirAnswer:
    """One query answered both ways: doc ids as served (empty: answered with nothing) and with
    the floor off, and how long the served search took (ms)."""

    served: list[str]
    ranking: list[str]
    took_ms: float


@dataclass(frozen=True)
class BeirScores:
    served_ndcg_at_10: float
    withheld: int
    ndcg_at_10: float
    recall_at_100: float
    took_ms: list[float]


def evaluate_run(data: BeirSet, answer: Callable[[str], BeirAnswer]) -> BeirScores:
    """Means over the split's queries: served nDCG@10 (an empty answer scores 0, so a query
    the floor withholds is a miss), the floor-off nDCG@10 and recall@100; served latencies."""
    served: list[float] = []
    ndcgs: list[float] = []
    recalls: list[float] = []
    took: list[float] = []
    withheld = 0
    for qid, text in data.queries.items():
        got = answer(text)
        took.append(got.took_ms)
        withheld += not got.served
        served.append(ndcg_at(got.served, data.qrels[qid]))
        ndcgs.append(ndcg_at(got.ranking, data.qrels[qid]))
        recalls.append(recall_at(got.ranking, data.qrels[qid]))
    mean = statistics.fmean
    return BeirScores(mean(served), withheld, mean(ndcgs), mean(recalls), took)
