"""Golden-set evaluation over the shared packs (SPEC §10). Run with ``pytest -m golden``.

Thresholds come from ``EP_EVAL_MIN`` (default ``recall@5=0.9,mrr=0.7``; also
``negatives_empty_rate``), "today" from ``EP_EVAL_TODAY``. Indexes are cached in pytest's cache
folder (or ``EP_EVAL_WORK``) so a rerun only re-embeds what changed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ep_mcp.config import Settings
from ep_mcp.eval.golden import load_golden, parse_minimums, render_table, shortfalls
from ep_mcp.eval.run import evaluate_golden

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("EP_MCP_SHARED", HERE.parents[2] / "shared"))
PACKS, SKILLS = SHARED / "packs", SHARED / "skills"
SETS = sorted(HERE.glob("*.yaml"))
DEFAULT_MIN = "recall@5=0.9,mrr=0.7"


@pytest.fixture(scope="session")
def work(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("EP_EVAL_WORK"):
        return Path(os.environ["EP_EVAL_WORK"])
    cache = getattr(request.config, "cache", None)
    return Path(cache.mkdir("ep-mcp-golden")) if cache else tmp_path_factory.mktemp("golden")


@pytest.mark.golden
@pytest.mark.parametrize("golden_file", SETS, ids=[p.stem for p in SETS])
def test_golden_set_meets_the_minimums(golden_file: Path, work: Path) -> None:
    golden = load_golden(golden_file)
    roots = [root for root in (PACKS, SKILLS) if (root / golden.pack).is_dir()]
    if not roots:
        pytest.skip(f"pack {golden.pack} is not present under {PACKS} or {SKILLS}")
    (report,) = evaluate_golden([golden], roots, Settings(), os.environ, work)
    print(render_table([report]))
    minimums = parse_minimums(os.environ.get("EP_EVAL_MIN", DEFAULT_MIN))
    assert not shortfalls(report, minimums)
