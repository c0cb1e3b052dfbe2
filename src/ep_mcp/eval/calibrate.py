"""Fitting the confidence model on the golden dev split, and judging its calibration.

``collect`` asks every golden query once (all hits kept: ``include_low_confidence``) and keeps
each hit's features with whether it is relevant, and each answer's features with whether any hit
answers. ``fit_model`` fits two L2-regularised logistic regressions (Newton's method, numpy) on
the dev rows only; ``calibration`` bins probabilities for a reliability diagram and the expected
calibration error; ``operating_points`` shows what each ``min_answerable`` would withhold.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ep_mcp.config.model import Settings
from ep_mcp.eval import floors
from ep_mcp.eval.beir import load_beir, materialise
from ep_mcp.eval.golden import GoldenSet, find_pack, select_split, with_refusals
from ep_mcp.eval.run import open_runtime
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.confidence import (
    HIT_FEATURES,
    QUERY_FEATURES,
    ConfidenceModel,
    Logistic,
)
from ep_mcp.retrieval.types import SearchRequest

Array = npt.NDArray[np.float64]
BINS = 10
HIT_DEPTH = 5
# Negatives weigh as this share of the dev queries in both fits: the mix of the first-batch dev
# split (12 of 78), not that of the dev negatives written to teach "not covered" (66 of 92).
# Probabilities are calibrated for one mix of questions; this is the golden sets' own.
NEGATIVE_SHARE = 0.15


def _neutral(names: tuple[str, ...]) -> Logistic:
    n = len(names)
    return Logistic(names, (0.0,) * n, 0.0, (0.0,) * n, (1.0,) * n)


NEUTRAL = ConfidenceModel(_neutral(HIT_FEATURES), _neutral(QUERY_FEATURES), calibrated_for="*")


@dataclass(frozen=True)
class QueryRow:
    """One golden query's answer as the fit sees it."""

    pack: str
    split: str
    negative: bool
    hits: tuple[Mapping[str, float], ...]  # features per hit (empty: the floor emptied it)
    relevant: tuple[bool, ...]  # per hit
    query: Mapping[str, float]  # answer features (without ``best_hit``)
    found_at: int | None  # 1-based rank of the first relevant file among distinct files

    @property
    def answered(self) -> bool:
        return any(self.relevant)


def _row(
    rt: PackRuntime,
    query: str,
    wanted: set[str],
    unit: Callable[[str], str],
    k: int,
    where: tuple[str, str, bool],  # (pack, split, negative)
) -> QueryRow:
    """One query asked with every hit kept and a neutral model: its features, what is relevant
    (``unit`` maps a hit's file to what ``wanted`` names: a skill, a document id)."""
    request = SearchRequest(query=query, k=k, include_low_confidence=True)
    result = rt.search(request, confidence=NEUTRAL)
    units = [unit(h.source_file) for h in result.hits]
    ranked = list(dict.fromkeys(units))
    found = next((i for i, u in enumerate(ranked, 1) if u in wanted), None)
    judged = result.assessment
    feats = tuple(judged.hit_features) if judged is not None else ()
    answer = dict(judged.query_features) if judged is not None else {}
    relevant = tuple(u in wanted for u in units[: len(feats)])
    return QueryRow(*where, feats, relevant, answer, found)


def collect(
    sets: Sequence[GoldenSet],
    roots: Sequence[Path],
    settings: Settings,
    work: Path,
    k: int = 10,
) -> list[QueryRow]:
    """Every query of every set (dev and test), with all its hits' features."""
    emb = make_embedder(settings)
    rows: list[QueryRow] = []
    for golden in sets:
        folder = find_pack(golden.pack, roots)
        golden = select_split(with_refusals(golden, folder), "all")
        rt = open_runtime(folder, settings, emb, work)
        try:
            unit = functools.partial(_doc_id, dict(rt.view.skill_of))
            for q in golden.queries:
                wanted = {unit(p) for p in q.expected}
                where = (golden.pack, q.split, q.negative)
                rows.append(_row(rt, q.query, wanted, unit, k, where))
        finally:
            rt.close()
    return rows


def collect_beir(folder: Path, settings: Settings, work: Path, k: int = 10) -> list[QueryRow]:
    """A BEIR set's queries as answerable rows: ``train`` as ``dev`` (it may choose the floor),
    ``test`` as ``test`` (reported). A hit is relevant when its document is judged so."""

    emb = make_embedder(settings)
    rows: list[QueryRow] = []
    for beir_split, split in (("train", "dev"), ("test", "test")):
        data = load_beir(folder, beir_split)
        base = work / f"beir-{data.name}"
        mapping = materialise(data, base / "docs")
        rt = open_runtime(base / "docs", settings, emb, base, kind="markdown", slug=data.name)
        try:
            for qid, text in data.queries.items():
                wanted = {d for d, grade in data.qrels[qid].items() if grade > 0}
                doc = functools.partial(_doc_id, mapping)
                rows.append(_row(rt, text, wanted, doc, k, (data.name, split, False)))
        finally:
            rt.close()
    return rows


def _doc_id(mapping: Mapping[str, str], path: str) -> str:
    """What a hit's file stands for: its skill, its corpus document id, or itself."""
    return mapping.get(path, path)


def fit_logistic(
    x: Array, y: Array, l2: float = 1.0, weight: Array | None = None, steps: int = 50
) -> tuple[Array, float]:
    """Weights and bias minimising weighted log loss + ``l2``/2 |w|² (bias free), by Newton."""
    n, d = x.shape
    sw = np.ones(n) if weight is None else weight
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (sw * (p - y)) + reg * w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


def _fit(
    names: Sequence[str], rows: Sequence[Mapping[str, float]], y: Array, l2: float, weight: Array
) -> Logistic:
    x = np.array([[r.get(n, 0.0) for n in names] for r in rows], dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    w, b = fit_logistic((x - mean) / scale, y, l2, weight)
    return Logistic(
        tuple(names), tuple(map(float, w)), b, tuple(map(float, mean)), tuple(map(float, scale))
    )


def hit_pairs(rows: Sequence[QueryRow]) -> tuple[list[Mapping[str, float]], Array]:
    feats = [f for r in rows for f in r.hits]
    labels = np.array([float(v) for r in rows for v in r.relevant])
    return feats, labels


def answer_rows(rows: Sequence[QueryRow], model: Logistic) -> tuple[list[dict[str, float]], Array]:
    """Answer features with ``best_hit`` from ``model`` (answers the floor emptied left out)."""
    kept = [r for r in rows if r.hits]
    feats = [{**r.query, "best_hit": max(model.logit(h) for h in r.hits)} for r in kept]
    return feats, np.array([float(r.answered) for r in kept])


def negative_weight(rows: Sequence[QueryRow], share: float) -> float:
    """The weight that makes the negatives among ``rows`` weigh ``share`` of them all."""
    neg = sum(1 for r in rows if r.negative)
    pos = len(rows) - neg
    return share / (1 - share) * pos / neg if neg and pos else 1.0


def fit_model(
    dev: Sequence[QueryRow],
    calibrated_for: str,
    l2: float = 1.0,
    note: str = "",
    negative_share: float = NEGATIVE_SHARE,
) -> ConfidenceModel:
    """The hit model on the dev answers' hits; the answer model on the dev answers (those the
    activation floor emptied left out); negatives weighted to ``negative_share`` in both."""
    w_neg = negative_weight(dev, negative_share)
    feats, labels = hit_pairs(dev)
    hit_weight = np.array([w_neg if r.negative else 1.0 for r in dev for _ in r.hits])
    hit = _fit(HIT_FEATURES, feats, labels, l2, hit_weight)
    kept = [r for r in dev if r.hits]
    qfeats, qlabels = answer_rows(kept, hit)
    answer_weight = np.array([w_neg if r.negative else 1.0 for r in kept])
    answerable = _fit(QUERY_FEATURES, qfeats, qlabels, l2, answer_weight)
    return ConfidenceModel(hit, answerable, calibrated_for, note)


@dataclass(frozen=True)
class Calibration:
    bins: tuple[tuple[float, float, int], ...]  # (mean predicted, observed rate, count)
    ece: float
    n: int


def calibration(probs: Sequence[float], labels: Sequence[float], bins: int = BINS) -> Calibration:
    """Equal-width bins over [0, 1]; ECE = Σ (n_b / n) |mean p_b - rate_b|."""
    p, y = np.asarray(probs, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    which = np.minimum((p * bins).astype(int), bins - 1)
    out, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        count = int(mask.sum())
        if not count:
            continue
        mp, rate = float(p[mask].mean()), float(y[mask].mean())
        out.append((mp, rate, count))
        ece += count / len(p) * abs(mp - rate)
    return Calibration(tuple(out), ece, len(p))


def hit_calibration(rows: Sequence[QueryRow], model: ConfidenceModel) -> Calibration:
    feats, labels = hit_pairs(rows)
    return calibration([model.hit.probability(f) for f in feats], list(labels))


def answerable_of(row: QueryRow, model: ConfidenceModel) -> float:
    if not row.hits:
        return 0.0
    best = max(model.hit.logit(h) for h in row.hits)
    return model.answerable.probability({**row.query, "best_hit": best})


def answer_calibration(rows: Sequence[QueryRow], model: ConfidenceModel) -> Calibration:
    return calibration([answerable_of(r, model) for r in rows], [float(r.answered) for r in rows])


@dataclass(frozen=True)
class OperatingPoint:
    min_answerable: float
    negatives: int
    not_covered: int  # negatives answered with nothing
    answerable: int
    withheld: int  # answerable queries answered with nothing
    hit_at_5: float  # over answerable queries, withheld ones counting as misses

    def to_dict(self) -> dict[str, float | str]:
        return {
            "min_answerable": self.min_answerable,
            "negatives_not_covered": f"{self.not_covered}/{self.negatives}",
            "not_covered_rate": round(self.not_covered / max(self.negatives, 1), 4),
            "answerable_withheld": f"{self.withheld}/{self.answerable}",
            "withheld_rate": round(self.withheld / max(self.answerable, 1), 4),
            "hit@5": round(self.hit_at_5, 4),
        }


def operating_point(
    rows: Sequence[QueryRow], model: ConfidenceModel, floor: float
) -> OperatingPoint:
    neg = [r for r in rows if r.negative]
    pos = [r for r in rows if not r.negative]

    def empty(r: QueryRow) -> bool:
        return not r.hits or answerable_of(r, model) < floor

    hit5 = sum(
        1 for r in pos if not empty(r) and r.found_at is not None and r.found_at <= HIT_DEPTH
    )
    return OperatingPoint(
        floor,
        len(neg),
        sum(1 for r in neg if empty(r)),
        len(pos),
        sum(1 for r in pos if empty(r)),
        hit5 / max(len(pos), 1),
    )


def choose_min_answerable(
    dev: Sequence[QueryRow],
    model: ConfidenceModel,
    max_withheld: float = floors.MAX_WITHHELD,
    min_hit5: float = 0.95,
    also: Sequence[QueryRow] = (),
) -> OperatingPoint:
    """The floor catching the most dev negatives while withholding ≤ ``max_withheld`` of the
    answerable ones — of ``also`` too (a BEIR train split: another kind of collection) — and
    keeping hit@5 ≥ ``min_hit5`` when reachable; ties: the lowest floor (``eval.floors``)."""
    base = operating_point(dev, model, 0.0)

    def allowed(point: OperatingPoint) -> bool:
        if not floors.within(point.withheld, point.answerable, max_withheld):
            return False
        if also:
            other = operating_point(also, model, point.min_answerable)
            if not floors.within(other.withheld, other.answerable, max_withheld):
                return False
        return not base.hit_at_5 >= min_hit5 > point.hit_at_5

    trials = (operating_point(dev, model, step / 100) for step in range(1, 100))
    return floors.most_caught([base, *filter(allowed, trials)], lambda p: p.not_covered)
