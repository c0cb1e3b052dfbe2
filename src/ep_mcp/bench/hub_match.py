"""The hub's "no skill matches" floor: its evidence on every golden query, the floor chosen on dev,
and what it does on dev and test (``ep-mcp bench skills --match``).

Each query is asked once with ``include_low_confidence`` (the ranking does not depend on the
floor), keeping the evidence and the expected skill's rank; a floor is then a cut over those
rows (so the no-floor figures are those of ``--include-low-confidence``). The hub's own golden
negatives are few (4 on dev), so the ExpertPacks' golden questions (home assistant, Blender,
solar) are borrowed as negatives, split for split: no skill of either repository answers them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.bench.hub import MODES, golden_queries
from ep_mcp.config.model import Settings
from ep_mcp.eval import floors
from ep_mcp.eval.golden import GoldenQuery, load_golden
from ep_mcp.eval.metrics import first_rank
from ep_mcp.hub.hub import SkillHub
from ep_mcp.index.embed.base import Embedder
from ep_mcp.retrieval import threshold as th

BORROWED = ("home-assistant", "blender-3d", "solar-diy")  # golden sets lent as negatives
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5)  # coverage weights tried on dev


@dataclass(frozen=True)
class MatchRow:
    id: str
    split: str
    negative: bool
    borrowed: bool
    rank: int | None  # the expected skill's rank, everything shown (None: missed or negative)
    evidence: th.Evidence
    absent: bool = False  # a task for a skill no tap has (``--absent``): counted on its own


@dataclass(frozen=True)
class OperatingPoint:
    floor: th.Floor
    rule: str  # hybrid | lexical
    negatives: int
    caught: int  # negatives answered with no skill
    own_negatives: int  # the hub's golden negatives (not borrowed)
    own_caught: int
    answerable: int
    withheld: int
    hit_at_1: float  # withheld queries count as misses
    hit_at_5: float
    absent: int = 0  # tasks for skills no tap has
    absent_matched: int = 0  # …answered with a skill anyway

    def to_dict(self) -> dict[str, object]:
        f = self.floor
        return {
            "rule": self.rule,
            "min_match": _finite(f.hybrid if self.rule == th.HYBRID else f.lexical),
            "coverage_weight": f.coverage_weight if self.rule == th.HYBRID else None,
            "negatives_no_skill": f"{self.caught}/{self.negatives}",
            "golden_negatives_no_skill": f"{self.own_caught}/{self.own_negatives}",
            "answerable_withheld": f"{self.withheld}/{self.answerable}",
            "withheld_rate": round(self.withheld / max(self.answerable, 1), 4),
            "hit@1": round(self.hit_at_1, 3),
            "hit@5": round(self.hit_at_5, 3),
            **(
                {"absent_skills_matched": f"{self.absent_matched}/{self.absent}"}
                if self.absent
                else {}
            ),
        }


def borrowed_negatives(golden_dir: Path) -> list[GoldenQuery]:
    out = []
    for pack in BORROWED:
        path = golden_dir / f"{pack}.yaml"
        if path.exists():
            for q in load_golden(path).queries:
                out.append(dataclasses.replace(q, id=f"{pack}:{q.id}", expected=(), must_not=()))
    return out


def collect(
    hub: SkillHub,
    queries: Sequence[GoldenQuery],
    borrowed: Sequence[GoldenQuery],
    absent: Sequence[GoldenQuery] = (),
) -> list[MatchRow]:
    rows = []
    asked = [
        *((q, False, False) for q in queries),
        *((q, True, False) for q in borrowed),
        *((q, False, True) for q in absent),
    ]
    for q, lent, missing in asked:
        reply = hub.search(q.query, 10, include_low_confidence=True)
        assert reply.evidence is not None, "the golden taps are indexed"
        negative = lent or missing or q.negative
        rank = None if negative else first_rank([r.skill.id for r in reply.results], q.expected)
        split = q.split or "dev"
        rows.append(MatchRow(q.id, split, negative, lent, rank, reply.evidence, missing))
    return rows


def operating_point(
    rows: Sequence[MatchRow], floor: th.Floor, embedder: str | None
) -> OperatingPoint:
    rule = th.LEXICAL
    negatives = caught = own = own_caught = answerable = withheld = at1 = at5 = 0
    absent = absent_matched = 0
    for r in rows:
        verdict = th.judge(r.evidence, floor, embedder)
        rule = verdict.rule
        if r.absent:
            absent += 1
            absent_matched += verdict.answered
            continue
        if r.negative:
            negatives += 1
            caught += not verdict.answered
            own += not r.borrowed
            own_caught += not r.borrowed and not verdict.answered
            continue
        answerable += 1
        withheld += not verdict.answered
        if verdict.answered and r.rank is not None:
            at1 += r.rank == 1
            at5 += r.rank <= 5
    n = max(answerable, 1)
    return OperatingPoint(
        floor, rule, negatives, caught, own, own_caught, answerable, withheld, at1 / n, at5 / n,
        absent, absent_matched,
    )  # fmt: skip


def choose_floor(dev: Sequence[MatchRow], base: th.Floor, embedder: str | None) -> OperatingPoint:
    """On dev only: for each coverage weight, the highest floor that withholds at most
    ``floors.MAX_WITHHELD`` of the answerable queries (``floors.cut_keeping``); the weight
    catching most negatives wins (ties: the smaller weight)."""
    answerable = [r for r in dev if not r.negative]
    lexical = th.judge(dev[0].evidence, base, embedder).rule == th.LEXICAL
    points = []
    for w in (0.0,) if lexical else WEIGHTS:
        trial = dataclasses.replace(base, coverage_weight=w)
        cut = floors.cut_keeping([th.judge(r.evidence, trial, embedder).score for r in answerable])
        floor = (
            dataclasses.replace(trial, lexical=cut)
            if lexical
            else dataclasses.replace(trial, hybrid=cut)
        )
        points.append(operating_point(dev, floor, embedder))
    return floors.most_caught(points, lambda p: p.caught)


def report(
    settings: Settings,
    env: Mapping[str, str],
    golden_dir: Path,
    modes: Sequence[str],
    embedder: Embedder | str | None = "auto",
    absent: Path | None = None,
) -> dict[str, object]:
    """Per mode (hybrid: cosine + coverage; lexical: coverage alone): the floor chosen on dev
    and its effect on dev and test, next to the configured floor's on test (and on dev and
    test without the unknown-word penalty). ``absent``: a golden file of tasks for skills no
    tap has, reported as how many still get a skill."""
    queries = golden_queries(golden_dir)
    lent = borrowed_negatives(golden_dir)
    missing = load_golden(absent).queries if absent is not None else ()
    out: dict[str, object] = {}
    for mode in modes:
        hub = SkillHub(settings, env, embedder=embedder, llm=None, legs=MODES[mode])
        try:
            rows = collect(hub, queries, lent, missing)
            model = hub.embedder() if mode != "lexical" else None
            name = model.name if model is not None else None
            configured = hub.match_floor
        finally:
            hub.close()
        dev = [r for r in rows if r.split == "dev"]
        test = [r for r in rows if r.split == "test"]
        chosen = choose_floor(dev, configured, name)
        out[mode] = {
            "chosen_on_dev": chosen.to_dict(),
            "test_at_chosen": operating_point(test, chosen.floor, name).to_dict(),
            "test_at_configured": operating_point(test, configured, name).to_dict(),
            "test_without_floor": operating_point(test, _open(configured), name).to_dict(),
            "dev_at_configured": operating_point(dev, configured, name).to_dict(),
            **{
                f"{split}_without_unknown_penalty": operating_point(
                    part, dataclasses.replace(configured, unknown_penalty=0.0), name
                ).to_dict()
                for split, part in (("dev", dev), ("test", test))
            },
        }
    return out


def _open(floor: th.Floor) -> th.Floor:
    return dataclasses.replace(floor, hybrid=float("-inf"), lexical=float("-inf"))


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None  # JSON has no -Infinity
