"""The two "not covered" floors studied together (issue #18, build 4; BENCHMARKS "Seventh round").

    python scripts/floors_study.py record tests/golden ../shared/packs ../shared/skills \\
        --beir ../shared/bench/scifact --work DIR
    python scripts/floors_study.py study --work DIR [--test]

``record`` asks every golden query (dev + test, pack authors' refusals included) and every
SciFact claim (train as "dev", test as "test") once through ``PackRuntime.search`` with the
served code, the activation floor off (``retrieval.activation_floor: 0``), every hit kept and a
neutral confidence model — as ``eval/calibrate.collect`` does — and writes, per query, the
evidence both floors read: the activation (best cosine + 0.2 x term coverage), the answer
model's features, each hit's features and relevance, the first relevant file's rank and (for
SciFact) the ranked documents with their grades, for nDCG@10 under any floor.

``study`` scores the pairs (activation floor, ``min_answerable``) on those records with
``eval/calibrate.py``'s own functions: what each floor catches alone, the joint choice on dev
(+ SciFact train as the bound), one refitted answer model instead of two floors (leave one
pack out as well), and other activation forms. Dev chooses; ``--test`` prints the test split
for the candidates (run it once per candidate).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ep_mcp.config.load import load_settings
from ep_mcp.eval import calibrate as cal
from ep_mcp.eval.beir import load_beir, materialise
from ep_mcp.eval.golden import find_pack, load_golden_dir, select_split, with_refusals
from ep_mcp.eval.run import open_runtime
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.confidence import HIT_FEATURES, QUERY_FEATURES, ConfidenceModel
from ep_mcp.retrieval.confidence_file import load_model, packaged_path
from ep_mcp.retrieval.types import SearchRequest

SERVED = (0.416, 0.32)  # retrieval.activation_floor, retrieval.min_answerable
ACT_GRID = [round(0.3 + i * 0.005, 3) for i in range(41)]
P_GRID = [round(i * 0.01, 2) for i in range(100)]
Record = dict[str, Any]


def ask(rt: PackRuntime, text: str, wanted: set[str], unit: Callable[[str], str]) -> Record:
    result = rt.search(
        SearchRequest(query=text, k=10, include_low_confidence=True), confidence=cal.NEUTRAL
    )
    units = [unit(h.source_file) for h in result.hits]
    ranked = list(dict.fromkeys(units))
    judged = result.assessment
    feats = [dict(f) for f in judged.hit_features] if judged is not None else []
    return {
        "query": text,
        "hits": feats,
        "relevant": [u in wanted for u in units[: len(feats)]],
        "qf": dict(judged.query_features) if judged is not None else {},
        "found_at": next((i for i, u in enumerate(ranked, 1) if u in wanted), None),
        "activation": result.activation,
        "ranked": ranked[:10],
    }


def record(args: argparse.Namespace) -> None:
    work: Path = args.work
    off = work / "floor-off.yaml"
    # the base config (e.g. index.embed_windows) with the activation floor off
    base = yaml.safe_load(args.config.read_text(encoding="utf-8")) if args.config else None
    base = base or {}
    base.setdefault("retrieval", {})["activation_floor"] = 0.0
    off.write_text(yaml.safe_dump(base), encoding="utf-8")
    settings = load_settings(off)
    emb = make_embedder(settings)
    out: list[Record] = []
    for golden in load_golden_dir(args.golden):
        folder = find_pack(golden.pack, args.roots)
        golden = select_split(with_refusals(golden, folder), "all")
        rt = open_runtime(folder, settings, emb, work)
        unit = functools.partial(cal._doc_id, dict(rt.view.skill_of))
        for q in golden.queries:
            row = ask(rt, q.query, {unit(p) for p in q.expected}, unit)
            out.append({**row, "pack": golden.pack, "split": q.split, "negative": q.negative})
        rt.close()
    if args.beir is not None:
        for beir_split, split in (("train", "dev"), ("test", "test")):
            data = load_beir(args.beir, beir_split)
            base = work / f"beir-{data.name}"
            doc = functools.partial(cal._doc_id, materialise(data, base / "docs"))
            rt = open_runtime(base / "docs", settings, emb, base, kind="markdown", slug=data.name)
            for qid, text in data.queries.items():
                grades = dict(data.qrels[qid])
                row = ask(rt, text, {d for d, g in grades.items() if g > 0}, doc)
                out.append({**row, "pack": data.name, "split": split, "negative": False})
                out[-1]["grades"] = grades
            rt.close()
    (work / "floors-records.json").write_text(json.dumps(out), encoding="utf-8")


def ndcg10(rec: Record) -> float:
    grades: Mapping[str, int] = rec.get("grades") or {}
    dcg = sum((2 ** grades.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(rec["ranked"]))
    ideal = sorted(grades.values(), reverse=True)[:10]
    idcg = sum((2**v - 1) / math.log2(i + 2) for i, v in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def row_of(rec: Record) -> cal.QueryRow:
    qf = {**rec["qf"], "activation": rec["activation"]}
    qf["activation_short"] = max(0.0, 0.45 - rec["activation"])  # a hinge at 0.45
    hits, relevant = tuple(rec["hits"]), tuple(rec["relevant"])
    return cal.QueryRow(
        rec["pack"], rec["split"], rec["negative"], hits, relevant, qf, rec["found_at"]
    )


@dataclasses.dataclass
class Scored:
    """One population's records under one answer model: who each pair of floors empties."""

    recs: list[Record]
    model: ConfidenceModel
    support: Callable[[Mapping[str, float]], float] | None = None  # another activation form

    def __post_init__(self) -> None:
        rows = [row_of(r) for r in self.recs]
        self.p = np.array([cal.answerable_of(r, self.model) for r in rows])
        act = [self.support(r.query) if self.support else r.query["activation"] for r in rows]
        self.a = np.array(act)
        self.neg = np.array([r.negative for r in rows])
        self.found = np.array([r.found_at or 99 for r in rows])
        self.ndcg = np.array([ndcg10(r) for r in self.recs])

    def empty(self, a: float, m: float) -> Any:
        return (self.a < a) | (self.p < m)

    def point(self, a: float, m: float) -> dict[str, float]:
        e, pos = self.empty(a, m), ~self.neg
        n = max(int(pos.sum()), 1)
        shown = ~e & pos
        return {
            "caught": int((e & self.neg).sum()),
            "neg": int(self.neg.sum()),
            "withheld": int((e & pos).sum()),
            "pos": int(pos.sum()),
            "hit1": float((shown & (self.found == 1)).sum() / n),
            "hit5": float((shown & (self.found <= 5)).sum() / n),
            "mrr": float(np.where(shown & (self.found < 99), 1.0 / self.found, 0).sum() / n),
            "ndcg": float(np.where(e, 0.0, self.ndcg).mean()),
        }


def fmt(p: Mapping[str, float]) -> str:
    text = f"{p['caught']}/{p['neg']} negatives empty, {p['withheld']}/{p['pos']} withheld"
    if p["neg"]:
        return f"{text}, hit@1 {p['hit1']:.3f} hit@5 {p['hit5']:.3f} MRR {p['mrr']:.3f}"
    return f"{text}, nDCG@10 as served {p['ndcg']:.4f}"


def choose(
    dev: Scored,
    bound: Scored | None,
    acts: Iterable[float],
    probs: Sequence[float] = P_GRID,
    max_withheld: float = 0.05,
) -> tuple[float, float]:
    """The served rule in two dimensions: the most dev negatives with ≤ ``max_withheld`` of dev
    (and ≤ 5 % of ``bound``, SciFact train) withheld; ties: the first (lowest) pair."""
    best: tuple[int, float, float] | None = None
    for a in acts:
        for m in probs:
            p = dev.point(a, m)
            if p["withheld"] > max_withheld * p["pos"]:
                continue
            if bound is not None and bound.point(a, m)["withheld"] > 0.05 * len(bound.recs):
                continue
            if best is None or p["caught"] > best[0]:
                best = (int(p["caught"]), a, m)
    assert best is not None
    return best[1], best[2]


def fit(dev: Sequence[Record], names: Sequence[str]) -> ConfidenceModel:
    """``eval/calibrate.fit_model`` on the floor-off records, ``names`` as answer features."""
    rows = [row_of(r) for r in dev]
    w_neg = cal.negative_weight(rows, cal.NEGATIVE_SHARE)
    feats, labels = cal.hit_pairs(rows)
    hw = np.array([w_neg if r.negative else 1.0 for r in rows for _ in r.hits])
    hit = cal._fit(HIT_FEATURES, feats, labels, 1.0, hw)
    qfeats, qlabels = cal.answer_rows(rows, hit)
    aw = np.array([w_neg if r.negative else 1.0 for r in rows if r.hits])
    return ConfidenceModel(hit, cal._fit(names, qfeats, qlabels, 1.0, aw), "local/all-MiniLM")


def study(args: argparse.Namespace) -> None:
    recs: list[Record] = json.loads((args.work / "floors-records.json").read_text("utf-8"))
    served = load_model(packaged_path())
    assert served is not None, "the packaged confidence model is missing"

    def part(split: str, scifact: bool) -> list[Record]:
        return [r for r in recs if r["split"] == split and (r["pack"] == "scifact") == scifact]

    dev_r, test_r, sft_r, sfs_r = part("dev", False), part("test", False), part("dev", True), []
    sfs_r = part("test", True)

    def show(label: str, model: ConfidenceModel, a: float, m: float, support: Any = None) -> None:
        print(f"== {label}: activation floor {a}, min_answerable {m}")
        for name, rs in (("dev", dev_r), ("SciFact train", sft_r)) + (
            (("test", test_r), ("SciFact test", sfs_r)) if args.test else ()
        ):
            print(f"   {name}: {fmt(Scored(rs, model, support).point(a, m))}")
        if args.test:
            for pack in sorted({r["pack"] for r in test_r}):
                sub = Scored([r for r in test_r if r["pack"] == pack], model, support)
                print(f"     test {pack}: {fmt(sub.point(a, m))}")
            rows = [row_of(r) for r in test_r]
            shown = [
                r for r, s in zip(rows, Scored(test_r, model, support).a, strict=True) if s >= a
            ]
            ece = cal.hit_calibration(shown, model).ece
            answers = cal.answer_calibration(rows, model).ece
            print(f"   test hit ECE {ece:.3f}, answerable ECE {answers:.3f}")

    dev, sft = Scored(dev_r, served), Scored(sft_r, served)
    show("served", served, *SERVED)
    show("activation floor off", served, 0.0, SERVED[1])
    show("both off", served, 0.0, 0.0)
    show(
        "two floors, joint, SciFact-bounded, dev <= 3 %",
        served,
        *choose(dev, sft, ACT_GRID, max_withheld=0.03),
    )
    show(
        "two floors, joint, dev alone <= 3 %",
        served,
        *choose(dev, None, ACT_GRID, max_withheld=0.03),
    )
    one = fit(dev_r, [*QUERY_FEATURES, "activation_short"])
    d1, s1 = Scored(dev_r, one), Scored(sft_r, one)
    show("one floor: + max(0, 0.45 - activation), refit", one, *choose(d1, s1, [0.0]))
    show("one floor, dev alone <= 3 %", one, *choose(d1, None, [0.0], max_withheld=0.03))
    for names in (
        [*QUERY_FEATURES],
        [*QUERY_FEATURES, "activation"],
        [*QUERY_FEATURES, "activation_short"],
    ):
        caught = withheld = 0.0
        for pack in sorted({r["pack"] for r in dev_r}):
            train = [r for r in dev_r if r["pack"] != pack]
            model = fit(train, names)
            m = choose(Scored(train, model), Scored(sft_r, model), [0.0])[1]
            p = Scored([r for r in dev_r if r["pack"] == pack], model).point(0.0, m)
            caught, withheld = caught + p["caught"], withheld + p["withheld"]
        added = names[len(QUERY_FEATURES) :] or "served features"
        print(f"LOPO one floor {added}: {caught:.0f}/78, {withheld:.0f}/92")

    def idf_support(q: Mapping[str, float]) -> float:
        return q["top_cosine"] + 0.3 * q["idf_coverage"]

    show(
        "support = cosine + 0.3 x IDF coverage, 0.4313, with 0.19",
        served,
        0.4313,
        0.19,
        idf_support,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True)
    rec = sub.add_parser("record")
    rec.add_argument("golden", type=Path)
    rec.add_argument("roots", type=Path, nargs="+")
    rec.add_argument("--beir", type=Path)
    rec.add_argument("--work", type=Path, required=True)
    rec.add_argument("--config", type=Path, help="a config.yaml to record under")
    rec.set_defaults(run=record)
    st = sub.add_parser("study")
    st.add_argument("--work", type=Path, required=True)
    st.add_argument("--test", action="store_true", help="print the test split (once per candidate)")
    st.set_defaults(run=study)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
