"""Evaluation reports as HTML: the body the workbench shows, and `ep-mcp eval --html`'s file.

The standalone file is self-contained — its CSS is inline, its plots are inline SVG, it has no
script and no external URL — so it opens offline. Every value from a report is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ep_mcp.eval import svg
from ep_mcp.eval.report import METRICS, diff

SERIES = ("recall@1", "recall@3", "recall@5", "mrr")
CSS = (Path(__file__).with_name("report.css")).read_text(encoding="utf-8")


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "&ndash;"


def _metric_row(name: str, m: Mapping[str, Any]) -> str:
    positive = int(m.get("queries", 0)) - int(m.get("negatives", 0))
    cells = [_num(m.get(k)) if positive else "&ndash;" for k in SERIES]
    neg = f"{m.get('negatives_empty', 0)}/{m['negatives']}" if m.get("negatives") else "&ndash;"
    return (
        f"<tr><th scope=row>{_e(name)}</th><td>{m.get('queries', 0)}</td>"
        + "".join(f"<td>{c}</td>" for c in cells)
        + f"<td>{m.get('must_not_violations', 0)}</td><td>{neg}</td></tr>"
    )


_HEAD = (
    "<tr><th scope=col>{first}</th><th scope=col>n</th><th scope=col>hit@1</th>"
    "<th scope=col>hit@3</th><th scope=col>hit@5</th><th scope=col>MRR</th>"
    "<th scope=col>must_not</th><th scope=col>negatives empty</th></tr>"
)


def pack_table(packs: Sequence[Mapping[str, Any]]) -> str:
    rows = "".join(_metric_row(p["pack"], p.get("overall", {})) for p in packs)
    return f'<table class="metrics" id="per-pack">{_HEAD.format(first="pack")}{rows}</table>'


def category_table(pack: Mapping[str, Any]) -> str:
    rows = "".join(_metric_row(c, m) for c, m in pack.get("by_category", {}).items())
    return f'<table class="metrics">{_HEAD.format(first="category")}{rows}</table>'


def _ranked(q: Mapping[str, Any]) -> str:
    expected = set(q.get("expected", []))
    banned = set(q.get("must_not_hits", []))
    items = []
    for f in q.get("ranked", [])[:10]:
        cls = "hit" if f in expected else "banned" if f in banned else ""
        items.append(f'<li class="{cls}">{_e(f)}</li>')
    return f"<ol>{''.join(items)}</ol>" if items else "<p class=muted>nothing returned</p>"


def misses(pack: Mapping[str, Any]) -> str:
    """Queries not answered at rank 1 (or negatives answered), each with its ranked list."""
    queries = pack.get("queries") or []
    wrong = [
        q
        for q in queries
        if (q.get("expected") and q.get("rank") != 1)
        or (not q.get("expected") and q.get("returned"))
        or q.get("must_not_hits")
    ]
    if not queries:  # an older report: only its misses, with their top 5
        wrong = [{**m, "ranked": m.get("got", [])} for m in pack.get("misses", [])]
    if not wrong:
        return "<p>Every query found its expected file at rank 1.</p>"
    out = []
    for q in wrong:
        rank = q.get("rank")
        verdict = "negative query answered" if not q.get("expected") else f"rank {rank or 'miss'}"
        out.append(
            f"<details class=miss><summary><code>{_e(q.get('id'))}</code> "
            f"[{_e(q.get('category'))}] {_e(q.get('query'))} — <b>{_e(verdict)}</b></summary>"
            f"<p>expected: {_e(', '.join(q.get('expected', [])) or 'nothing (negative)')}</p>"
            f"{_ranked(q)}</details>"
        )
    return "".join(out)


def _diff_section(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    changes = diff(before, after)
    if not changes:
        return "<p class=muted>The two reports share no pack.</p>"
    rows = [(f"{c['pack']} {m}", *c["metrics"][m]) for c in changes for m in METRICS]
    parts = [svg.delta_bars("Before → after", rows)]
    for c in changes:
        items = "".join(
            f"<li class={_e(q['status'])}><code>{_e(q['id'])}</code> {_e(q['query'])}: "
            f"rank {_e(q['was'] or 'miss')} → {_e(q['now'] or 'miss')} ({_e(q['status'])})</li>"
            for q in c["queries"]
        )
        parts.append(
            f"<h3>{_e(c['pack'])}</h3>"
            + (f"<ul class=changes>{items}</ul>" if items else "<p>No query changed rank.</p>")
        )
    return "".join(parts)


def answerable(categories: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Categories with at least one answerable query (negatives have no hit@k to plot)."""
    return [
        (c, m)
        for c, m in categories.items()
        if int(m.get("queries", 0)) > int(m.get("negatives", 0))
    ]


def render_body(report: Mapping[str, Any], baseline: Mapping[str, Any] | None = None) -> str:
    """Tables, plots, misses and (with a baseline) the difference, as an HTML fragment."""
    packs = report.get("packs", [])
    if not packs:
        return "<p>This report has no pack you can see.</p>"
    parts = [
        f"<p class=muted>Report {_e(report.get('created', ''))} {_e(report.get('label', ''))}"
        f" · k={_e(report.get('k', ''))}</p>",
        "<h2>Per pack</h2>",
        pack_table(packs),
        svg.grouped_bars(
            "hit@k and MRR per pack",
            [(p["pack"], p.get("overall", {})) for p in packs],
            SERIES,
        ),
    ]
    if baseline is not None:
        parts += [
            f"<h2>Difference</h2><p class=muted>baseline {_e(baseline.get('created', ''))} "
            f"{_e(baseline.get('label', ''))}</p>",
            _diff_section(baseline, report),
        ]
    for p in packs:
        cats = p.get("by_category", {})
        parts += [
            f"<h2>{_e(p['pack'])}</h2>",
            category_table(p),
            svg.grouped_bars(f"{p['pack']}: per category", answerable(cats), SERIES),
            "<h3>Misses</h3>",
            misses(p),
        ]
    return "".join(parts)


def render_document(report: Mapping[str, Any], baseline: Mapping[str, Any] | None = None) -> str:
    """A self-contained HTML file (inline CSS and SVG, no script, no external URL)."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>ep-mcp evaluation {_e(report.get('created', ''))}</title>"
        f"<style>{CSS}</style></head><body><main><h1>ep-mcp evaluation</h1>"
        f"{render_body(report, baseline)}</main></body></html>\n"
    )


def write_plots(
    report: Mapping[str, Any], folder: Path, baseline: Mapping[str, Any] | None = None
) -> list[Path]:
    """The report's plots as standalone `.svg` files in ``folder`` (for docs/BENCHMARKS.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    packs = report.get("packs", [])
    plots = {
        "eval-per-pack.svg": svg.grouped_bars(
            "hit@k and MRR per pack", [(p["pack"], p["overall"]) for p in packs], SERIES
        )
    }
    for p in packs:
        plots[f"eval-{p['pack']}-categories.svg"] = svg.grouped_bars(
            f"{p['pack']}: per category", answerable(p.get("by_category", {})), SERIES
        )
    if baseline is not None:
        rows = [(f"{c['pack']} {m}", *c["metrics"][m]) for c in diff(baseline, report)
                for m in METRICS]  # fmt: skip
        plots["eval-diff.svg"] = svg.delta_bars("Before → after", rows)
    written = []
    for name, text in plots.items():
        path = folder / name.replace("/", "_")
        path.write_text(text + "\n", encoding="utf-8")
        written.append(path)
    return written
