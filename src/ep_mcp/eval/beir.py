"""BEIR-layout benchmarks (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

The corpus goes through the real pipeline: every document becomes a markdown file
``# title\\n\\ntext`` in a work folder, the folder is indexed like any pack (cached, so a rerun only
opens the index), and every query is answered by the engine. Metrics: nDCG@10, recall@100,
query latency p50/p95 and the index build time.
"""

from __future__ import annotations

import json
import re
import statistics
import time
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
    ndcg_at_10: float
    recall_at_100: float
    p50_ms: float
    p95_ms: float
    index_seconds: float
    docs: int
    withheld: int = 0  # queries the default `min_answerable` would answer "not covered"

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


def evaluate_run(
    data: BeirSet,
    answer: Callable[[str], list[str]],
) -> tuple[float, float, list[float]]:
    """Mean nDCG@10, mean recall@100 and per-query latencies (ms) of ``answer``."""
    ndcgs: list[float] = []
    recalls: list[float] = []
    took: list[float] = []
    for qid, text in data.queries.items():
        started = time.perf_counter()
        ranked = answer(text)
        took.append((time.perf_counter() - started) * 1000)
        ndcgs.append(ndcg_at(ranked, data.qrels[qid]))
        recalls.append(recall_at(ranked, data.qrels[qid]))
    return statistics.fmean(ndcgs), statistics.fmean(recalls), took
