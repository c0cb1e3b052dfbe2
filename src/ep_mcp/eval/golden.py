"""Golden-set evaluation (SPEC §10): load the YAML sets, run them, score per pack and category.

A query's ranked answer is the list of distinct files in hit order (requires:-appended hits
included, after the top k). In a skill repository every file of a skill's directory stands for
the skill, so a supporting file of the expected skill counts as a hit.

Every query belongs to one split: ``dev`` (constants are tuned on it) or ``test`` (held out,
reported only). A query without ``split:`` is ``dev`` — nothing is held out unless someone said
so. A set may also name its pack's own benchmark file (``refusals: eval/benchmark.yaml``): the
pack authors' out-of-scope questions (category ``refusal``) join the set as test-only negatives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ep_mcp.errors import ConfigError, NotFoundError
from ep_mcp.eval.metrics import first_rank, hit_rate, mean_reciprocal_rank
from ep_mcp.packs.yamlsafe import YamlError, load_yaml_file

CUTOFFS = (1, 3, 5)
MUST_NOT_DEPTH = 5
SPLITS = ("dev", "test")
SPLIT_SEED = "ep-mcp-golden-split-v1"


@dataclass(frozen=True)
class GoldenQuery:
    id: str
    query: str
    category: str
    expected: tuple[str, ...]  # best first; () = the pack does not answer it
    must_not: tuple[str, ...] = ()
    split: str = "dev"  # "dev" (tune on it) or "test" (held out, report only)

    @property
    def negative(self) -> bool:
        return not self.expected


@dataclass(frozen=True)
class GoldenSet:
    pack: str
    queries: tuple[GoldenQuery, ...]
    source: Path | None = None
    refusals: str | None = None  # pack-relative benchmark file whose refusals join as test
    split: str = "all"  # which queries this set holds: dev, test or all


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
    withheld: int = 0  # answerable queries answered with nothing (floor or min_answerable)

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
                "answerable_withheld": self.withheld,
            }
        )
        return out


@dataclass(frozen=True)
class PackReport:
    pack: str
    outcomes: tuple[QueryOutcome, ...]
    overall: Metrics
    by_category: Mapping[str, Metrics] = field(default_factory=dict)
    split: str = "all"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pack": self.pack,
            "split": self.split,
            "overall": self.overall.to_dict(),
            "by_category": {c: m.to_dict() for c, m in self.by_category.items()},
            "misses": [
                {
                    "id": o.query.id,
                    "query": o.query.query,
                    "category": o.query.category,
                    "split": o.query.split,
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


def _split(value: Any, where: str) -> str:
    if value is None:
        return "dev"
    if value not in SPLITS:
        raise ConfigError(f"{where}.split: {value!r} is not one of {', '.join(SPLITS)}")
    return str(value)


def load_golden(path: Path) -> GoldenSet:
    """One golden YAML file (``pack:`` and ``queries:``), checked for shape."""

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
                split=_split(q.get("split"), where),
            )
        )
    refusals = data.get("refusals")
    if refusals is not None and not isinstance(refusals, str):
        raise ConfigError(
            f"{path.name}: refusals: is a pack-relative path such as eval/benchmark.yaml"
        )
    return GoldenSet(str(data["pack"]), tuple(queries), path, refusals)


def load_refusals(folder: Path, rel: str) -> tuple[GoldenQuery, ...]:
    """The pack authors' out-of-scope questions (``category: refusal`` in their benchmark file),
    as test-only negatives."""

    path = folder / rel
    try:
        data = load_yaml_file(path)
    except (OSError, YamlError) as exc:
        raise NotFoundError(
            f"cannot read the refusals file {path}: {exc} — fix `refusals:` in the golden set"
        ) from exc
    raw = data.get("questions") if isinstance(data, Mapping) else None
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: expected `questions:` as a list")
    return tuple(
        GoldenQuery(
            id=f"{rel}#{q.get('id', i)}",
            query=str(q["question"]),
            category="refusal",
            expected=(),
            split="test",
        )
        for i, q in enumerate(raw)
        if isinstance(q, Mapping) and q.get("category") == "refusal" and q.get("question")
    )


def with_refusals(golden: GoldenSet, folder: Path) -> GoldenSet:
    """``golden`` plus the refusals its ``refusals:`` file names (nothing to add without one)."""
    if golden.refusals is None:
        return golden
    return replace(golden, queries=golden.queries + load_refusals(folder, golden.refusals))


def select_split(golden: GoldenSet, split: str) -> GoldenSet:
    """The queries of one split (``dev`` or ``test``), or all of them (``all``)."""
    if split not in (*SPLITS, "all"):
        raise ConfigError(f"split {split!r} is not one of dev, test, all")
    if split == "all":
        return replace(golden, split="all")
    chosen = tuple(q for q in golden.queries if q.split == split)
    return replace(golden, queries=chosen, split=split)


def stratified_split(queries: Iterable[GoldenQuery], seed: str = SPLIT_SEED) -> dict[str, str]:
    """The rule that assigned the first queries of each set: within each category, order the
    queries by sha256(seed + id) and deal them out test, dev, test, dev, … (so each category is
    halved, the odd one going to test). Returns id → split."""
    by_cat: dict[str, list[str]] = {}
    for q in queries:
        by_cat.setdefault(q.category, []).append(q.id)
    out: dict[str, str] = {}
    for ids in by_cat.values():
        ids.sort(key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
        out.update({i: SPLITS[1 - n % 2] for n, i in enumerate(ids)})
    return out


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
        withheld=sum(1 for o in positive if o.returned == 0),
    )


def report(pack: str, outcomes: Sequence[QueryOutcome], split: str = "all") -> PackReport:
    cats: dict[str, list[QueryOutcome]] = {}
    for o in outcomes:
        cats.setdefault(o.query.category, []).append(o)
    return PackReport(
        pack,
        tuple(outcomes),
        metrics(outcomes),
        {c: metrics(v) for c, v in sorted(cats.items())},
        split,
    )


def run_set(
    golden: GoldenSet,
    answer: Callable[[str], Sequence[str]],
    unit_of: Callable[[str], str] = lambda p: p,
) -> PackReport:
    """Ask every query through ``answer`` (query → files in hit order) and score it."""
    outcomes = [judge(q, answer(q.query), unit_of) for q in golden.queries]
    return report(golden.pack, outcomes, golden.split)


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
    """Per pack (and split) and per category: recall@1/3/5, MRR, must_not violations,
    negatives."""
    head = (
        f"{'pack':<20} {'split':<5} {'category':<11} {'n':>3} {'R@1':>6} {'R@3':>6} {'R@5':>6} "
        f"{'MRR':>6} {'must_not':>8} {'neg empty':>9} {'withheld':>8}"
    )
    lines = [head, "-" * len(head)]

    def row(pack: str, split: str, cat: str, m: Metrics) -> str:
        neg = f"{m.negatives_empty}/{m.negatives}" if m.negatives else "-"
        pos = m.queries - m.negatives
        vals = (
            [f"{m.recall[k]:6.3f}" for k in CUTOFFS] + [f"{m.mrr:6.3f}"]
            if pos
            else [f"{'-':>6}"] * 4
        )
        return (
            f"{pack:<20} {split:<5} {cat:<11} {m.queries:>3} {' '.join(vals)} "
            f"{m.must_not_violations:>8} {neg:>9} {m.withheld if pos else '-':>8}"
        )

    for rep in reports:
        for cat, m in rep.by_category.items():
            lines.append(row(rep.pack, rep.split, cat, m))
        lines.append(row(rep.pack, rep.split, "ALL", rep.overall))
    return "\n".join(lines)
