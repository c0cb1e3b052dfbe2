"""Evaluation reports as files: what `ep-mcp eval` saves, and the difference between two.

A report is JSON (`format: ep-mcp-eval/1`): per pack the metrics of `PackReport.to_dict()`
plus every query's ranked answer, so a later reader (the workbench's eval and health pages,
`ep-mcp eval --html`) can show misses, compare runs and find files no query ever reached.
`ep-mcp eval` keeps the newest reports in `$EP_MCP_HOME/reports/`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ep_mcp.errors import ConfigError
from ep_mcp.eval.golden import PackReport

FORMAT = "ep-mcp-eval/1"
KEPT = 50  # reports kept in the history folder
RANKED = 10  # files kept per query
METRICS = ("recall@1", "recall@3", "recall@5", "mrr")


def build_report(
    reports: Sequence[PackReport], *, k: int, created: str | None = None, label: str = ""
) -> dict[str, Any]:
    """The JSON-ready report of one evaluation run."""
    created = created or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    packs = []
    for rep in reports:
        entry = rep.to_dict()
        entry["queries"] = [
            {
                "id": o.query.id,
                "query": o.query.query,
                "category": o.query.category,
                "expected": list(o.query.expected),
                "ranked": list(o.ranked[:RANKED]),
                "rank": o.rank,
                "returned": o.returned,
                "must_not_hits": list(o.must_not_hits),
            }
            for o in rep.outcomes
        ]
        packs.append(entry)
    return {"format": FORMAT, "created": created, "label": label, "k": k, "packs": packs}


def save_report(report: Mapping[str, Any], folder: Path) -> Path:
    """Write ``report`` into the history ``folder`` (newest `KEPT` kept) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = str(report.get("created", "")).replace(":", "").replace("-", "") or "report"
    path = folder / f"eval-{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"eval-{stamp}-{n}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    for old in history(folder)[KEPT:]:
        old.unlink(missing_ok=True)
    return path


def history(folder: Path) -> list[Path]:
    """Saved reports in ``folder``, newest first (empty when there are none)."""
    if not folder.is_dir():
        return []
    files = [p for p in folder.glob("eval-*.json") if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)


def load_report(path: Path) -> dict[str, Any]:
    """A saved report, checked for shape; a clear error for anything else."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read evaluation report {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(
            f"{path} is not an ep-mcp evaluation report (format {FORMAT}) — write one with "
            "`ep-mcp eval --report FILE`"
        )
    if not isinstance(data.get("packs"), list) or not all(
        isinstance(p, dict) and isinstance(p.get("pack"), str) for p in data["packs"]
    ):
        raise ConfigError(f"{path}: `packs` must be a list of per-pack results — not a report")
    return data


def only_packs(report: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The same report restricted to the packs named (what one caller may see)."""
    wanted = set(names)
    return {**report, "packs": [p for p in report.get("packs", []) if p.get("pack") in wanted]}


def _pack(report: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return next((p for p in report.get("packs", []) if p.get("pack") == name), None)


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per pack present in both: each metric before and after, and the queries whose first
    correct rank changed (`fixed`: now found at 1; `broken`: no longer at 1; else `moved`)."""
    out = []
    for pack in after.get("packs", []):
        old = _pack(before, pack["pack"])
        if old is None:
            continue
        metrics = {
            m: (float(old["overall"].get(m, 0.0)), float(pack["overall"].get(m, 0.0)))
            for m in METRICS
        }
        old_ranks = {q["id"]: q.get("rank") for q in old.get("queries", [])}
        changed = []
        for q in pack.get("queries", []):
            if q["id"] not in old_ranks or old_ranks[q["id"]] == q.get("rank") or not q["expected"]:
                continue
            was, now = old_ranks[q["id"]], q.get("rank")
            status = "fixed" if now == 1 else "broken" if was == 1 else "moved"
            changed.append({"id": q["id"], "query": q["query"], "was": was, "now": now,
                            "status": status})  # fmt: skip
        out.append({"pack": pack["pack"], "metrics": metrics, "queries": changed})
    return out


def never_in_top(
    report: Mapping[str, Any], pack: str, files: Iterable[str], k: int = 5
) -> list[str]:
    """Of ``files``, those no query of ``pack`` in ``report`` returned in its top ``k``."""
    entry = _pack(report, pack)
    if entry is None:
        return []
    seen = {f for q in entry.get("queries", []) for f in q.get("ranked", [])[:k]}
    return sorted(f for f in files if f not in seen)
