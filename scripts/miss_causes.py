"""Why the right file is not first: every rank-1 miss of the golden sets, put in one class by cause.

    EP_EVAL_TODAY=2026-06-01 python scripts/miss_causes.py tests/golden \\
        ../shared/packs ../shared/skills [--split test] [--config FILE] [--work DIR] [--misses]

Each answerable query is asked through ``PackRuntime.search`` (k = 10,
``include_low_confidence``, ``explain``), and its two legs once more through ``run_legs`` (the
same pool the engine reads). The class is the first rule that fits, in this order:

- emptied: the threshold stage (activation floor) answered nothing;
- profile overturn: a gold file was first after the boosts and not after the profile stage;
- both first, lost: a gold file is each leg's first file and a third file won the fusion;
- one-leg noise: the winner has no dense support and the dense leg has a gold file first;
- split evidence: a gold file is in both legs' top 3 files;
- dense truncation: a gold chunk is longer than the model's window (254 word-pieces), the
  dense leg has no gold file in its top 3 and the lexical leg one in its top 5;
- needs a model: neither leg has a gold file in its top 3;
- one leg right: what is left (one leg has a gold file in its top 3, the other not).

docs/BENCHMARKS.md ("Sixth round") holds the table this printed.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ep_mcp.config.load import load_settings
from ep_mcp.eval.golden import find_pack, load_golden_dir, select_split, with_refusals
from ep_mcp.eval.run import open_runtime
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.legs import run_legs
from ep_mcp.retrieval.source import query_embedding
from ep_mcp.retrieval.types import SearchRequest

WINDOW = 254  # word-pieces MiniLM reads of one text, [CLS] and [SEP] aside
STAGES = ("fusion", "support", "boosts", "profile")


def rank_in(files: Sequence[str], gold: set[str]) -> int | None:
    return next((i for i, f in enumerate(files, start=1) if f in gold), None)


def leg_files(rt: PackRuntime, query: str, unit: Callable[[str], str]) -> dict[str, Any]:
    """Each leg's files in order (top 40 chunks) and the longest chunk of every file seen."""
    s = rt.settings.retrieval
    pool = max(s.min_candidates, 10 * s.candidate_multiplier)
    legs = run_legs(
        rt.store, SearchRequest(query=query, k=10), s, query_embedding(rt.embedder), pool
    )
    ids = [cid for cid, _ in legs.lexical[:40]] + [cid for cid, _ in legs.dense[:40]]
    rows = rt.store.chunks_by_ids(list(dict.fromkeys(ids)))
    longest: dict[str, int] = {}
    for row in rows.values():
        u = unit(row.chunk.path)
        longest[u] = max(longest.get(u, 0), row.chunk.tokens)

    def files(ranked: Sequence[tuple[int, float]]) -> list[str]:
        return list(dict.fromkeys(unit(rows[cid].chunk.path) for cid, _ in ranked if cid in rows))

    return {"lexical": files(legs.lexical[:40]), "dense": files(legs.dense[:40]), "long": longest}


def stage_files(explain: Sequence[dict[str, Any]], unit: Callable[[str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {"emptied": False}
    for rec in explain:
        if rec["stage"] == "threshold" and "empty answer" in rec.get("summary", ""):
            out["emptied"] = True
        if rec["stage"] in STAGES:
            labels = [row["candidate"].rsplit("#", 1)[0] for row in rec.get("ranking", [])]
            out[rec["stage"]] = list(dict.fromkeys(unit(p) for p in labels))
    return out


def classify(
    gold: set[str], legs: dict[str, Any], stages: dict[str, Any], winner_dense: bool
) -> str:
    lx, dn = rank_in(legs["lexical"], gold), rank_in(legs["dense"], gold)
    before = stages.get("boosts") or stages.get("support") or stages.get("fusion") or []
    after = stages.get("profile") or before
    if stages["emptied"]:
        return "emptied by the activation floor"
    if before[:1] and before[0] in gold and not (after[:1] and after[0] in gold):
        return "profile overturn"
    if lx == 1 and dn == 1:
        return "both legs first, lost after fusion"
    if not winner_dense and dn == 1:
        return "one-leg lexical noise"
    if (lx or 99) <= 3 and (dn or 99) <= 3:
        return "split evidence"
    long_gold = any(legs["long"].get(g, 0) > WINDOW for g in gold)
    if (dn or 99) > 3 and (lx or 99) <= 5 and long_gold:
        return "dense truncation"
    if (lx or 99) > 3 and (dn or 99) > 3:
        return "needs a model"
    return "one leg right, fused wrong"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("golden", type=Path)
    ap.add_argument("roots", type=Path, nargs="+")
    ap.add_argument("--split", default="test", choices=("dev", "test", "all"))
    ap.add_argument("--config", type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ep-mcp-miss-causes"))
    ap.add_argument("--misses", action="store_true", help="print every miss with its leg ranks")
    args = ap.parse_args()
    settings = load_settings(args.config)
    embedder = make_embedder(settings)
    causes: Counter[tuple[str, str]] = Counter()
    answered = misses = 0
    for golden in load_golden_dir(args.golden):
        folder = find_pack(golden.pack, args.roots)
        golden = select_split(with_refusals(golden, folder), args.split)
        rt = open_runtime(folder, settings, embedder, args.work)
        skills = dict(rt.view.skill_of)

        def unit(path: str, skills: dict[str, str] = skills) -> str:
            return skills.get(path, path)

        try:
            for q in golden.queries:
                if not q.expected:
                    continue
                answered += 1
                request = SearchRequest(
                    query=q.query, k=10, include_low_confidence=True, explain=True
                )
                result = rt.search(request)
                ranked = list(dict.fromkeys(unit(h.source_file) for h in result.hits))
                gold = {unit(e) for e in q.expected}
                if ranked[:1] and ranked[0] in gold:
                    continue
                misses += 1
                final = next((r for r in result.explain if r["stage"] == "final"), None)
                top = final["candidates"][0] if final and final["candidates"] else None
                winner_dense = top is None or top["vector_rank"] is not None
                legs = leg_files(rt, q.query, unit)
                cause = classify(gold, legs, stage_files(result.explain, unit), winner_dense)
                causes[(cause, golden.pack)] += 1
                if args.misses:
                    lx, dn = rank_in(legs["lexical"], gold), rank_in(legs["dense"], gold)
                    rank = rank_in(ranked, gold)
                    print(f"{golden.pack} {q.id}: rank {rank}, lexical {lx}, dense {dn} — {cause}")
        finally:
            rt.close()
    print(f"{args.split}: {misses} rank-1 misses of {answered} answerable queries")
    for cause in sorted(
        {c for c, _ in causes}, key=lambda c: -sum(n for (k, _), n in causes.items() if k == c)
    ):
        packs = sorted(((p, n) for (k, p), n in causes.items() if k == cause), key=lambda t: -t[1])
        total = sum(n for _, n in packs)
        print(f"  {total:3d}  {cause}: " + ", ".join(f"{p} {n}" for p, n in packs))


if __name__ == "__main__":
    main()
