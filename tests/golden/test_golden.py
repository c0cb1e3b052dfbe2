"""Golden-set evaluation over the shared packs (SPEC §10). Run with ``pytest -m golden``.

Each set runs twice, once per split, against per-pack floors a little below what was measured
(``DEV_MIN`` and ``TEST_MIN``; ``EP_EVAL_MIN`` and ``EP_EVAL_MIN_TEST`` override them for every
pack), so the gate catches a regression on queries no constant was tuned on; `.ci/run` runs it.
"Today" comes from ``EP_EVAL_TODAY``. Indexes are cached in pytest's cache folder (or
``EP_EVAL_WORK``) so a rerun only re-embeds what changed.

Every set also runs on the PostgreSQL engine when a PostgreSQL with pgvector is found
(tests/postgres_server.py; skipped with the reason otherwise): the SQLite index is loaded into
the server and served from there, must meet the same floors, and must rank every query exactly
as SQLite does.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from conftest import PACKS, SHARED_ENV, SKILLS
from ep_mcp.config.env import resolve_environment
from ep_mcp.config.model import IndexEngine, Settings
from ep_mcp.eval.golden import (
    GoldenSet,
    PackReport,
    load_golden,
    parse_minimums,
    render_table,
    shortfalls,
)
from ep_mcp.eval.run import evaluate_golden

HERE = Path(__file__).resolve().parent

SETS = sorted(HERE.glob("*.yaml"))
DEFAULT_MIN = "recall@5=0.9,mrr=0.7"
# Floors about one query under what was measured (docs/BENCHMARKS.md, "Eighth round": embedding
# windows on, min_answerable 0.28, measured 2026-12-02): hit@1 and hit@5 one answerable query
# under, MRR 0.02 under, negatives answered empty one negative under — on test (41-44 answerable
# queries a pack) and on the enlarged dev split (42-45 a pack since the second dev batch, ids 301
# and up), so a ranking knob that stops working fails `.ci/run`. The int8 model's cosines differ
# slightly between machines (obra-superpowers' sup-018 ranked 5th on one, 6th on another), which
# one query of room absorbs. Lower a floor only with a measured reason; never raise one by tuning
# on the test split.
TEST_MIN = {
    "anthropics-skills": "recall@1=0.84,recall@5=0.93,mrr=0.88,negatives_empty_rate=0.63",
    "blender-3d": "recall@1=0.84,recall@5=0.93,mrr=0.88,negatives_empty_rate=0.56",
    "home-assistant": "recall@1=0.83,recall@5=0.92,mrr=0.87,negatives_empty_rate=0.53",
    "obra-superpowers": "recall@1=0.84,recall@5=0.95,mrr=0.89,negatives_empty_rate=0.63",
    "solar-diy": "recall@1=0.82,recall@5=0.92,mrr=0.87,negatives_empty_rate=0.28",
}
DEV_MIN = {
    "anthropics-skills": "recall@1=0.88,recall@5=0.9,mrr=0.89,negatives_empty_rate=0.5",
    "blender-3d": "recall@1=0.8,recall@5=0.88,mrr=0.84,negatives_empty_rate=0.5",
    "home-assistant": "recall@1=0.84,recall@5=0.97,mrr=0.9,negatives_empty_rate=0.57",
    "obra-superpowers": "recall@1=0.81,recall@5=0.95,mrr=0.88,negatives_empty_rate=0.65",
    "solar-diy": "recall@1=0.8,recall@5=0.95,mrr=0.87,negatives_empty_rate=0.13",
}


@pytest.fixture(scope="session")
def work(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("EP_EVAL_WORK"):
        return Path(os.environ["EP_EVAL_WORK"])
    cache = getattr(request.config, "cache", None)
    return Path(cache.mkdir("ep-mcp-golden")) if cache else tmp_path_factory.mktemp("golden")


def minimums(pack: str, split: str) -> dict[str, float]:
    if split == "dev":
        return parse_minimums(os.environ.get("EP_EVAL_MIN", DEV_MIN.get(pack, DEFAULT_MIN)))
    return parse_minimums(os.environ.get("EP_EVAL_MIN_TEST", TEST_MIN.get(pack, DEFAULT_MIN)))


def _golden(golden_file: Path) -> tuple[GoldenSet, list[Path]]:
    golden = load_golden(golden_file)
    roots = [root for root in (PACKS, SKILLS) if (root / golden.pack).is_dir()]
    if not roots:
        pytest.skip(
            f"pack {golden.pack} is not present under {PACKS} or {SKILLS} — set {SHARED_ENV} "
            "to the shared folder, or put it at ../shared beside the repository"
        )
    return golden, roots


def _answers(report: PackReport) -> list[tuple[str, tuple[str, ...], int | None, int]]:
    return [(o.query.id, o.ranked, o.rank, o.returned) for o in report.outcomes]


@pytest.mark.golden
@pytest.mark.parametrize("split", ["dev", "test"])
@pytest.mark.parametrize("golden_file", SETS, ids=[p.stem for p in SETS])
def test_golden_set_meets_the_minimums(golden_file: Path, split: str, work: Path) -> None:
    golden, roots = _golden(golden_file)
    (report,) = evaluate_golden(
        [golden], roots, resolve_environment(Settings(), os.environ), work, split=split
    )
    print(render_table([report]))
    assert not shortfalls(report, minimums(golden.pack, split))


@pytest.mark.golden
@pytest.mark.parametrize("split", ["dev", "test"])
@pytest.mark.parametrize("golden_file", SETS, ids=[p.stem for p in SETS])
def test_golden_set_on_postgres_meets_the_minimums_as_sqlite_ranks(
    golden_file: Path, split: str, work: Path, postgres_dsn: str
) -> None:
    golden, roots = _golden(golden_file)
    settings = resolve_environment(Settings(), os.environ)
    (sqlite,) = evaluate_golden([golden], roots, settings, work, split=split)
    served = dataclasses.replace(settings.index, engine=IndexEngine.POSTGRES, dsn=postgres_dsn)
    (report,) = evaluate_golden(
        [golden], roots, dataclasses.replace(settings, index=served), work, split=split
    )
    print(render_table([report]))
    assert not shortfalls(report, minimums(golden.pack, split))
    assert _answers(report) == _answers(sqlite)
    assert report.to_dict() == sqlite.to_dict()
