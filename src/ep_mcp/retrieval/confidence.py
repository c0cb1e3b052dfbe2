"""Calibrated confidence (the last stage): how likely each hit is relevant, and any hit answers.

Features come from what the pipeline already knows — each hit's ranks in the two legs and
whether they agree, its dense cosine, how much of the query's rare vocabulary (weighted by IDF)
its text and its title/headings hold, its place in the answer — and, for the answer as a whole,
the activation evidence and the names the query asks about that the pack never mentions
(another product, another tool) — unless the rest of the question is answered, when the name
was only mentioned in passing. Two small logistic models (``confidence.json``, fitted on the
golden dev split by ``ep-mcp bench calibrate``) turn them into probabilities. Pure: features in,
probabilities out; the model is loaded at the edge (``confidence_file``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.threshold import Evidence
from ep_mcp.text import stem, words

HIT_FEATURES = (
    "cosine",  # the hit's dense cosine (0 outside the dense pool)
    "cosine_gap",  # best cosine of the query - this hit's cosine
    "lexical_rr",  # 1 / lexical rank (0: not in the lexical pool)
    "vector_rr",  # 1 / vector rank
    "agree",  # in the top 10 of both legs
    "idf_coverage",  # share of the query's IDF mass found in the hit's text
    "field_coverage",  # share of the query's IDF mass in the file title and headings
    "relative_score",  # final score / best final score
    "position_rr",  # 1 / place in the answer
    "expanded",  # pulled in by graph or requires:
)
AGREE_DEPTH = 10
QUERY_FEATURES = (
    "best_hit",  # logit of the best hit's confidence
    "top_cosine",
    "cosine_margin",  # best cosine - mean of ranks 10..30
    "coverage",  # best plain term coverage among the top lexical hits
    "idf_coverage",  # best IDF coverage among the hits
    "rare_missing",  # IDF share of the single rarest query term no hit contains
    # IDF share of the query's name-like words found nowhere in the pack, times the share of
    # the rest of the query the first hit leaves uncovered: a product named in passing by a
    # question the pack answers costs nothing; a question about that product does
    "unknown_uncovered",
)


@dataclass(frozen=True)
class Logistic:
    """p = sigmoid(bias + Σ w_i (x_i - mean_i) / scale_i) over named features."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]

    def logit(self, x: Mapping[str, float]) -> float:
        z = self.bias
        get = x.get
        for name, w, m, s in self._terms:
            z += w * (get(name, 0.0) - m) / s
        return z

    @cached_property
    def _terms(self) -> tuple[tuple[str, float, float, float], ...]:
        """(name, weight, mean, scale or 1) per feature, zipped once per model, not per hit."""
        scale = tuple(s or 1.0 for s in self.scale)
        return tuple(zip(self.names, self.weights, self.mean, scale, strict=True))

    def probability(self, x: Mapping[str, float]) -> float:
        return sigmoid(self.logit(x))


@dataclass(frozen=True)
class ConfidenceModel:
    hit: Logistic
    answerable: Logistic
    calibrated_for: str  # the embedding model (prefix) whose cosines it was fitted on
    fitted_on: str = ""


@dataclass(frozen=True)
class HitView:
    """What the stage reads of one hit: its candidate and its words."""

    candidate: Candidate
    text: str
    fields: str  # file title and heading path


@dataclass(frozen=True)
class Assessment:
    confidences: tuple[float, ...]  # per hit, in hit order
    answerable: float
    hit_features: tuple[Mapping[str, float], ...] = ()
    query_features: Mapping[str, float] = field(default_factory=dict)


@lru_cache(maxsize=4096)
def stems_of(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in set(words(text)))


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def idf_weights(terms: Sequence[str], counts: Mapping[str, int], total: int) -> dict[str, float]:
    """Smoothed IDF of each query term, ``log((N + 1) / (df + 0.5))`` (unknown df: as rare)."""
    return {t: math.log((total + 1) / (counts.get(t, 0) + 0.5)) for t in terms}


def idf_coverage(idf: Mapping[str, float], text: str) -> float:
    """Share of the query's IDF mass whose terms occur in ``text`` (crude stems)."""
    mass = sum(idf.values())
    if mass <= 0:
        return 0.0
    found = stems_of(text)
    return sum(w for t, w in idf.items() if stem(t) in found) / mass


def hit_features(
    view: HitView,
    position: int,
    best_score: float,
    evidence: Evidence,
    idf: Mapping[str, float],
) -> dict[str, float]:
    c = view.candidate
    top = evidence.top_cosine or 0.0
    cosine = c.vector_score if c.vector_score is not None else 0.0
    return {
        "cosine": cosine,
        "cosine_gap": top - cosine if c.vector_score is not None else 1.0,
        "lexical_rr": 1.0 / c.lexical_rank if c.lexical_rank else 0.0,
        "vector_rr": 1.0 / c.vector_rank if c.vector_rank else 0.0,
        "agree": float(max(c.lexical_rank or 99, c.vector_rank or 99) <= AGREE_DEPTH),
        "idf_coverage": idf_coverage(idf, view.text),
        "field_coverage": idf_coverage(idf, view.fields),
        "relative_score": c.score / best_score if best_score > 0 else 0.0,
        "position_rr": 1.0 / position,
        "expanded": float(c.origin != "search"),
    }


def query_features(
    evidence: Evidence,
    hits: Sequence[Mapping[str, float]],
    best_logit: float,
    texts: Sequence[str],
    idf: Mapping[str, float],
    unknown_names: Collection[str] = (),
) -> dict[str, float]:
    mass = sum(idf.values()) or 1.0
    seen = set().union(*(stems_of(t) for t in texts)) if texts else set()
    missing = [w for t, w in idf.items() if stem(t) not in seen]
    unknown = sum(w for t, w in idf.items() if t in unknown_names) / mass
    return {
        "best_hit": best_logit,
        "top_cosine": evidence.top_cosine or 0.0,
        "cosine_margin": evidence.cosine_margin or 0.0,
        "coverage": evidence.coverage,
        "idf_coverage": max((h["idf_coverage"] for h in hits), default=0.0),
        "rare_missing": max(missing, default=0.0) / mass,
        "unknown_uncovered": unknown * uncovered_rest(idf, unknown_names, texts[:1]),
    }


def uncovered_rest(
    idf: Mapping[str, float], unknown: Collection[str], texts: Sequence[str]
) -> float:
    """Share of the IDF mass of the query's other terms (not ``unknown``) that ``texts`` (the
    first hit's) leave out; 1 when there are none or no text."""
    rest = {t: w for t, w in idf.items() if t not in unknown}
    if not rest or not texts:
        return 1.0
    return 1.0 - idf_coverage(rest, texts[0])


def assess(
    hits: Sequence[HitView],
    evidence: Evidence,
    idf: Mapping[str, float],
    model: ConfidenceModel,
    unknown_names: Collection[str] = (),
) -> Assessment:
    """Each hit's probability of being relevant and the answer's of holding one that is.

    ``unknown_names``: query terms written like names (``name_words``) that no chunk of the
    pack holds — a product or tool the pack never mentions is strong evidence it is out of scope.
    """
    if not hits:
        return Assessment((), 0.0)
    best = max(h.candidate.score for h in hits)
    rows = tuple(hit_features(h, i, best, evidence, idf) for i, h in enumerate(hits, start=1))
    logits = [model.hit.logit(r) for r in rows]
    q = query_features(evidence, rows, max(logits), [h.text for h in hits[:5]], idf, unknown_names)
    return Assessment(tuple(sigmoid(z) for z in logits), model.answerable.probability(q), rows, q)


def model_from_dict(data: Mapping[str, object]) -> ConfidenceModel:
    def logistic(d: object) -> Logistic:
        if not isinstance(d, Mapping):
            raise TypeError(f"a model is an object of names and weights, not {type(d).__name__}")
        names = tuple(str(n) for n in d["names"])
        model = Logistic(
            names=names,
            weights=tuple(float(w) for w in d["weights"]),
            bias=float(d["bias"]),
            mean=tuple(float(m) for m in d.get("mean", [0.0] * len(names))),
            scale=tuple(float(s) for s in d.get("scale", [1.0] * len(names))),
        )
        sizes = {len(model.weights), len(model.mean), len(model.scale)}
        if sizes != {len(names)}:  # else every search would fail on it, not the load
            raise ValueError(
                f"{len(names)} names but {len(model.weights)} weights, {len(model.mean)} means "
                f"and {len(model.scale)} scales"
            )
        return model

    return ConfidenceModel(
        hit=logistic(data["hit"]),
        answerable=logistic(data["answerable"]),
        calibrated_for=str(data.get("calibrated_for", "*")),
        fitted_on=str(data.get("fitted_on", "")),
    )


def model_to_dict(model: ConfidenceModel) -> dict[str, object]:
    def logistic(m: Logistic) -> dict[str, object]:
        return {
            "names": list(m.names),
            "weights": [round(w, 6) for w in m.weights],
            "bias": round(m.bias, 6),
            "mean": [round(v, 6) for v in m.mean],
            "scale": [round(v, 6) for v in m.scale],
        }

    return {
        "calibrated_for": model.calibrated_for,
        "fitted_on": model.fitted_on,
        "hit": logistic(model.hit),
        "answerable": logistic(model.answerable),
    }


def applies(model: ConfidenceModel, embedding_model: str | None) -> bool:
    """The model's cosine features only mean something for the embedder it was fitted on."""
    if model.calibrated_for == "*":
        return True
    return bool(embedding_model) and str(embedding_model).startswith(model.calibrated_for)
