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
# Floors a little under what was measured on 2026-06-01 data (docs/BENCHMARKS.md): on test about
# one answerable query under (1/44 ≈ 0.023 hit@1), on dev about half a query under (dev sets hold
# 12-14 answerable queries), so a ranking knob that stops working fails `.ci/run`. Lower them only
# with a measured reason; never raise them by tuning on the test split.
# Lowered twice with a measured reason: the not-covered threshold (retrieval/confidence.py, its
# operating point chosen on dev) withholds 4 anthropics-skills test paraphrases (MRR 0.848) and
# one blender-3d dev query (recall@5 0.867) in exchange for more negatives answered empty.
# Moved again with the refit on the new dev negatives (min_answerable 0.66): one more obra and
# one more solar-diy test query withheld (floors lowered to about one query under); negatives
# answered empty raised to about one negative under the measured rates; dev floors re-set about
# half a query under the dev sets that now hold 17-20 answerable queries and 15-17 negatives.
# Raised for home-assistant test with `one_leg_factor` 0.5 (chosen on dev; issue #18): hit@1
# 0.786 -> 0.833, MRR 0.846 -> 0.873 measured, floors about one query under.
# Lowered on dev with a measured reason (2026-12-02): the answer model refit so that a name in
# passing no longer withholds a question (issue #18; `unknown_uncovered`) answers 3 blender-3d
# dev negatives that `unknown_names` emptied (12/15 -> 9/15; floor about half a negative under);
# and obra-superpowers' sup-018 ranks its file 6th on one machine and within 5 on another with
# the same commit (fb40b9f: the int8 model's cosines differ between machines), so its dev
# recall@5 floor is one query under (17/18), not half.
# Moved with `lexical_gate` 0.5 (chosen on dev; issue #18, seventh round), measured:
# obra-superpowers test hit@1 0.886 -> 0.841 (MRR 0.926 -> 0.903) and home-assistant dev hit@1
# 0.895 -> 0.842 (MRR 0.939 -> 0.912) lowered to about one query (test) / half a query (dev)
# under; home-assistant test hit@1 0.809 -> 0.857, MRR 0.861 -> 0.891 raised to one query under.
TEST_MIN = {
    "anthropics-skills": "recall@1=0.77,recall@5=0.89,mrr=0.83,negatives_empty_rate=0.63",
    "blender-3d": "recall@1=0.84,recall@5=0.95,mrr=0.87,negatives_empty_rate=0.68",
    "home-assistant": "recall@1=0.83,recall@5=0.9,mrr=0.87,negatives_empty_rate=0.61",
    "obra-superpowers": "recall@1=0.81,recall@5=0.9,mrr=0.88,negatives_empty_rate=0.63",
    "solar-diy": "recall@1=0.8,recall@5=0.9,mrr=0.84,negatives_empty_rate=0.28",
}
DEV_MIN = {
    "anthropics-skills": "recall@1=0.86,recall@5=0.86,mrr=0.86,negatives_empty_rate=0.66",
    "blender-3d": "recall@1=0.87,recall@5=0.92,mrr=0.9,negatives_empty_rate=0.56",
    "home-assistant": "recall@1=0.81,recall@5=0.97,mrr=0.89,negatives_empty_rate=0.81",
    "obra-superpowers": "recall@1=0.64,recall@5=0.94,mrr=0.77,negatives_empty_rate=0.66",
    "solar-diy": "recall@1=0.79,recall@5=0.91,mrr=0.85,negatives_empty_rate=0.29",
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
