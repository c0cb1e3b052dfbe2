"""Merged-search evaluation: every golden query asked of all the golden packs at once.

Like a real multi-pack server, each query runs against every pack and the answers are merged
(``retrieval.merge``); a hit counts only when the expected file *of the query's own pack* is in
the merged top k. Each pack's answer alone (the single-pack evaluation) is scored beside it from
the same runs, so the two columns differ only by the merge. A negative counts as answered empty
merged only when no pack returned anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ep_mcp.config.model import Settings
from ep_mcp.eval.golden import (
    CUTOFFS,
    GoldenQuery,
    GoldenSet,
    Metrics,
    PackReport,
    find_pack,
    judge,
    metrics,
    report,
    select_split,
    with_refusals,
)
from ep_mcp.eval.run import open_served
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.retrieval.merge import ScoreRule, merge_results
from ep_mcp.retrieval.types import SearchRequest, SearchResult

SEP = "::"  # pack::path — a file named with its pack


@dataclass(frozen=True)
class MergedReport:
    """One pack's golden queries scored alone and merged over every pack."""

    pack: str
    single: PackReport
    merged: PackReport

    def to_dict(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "split": self.single.split,
            "single": self.single.overall.to_dict(),
            "merged": self.merged.overall.to_dict(),
        }


def _asked(
    runtimes: Sequence[PackRuntime], queries: Sequence[str], k: int
) -> dict[str, list[SearchResult]]:
    """Every query's answer from every pack (in ``runtimes`` order)."""
    return {q: [rt.search(SearchRequest(query=q, k=k)) for rt in runtimes] for q in queries}


def score_merged(
    sets: Sequence[GoldenSet],
    runtimes: Mapping[str, PackRuntime],
    answers: Mapping[str, Sequence[SearchResult]],
    k: int,
    rule: ScoreRule | None = None,
) -> list[MergedReport]:
    """Score ``answers`` (query → every pack's result) single-pack and merged under ``rule``."""
    units: dict[str, Callable[[str], str]] = {
        slug: _unit_of(dict(rt.view.skill_of)) for slug, rt in runtimes.items()
    }

    def unit_of(named: str) -> str:
        slug, _, path = named.partition(SEP)
        return f"{slug}{SEP}{units[slug](path)}"

    out = []
    for golden in sets:
        single, merged = [], []
        for q in golden.queries:
            results = answers[q.query]
            own = next(r for r in results if r.pack == golden.pack)
            single.append(judge(q, [h.source_file for h in own.hits], units[golden.pack]))
            both = merge_results(q.query, results, k, rule)
            named = [f"{m.pack}{SEP}{m.hit.source_file}" for m in both.hits]
            merged.append(judge(_named(q, golden.pack), named, unit_of))
        out.append(
            MergedReport(
                golden.pack,
                report(golden.pack, single, golden.split),
                report(golden.pack, merged, golden.split),
            )
        )
    return out


def _unit_of(skills: Mapping[str, str]) -> Callable[[str], str]:
    """A file's unit: its skill's directory in a skill repository, else the file."""
    return lambda path: skills.get(path, path)


def _named(q: GoldenQuery, pack: str) -> GoldenQuery:
    return replace(
        q,
        expected=tuple(f"{pack}{SEP}{p}" for p in q.expected),
        must_not=tuple(f"{pack}{SEP}{p}" for p in q.must_not),
    )


def evaluate_merged(
    sets: Sequence[GoldenSet],
    roots: Sequence[Path],
    settings: Settings,
    work: Path,
    *,
    k: int = 10,
    embedder: Embedder | str | None = "auto",
    split: str = "all",
    rules: Mapping[str, ScoreRule | None] | None = None,
) -> dict[str, list[MergedReport]]:
    """Every golden set's queries against all the sets' packs at once, per merge rule
    (default: the served rule); each pack's index is cached in ``work`` as ``eval`` does."""
    emb = make_embedder(settings) if embedder == "auto" else embedder
    chosen = []
    runtimes: dict[str, PackRuntime] = {}
    try:
        for golden in sets:
            folder = find_pack(golden.pack, roots)
            chosen.append(select_split(with_refusals(golden, folder), split))
            rt = open_served(folder, settings, emb if not isinstance(emb, str) else None, work)
            runtimes[golden.pack] = rt
        lib = Library(settings, runtimes, None)
        queries = list(dict.fromkeys(q.query for g in chosen for q in g.queries))
        answers = _asked(list(lib), queries, k)
        return {
            name: score_merged(chosen, runtimes, answers, k, rule)
            for name, rule in (rules or {"served": None}).items()
        }
    finally:
        for rt in runtimes.values():
            rt.close()


def render_merged(reports: Sequence[MergedReport]) -> str:
    """Per pack: hit@1/3/5 and MRR alone and merged, negatives answered empty, and the loss."""
    head = (
        f"{'pack':<20} {'split':<5} {'n':>3} "
        + " ".join(f"{'R@' + str(c):>6} {'mR@' + str(c):>6}" for c in CUTOFFS)
        + f" {'MRR':>6} {'mMRR':>6} {'neg':>7} {'mneg':>7} {'ΔR@5':>6}"
    )
    lines = [head, "-" * len(head)]

    def row(name: str, split: str, a: Metrics, b: Metrics) -> str:
        recall = " ".join(f"{a.recall[c]:6.3f} {b.recall[c]:6.3f}" for c in CUTOFFS)
        neg_a = f"{a.negatives_empty}/{a.negatives}" if a.negatives else "-"
        neg_b = f"{b.negatives_empty}/{b.negatives}" if b.negatives else "-"
        delta = b.recall[5] - a.recall[5]
        return (
            f"{name:<20} {split:<5} {a.queries - a.negatives:>3} {recall} {a.mrr:6.3f} "
            f"{b.mrr:6.3f} {neg_a:>7} {neg_b:>7} {delta:+6.3f}"
        )

    for rep in reports:
        lines.append(row(rep.pack, rep.single.split, rep.single.overall, rep.merged.overall))
    if reports:
        a = metrics(o for r in reports for o in r.single.outcomes)
        b = metrics(o for r in reports for o in r.merged.outcomes)
        lines.append(row("ALL", reports[0].single.split, a, b))
    return "\n".join(lines)
