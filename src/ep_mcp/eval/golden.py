"""Golden-set evaluation (SPEC §10): load the YAML sets, run them, score per pack and category.

A query's ranked answer is the list of distinct files in hit order (requires:-appended hits
included, after the top k). In a skill repository every file of a skill's directory stands for
the skill, so a supporting file of the expected skill counts as a hit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ep_mcp.errors import ConfigError, NotFoundError
from ep_mcp.eval.metrics import first_rank, hit_rate, mean_reciprocal_rank

CUTOFFS = (1, 3, 5)
MUST_NOT_DEPTH = 5


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    query: str
    category: str
    expected: tuple[str, ...]  # best first; () = the pack does not answer it
    must_not: tuple[str, ...] = ()

    @property
    def negative(self) -> bool:
        return not self.expected


@dataclass(frozen=True)
class GoldenSet:
    pack: str
    queries: tuple[GoldenQuery, ...]
    source: Path | None = None


@dataclass(frozen=True)
class QueryOutcome:
    query: GoldenQuery
    ranked: tuple[str, ...]  # distinct units (files, or skill directories), best first
    rank: int | None  # 1-based rank of the first expected unit
    must_not_hits: tuple[str, ...]
    returned: int  # hits returned (negatives: should be 0)


@dataclass(frozen=True)
class Metrics:
    queries: int
    recall: Mapping[int, float]  # hit@k over answerable queries
    mrr: float
    must_not_violations: int
    negatives: int
    negatives_empty: int

    @property
    def negative_false_positives(self) -> int:
        return self.negatives - self.negatives_empty

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"queries": self.queries}
        out.update({f"recall@{k}": round(v, 4) for k, v in self.recall.items()})
        out.update(
            {
                "mrr": round(self.mrr, 4),
                "must_not_violations": self.must_not_violations,
                "negatives": self.negatives,
                "negatives_empty": self.negatives_empty,
                "negative_false_positives": self.negative_false_positives,
            }
        )
        return out


@dataclass(frozen=True)
class PackReport:
    pack: str
    outcomes: tuple[QueryOutcome, ...]
    overall: Metrics
    by_category: Mapping[str, Metrics] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "overall": self.overall.to_dict(),
            "by_category": {c: m.to_dict() for c, m in self.by_category.items()},
            "misses": [
                {
                    "id": o.query.id,
                    "query": o.query.query,
                    "category": o.query.category,
                    "expected": list(o.query.expected),
                    "got": list(o.ranked[:5]),
                    "rank": o.rank,
                }
                for o in self.outcomes
                if (o.query.negative and o.returned)
                or (not o.query.negative and o.rank != 1)
                or o.must_not_hits
            ],
        }


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of paths")
    return tuple(value)


def load_golden(path: Path) -> GoldenSet:
    """One golden YAML file (``pack:`` and ``queries:``), checked for shape."""
    from ep_mcp.packs.yamlsafe import YamlError, load_yaml_file

    try:
        data = load_yaml_file(path)
    except (OSError, YamlError) as exc:
        raise ConfigError(f"cannot read golden set {path}: {exc} — check the file") from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("pack"), str):
        raise ConfigError(f"{path}: a golden set is a mapping with `pack:` and `queries:`")
    raw = data.get("queries") or []
    if not isinstance(raw, list):
        raise ConfigError(f"{path.name}: queries: must be a list of {{id, query, expected}}")
    queries = []
    for i, q in enumerate(raw):
        where = f"{path.name}: queries[{i}]"
        if not isinstance(q, Mapping) or not q.get("query"):
            raise ConfigError(f"{where}: each query needs at least `query:`")
        queries.append(
            GoldenQuery(
                id=str(q.get("id", i)),
                query=str(q["query"]),
                category=str(q.get("category", "uncategorised")),
                expected=_strings(q.get("expected"), f"{where}.expected"),
                must_not=_strings(q.get("must_not"), f"{where}.must_not"),
            )
        )
    return GoldenSet(str(data["pack"]), tuple(queries), path)


def load_golden_dir(folder: Path) -> list[GoldenSet]:
    files = sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))
    if not files:
        raise NotFoundError(f"no golden sets (*.yaml) in {folder} — point --golden at them")
    return [load_golden(f) for f in files]


def find_pack(name: str, roots: Sequence[Path]) -> Path:
    """The folder ``name`` under the first root that has it."""
    for root in roots:
        if (root / name).is_dir():
            return root / name
    raise NotFoundError(
        f"pack '{name}' not found under {', '.join(str(r) for r in roots) or 'no roots'} — "
        "pass the folder that contains it with --packs-root"
    )


def judge(query: GoldenQuery, paths: Sequence[str], unit_of: Callable[[str], str]) -> QueryOutcome:
    """Score one answer (files in hit order) against its labels."""
    ranked = tuple(dict.fromkeys(unit_of(p) for p in paths))
    wanted = {unit_of(p) for p in query.expected}
    rank = first_rank(ranked, wanted)
    banned = {unit_of(p) for p in query.must_not}
    hits = tuple(u for u in ranked[:MUST_NOT_DEPTH] if u in banned)
    return QueryOutcome(query, ranked, rank, hits, len(paths))


def metrics(outcomes: Iterable[QueryOutcome]) -> Metrics:
    items = list(outcomes)
    positive = [o for o in items if not o.query.negative]
    negative = [o for o in items if o.query.negative]
    ranks = [o.rank for o in positive]
    return Metrics(
        queries=len(items),
        recall={k: hit_rate(ranks, k) for k in CUTOFFS},
        mrr=mean_reciprocal_rank(ranks),
        must_not_violations=sum(1 for o in items if o.must_not_hits),
        negatives=len(negative),
        negatives_empty=sum(1 for o in negative if o.returned == 0),
    )


def report(pack: str, outcomes: Sequence[QueryOutcome]) -> PackReport:
    cats: dict[str, list[QueryOutcome]] = {}
    for o in outcomes:
        cats.setdefault(o.query.category, []).append(o)
    return PackReport(
        pack, tuple(outcomes), metrics(outcomes), {c: metrics(v) for c, v in sorted(cats.items())}
    )


def run_set(
    golden: GoldenSet,
    answer: Callable[[str], Sequence[str]],
    unit_of: Callable[[str], str] = lambda p: p,
) -> PackReport:
    """Ask every query through ``answer`` (query → files in hit order) and score it."""
    return report(golden.pack, [judge(q, answer(q.query), unit_of) for q in golden.queries])


def parse_minimums(text: str) -> dict[str, float]:
    """``"recall@5=0.9,mrr=0.7"`` → {"recall@5": 0.9, "mrr": 0.7}."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(
                f"EP_EVAL_MIN: {part!r} is not name=number (e.g. recall@5=0.9,mrr=0.7)"
            ) from None
    return out


def shortfalls(rep: PackReport, minimums: Mapping[str, float]) -> list[str]:
    """Which minimums this pack misses, as readable lines."""
    values = rep.overall.to_dict()
    values["negatives_empty_rate"] = (
        rep.overall.negatives_empty / rep.overall.negatives if rep.overall.negatives else 1.0
    )
    out = []
    for name, floor in minimums.items():
        if name not in values:
            raise ConfigError(
                f"EP_EVAL_MIN: unknown metric {name!r} — use one of {', '.join(sorted(values))}"
            )
        if float(values[name]) < floor:
            out.append(f"{rep.pack}: {name} {float(values[name]):.3f} < {floor}")
    return out


def render_table(reports: Sequence[PackReport]) -> str:
    """Per pack and per category: recall@1/3/5, MRR, must_not violations, negatives."""
    head = (
        f"{'pack':<20} {'category':<11} {'n':>3} {'R@1':>6} {'R@3':>6} {'R@5':>6} "
        f"{'MRR':>6} {'must_not':>8} {'neg empty':>9}"
    )
    lines = [head, "-" * len(head)]

    def row(pack: str, cat: str, m: Metrics) -> str:
        neg = f"{m.negatives_empty}/{m.negatives}" if m.negatives else "-"
        pos = m.queries - m.negatives
        vals = (
            [f"{m.recall[k]:6.3f}" for k in CUTOFFS] + [f"{m.mrr:6.3f}"]
            if pos
            else [f"{'-':>6}"] * 4
        )
        return (
            f"{pack:<20} {cat:<11} {m.queries:>3} {' '.join(vals)} "
            f"{m.must_not_violations:>8} {neg:>9}"
        )

    for rep in reports:
        for cat, m in rep.by_category.items():
            lines.append(row(rep.pack, cat, m))
        lines.append(row(rep.pack, "ALL", rep.overall))
    return "\n".join(lines)
