"""Sweep retrieval settings over the golden sets (and SciFact) with every index opened once.

    python scripts/sweep.py --golden tests/golden --packs-root ../shared/packs \\
        --packs-root ../shared/skills --work DIR [--beir ../shared/bench/scifact] \\
        [--split dev] --variant "" --variant "vector_weight=0.5,text_weight=0.5" ...

Each ``--variant`` is a comma-separated list of ``retrieval.KEY=VALUE`` overrides ("" is the
served defaults). Per variant it prints the pooled answerable hit@1 / hit@5 / MRR of the split,
negatives answered empty, answerable questions withheld, hit@1 per pack, and (with ``--beir``)
SciFact's served nDCG@10 on its train split for ``--split dev`` and its test split for
``--split test``, plus how many queries each variant wins and loses against the first one.
Dev (with SciFact train) chooses; ``--split test`` is for reporting a choice once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ep_mcp.config.env import resolve_environment
from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings
from ep_mcp.eval.beir import BeirSet, load_beir, materialise
from ep_mcp.eval.golden import (
    GoldenSet,
    QueryOutcome,
    find_pack,
    load_golden_dir,
    metrics,
    run_set,
    select_split,
    with_refusals,
)
from ep_mcp.eval.metrics import ndcg_at
from ep_mcp.eval.run import open_runtime
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.types import SearchRequest


def overrides(text: str, base: Any) -> dict[str, Any]:
    """``"a=1,b=true"`` as typed retrieval-settings overrides (each key must exist)."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, raw = part.partition("=")
        old = getattr(base, key)  # AttributeError names an unknown key
        if isinstance(old, bool):
            flags = {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}
            if raw.lower() not in flags:
                raise SystemExit(f"{key}={raw}: give true or false")
            out[key] = flags[raw.lower()]
        elif isinstance(old, int):
            out[key] = int(raw)  # ValueError names a non-integer
        elif isinstance(old, float):
            out[key] = float(raw)
        else:
            out[key] = type(old)(raw) if old is not None else raw
    return out


Outcomes = list[QueryOutcome]


@dataclasses.dataclass
class GoldenTarget:
    """One golden set (its split) and the open runtime of its pack."""

    golden: GoldenSet
    rt: PackRuntime

    def run(self) -> Outcomes:
        skills = dict(self.rt.view.skill_of)
        rep = run_set(
            self.golden,
            lambda q: [h.source_file for h in self.rt.search(SearchRequest(query=q, k=10)).hits],
            lambda p: skills.get(p, p),
        )
        return list(rep.outcomes)


@dataclasses.dataclass
class BeirTarget:
    """SciFact (its train split for dev, test for test) and its open runtime."""

    data: BeirSet
    mapping: dict[str, str]
    rt: PackRuntime

    def run(self) -> tuple[float, int]:
        """Served nDCG@10 (an empty answer scores 0) and the claims answered with nothing."""
        scores, withheld = [], 0
        for qid, text in self.data.queries.items():
            hits = self.rt.search(SearchRequest(query=text, k=10)).hits
            withheld += not hits
            ranked = [self.mapping.get(h.source_file, h.source_file) for h in hits]
            scores.append(ndcg_at(ranked, self.data.qrels[qid]))
        return sum(scores) / max(len(scores), 1), withheld


def golden_targets(args: argparse.Namespace, settings: Settings, emb: Any) -> list[GoldenTarget]:
    out = []
    for golden in load_golden_dir(args.golden):
        folder = find_pack(golden.pack, args.packs_root)
        chosen = select_split(with_refusals(golden, folder), args.split)
        out.append(GoldenTarget(chosen, open_runtime(folder, settings, emb, args.work)))
    return out


def beir_target(args: argparse.Namespace, settings: Settings, emb: Any) -> BeirTarget:
    data = load_beir(args.beir, "train" if args.split == "dev" else "test")
    base = args.work / f"beir-{data.name}"
    mapping = materialise(data, base / "docs")
    rt = open_runtime(base / "docs", settings, emb, base, kind="markdown", slug=data.name)
    return BeirTarget(data, mapping, rt)


def summary(name: str, outcomes: Outcomes) -> str:
    m = metrics(outcomes)
    answerable = m.queries - m.negatives
    hit1 = sum(1 for o in outcomes if not o.query.negative and o.rank == 1)
    return (
        f"{name}: hit@1 {hit1}/{answerable} = {m.recall[1]:.3f}  hit@5 {m.recall[5]:.3f}  "
        f"MRR {m.mrr:.3f}  negatives empty {m.negatives_empty}/{m.negatives}  "
        f"withheld {m.withheld}/{answerable}"
    )


def keyed(pack: str, outcomes: Outcomes) -> dict[str, tuple[int | None, int]]:
    """Each query as ``pack:id`` → (rank of its first expected unit, None for a negative;
    hits returned): what ``--dump`` writes and variants are compared on."""
    return {
        f"{pack}:{o.query.id}": (None if o.query.negative else o.rank, o.returned) for o in outcomes
    }


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--golden", type=Path, required=True)
    ap.add_argument("--packs-root", type=Path, action="append", required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--beir", type=Path)
    ap.add_argument("--config", type=Path, help="config.yaml whose settings the variants vary")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--per-query", action="store_true", help="print every changed query")
    ap.add_argument("--dump", type=Path, help="write every variant's (rank, returned) per query")
    args = ap.parse_args(argv)
    settings = load_settings(args.config) if args.config else Settings()
    settings = resolve_environment(settings, os.environ)
    emb = make_embedder(settings)
    targets = golden_targets(args, settings, emb)
    beir = beir_target(args, settings, emb) if args.beir else None
    first: dict[str, tuple[int | None, int]] | None = None
    dumped: dict[str, Any] = {}
    for variant in args.variant or [""]:
        retrieval = dataclasses.replace(
            settings.retrieval, **overrides(variant, settings.retrieval)
        )
        varied = dataclasses.replace(settings, retrieval=retrieval)
        pooled: Outcomes = []
        rows: dict[str, tuple[int | None, int]] = {}
        negatives: set[str] = set()
        per_pack = []
        for t in targets:
            t.rt.settings = varied
            got = t.run()
            pooled += got
            rows.update(keyed(t.golden.pack, got))
            negatives.update(f"{t.golden.pack}:{o.query.id}" for o in got if o.query.negative)
            pos = [o for o in got if not o.query.negative]
            per_pack.append(f"{t.golden.pack} {sum(o.rank == 1 for o in pos)}/{len(pos)}")
        print(f"== {variant or 'served defaults'}")
        print("  " + summary(f"pooled {args.split}", pooled))
        print("  hit@1 by pack: " + ", ".join(per_pack))
        if beir is not None:
            beir.rt.settings = varied
            mean, withheld = beir.run()
            print(
                f"  {beir.data.name} served nDCG@10 {mean:.4f}, "
                f"withheld {withheld}/{len(beir.data.queries)}"
            )
        dumped[variant] = rows
        if first is None:
            first = rows
        else:
            pos_ids = [q for q in rows if q not in negatives]
            won = [q for q in pos_ids if rows[q][0] == 1 and first[q][0] != 1]
            lost = [q for q in pos_ids if rows[q][0] != 1 and first[q][0] == 1]
            neg_won = [q for q in negatives & rows.keys() if rows[q][1] == 0 < first[q][1]]
            neg_lost = [q for q in negatives & rows.keys() if first[q][1] == 0 < rows[q][1]]
            print(
                f"  against the first: hit@1 +{len(won)} -{len(lost)}; "
                f"negatives +{len(neg_won)} -{len(neg_lost)}"
            )
            if args.per_query:
                print("    won:", " ".join(sorted(won)), "| lost:", " ".join(sorted(lost)))
    if args.dump:
        args.dump.write_text(json.dumps(dumped), encoding="utf-8")
    for t in targets:
        t.rt.close()
    if beir is not None:
        beir.rt.close()


if __name__ == "__main__":
    main()
