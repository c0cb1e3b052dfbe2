"""Pack health as data: requires: cycles, orphans, freshness, coverage from a report."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from ep_mcp.packs.loader import load_pack
from ep_mcp.serve.web.health import IndexState, pack_health, requires_cycles

INDEX = IndexState(3, 3, 0, pending=0, model=None, dimension=None, provider=None)


def test_requires_cycles_are_found_once_each() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["d2"], "d2": ["d"], "e": ["a"]}
    cycles = requires_cycles(graph)
    assert sorted(sorted(c[:-1]) for c in cycles) == [["a", "b", "c"], ["d", "d2"]]
    assert all(c[0] == c[-1] for c in cycles)
    assert requires_cycles({"a": ["b"], "b": []}) == []


def test_health_reports_cycles_orphans_stale_files_and_unreached_files(
    make_pack: Callable[..., Path],
) -> None:
    root = make_pack(
        {
            "a.md": "---\ntitle: A\nrequires: [b.md]\nverified_at: 2026-01-01\nrefresh: P30D\n"
            "---\n# A\n\nAlpha [[missing-page]].\n",
            "b.md": "---\ntitle: B\nrequires: [a.md]\nverified_at: 2026-11-20\n---\n# B\n\nBeta.\n",
            "lonely.md": "# Lonely\n\nNobody links here.\n",
        }
    )
    pack = load_pack(root)
    report = {
        "packs": [{"pack": pack.slug, "queries": [{"ranked": ["a.md"]}, {"ranked": ["b.md"]}]}]
    }
    h = pack_health(pack, INDEX, dt.date(2026, 12, 1), report)
    assert h.orphans == ("lonely.md",)
    assert [sorted(c[:-1]) for c in h.requires_cycles] == [["a.md", "b.md"]]
    assert [f.path for f in h.stale_or_expired] == ["a.md"]
    assert dict(h.verified_age)["never"] == 1
    assert any("missing-page" in f.message for f in h.broken_links)
    assert h.coverage is not None and h.coverage.never_in_top5 == ("lonely.md",)
    assert pack_health(pack, INDEX, dt.date(2026, 12, 1)).coverage is None
