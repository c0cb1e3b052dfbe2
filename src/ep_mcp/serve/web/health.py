"""Pack health: what a pack author should fix, gathered from the pack, its index and the
latest evaluation report — validate findings, freshness, navigation and graph, retrieval
coverage, index state. `pack_health` gathers it as frozen records; `health_html` draws them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.eval import svg
from ep_mcp.eval.report import never_in_top
from ep_mcp.json_types import JsonObject
from ep_mcp.packs.models import Pack, PackWarning
from ep_mcp.packs.references import References
from ep_mcp.packs.validate import validate_pack
from ep_mcp.retrieval.freshness import Freshness, freshness
from ep_mcp.serve.web.views import e

AGE_BUCKETS = ((30, "< 30 d"), (90, "30-90 d"), (180, "90-180 d"), (365, "180-365 d"))


def _requires_graph(pack: Pack) -> dict[str, list[str]]:
    refs = References.of(pack)
    graph: dict[str, list[str]] = {}
    for doc in pack.documents:
        targets = [refs.resolve(doc.path, r) for r in doc.requires]
        graph[doc.path] = [t for t in targets if t is not None and t != doc.path]
    return graph


def requires_cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Each distinct cycle of the `requires:` graph once, as a path that returns to its start."""
    cycles: dict[frozenset[str], list[str]] = {}
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt) :]
                cycles.setdefault(frozenset(loop), [*loop, nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return list(cycles.values())


def orphans(pack: Pack) -> list[str]:
    """Retrievable files nothing points at: no edge (graph, wikilink, related, requires:) comes
    in, and no navigation file mentions their path."""
    inbound = {edge.target for edge in pack.edges if edge.source != edge.target}
    inbound |= {t for targets in _requires_graph(pack).values() for t in targets}
    nav_text = "\n".join(d.text for d in pack.documents if d.navigation)
    return sorted(
        d.path
        for d in pack.documents
        if not d.navigation and d.path not in inbound and d.path not in nav_text
    )


def _age_bucket(age: int | None) -> str:
    if age is None:
        return "never"
    return next((label for limit, label in AGE_BUCKETS if age < limit), "≥ 1 y")


@dataclass(frozen=True)
class IndexState:
    """What the index holds for a pack; `rows` labels it for the page."""

    files: int | None
    chunks: int | None
    vectors: int | None
    pending: int
    model: str | None
    dimension: int | None
    provider: str | None

    def rows(self) -> tuple[tuple[str, object], ...]:
        pending = self.pending
        return (
            ("files indexed", self.files),
            ("chunks", self.chunks),
            ("vectors", self.vectors),
            ("embeddings pending", pending),
            ("build", "complete" if not pending else f"{pending} chunks wait for embeddings"),
            ("model", self.model or "none (lexical only)"),
            ("dimension", self.dimension or "-"),
            ("provider", self.provider or "-"),
        )


@dataclass(frozen=True)
class StaleFile:
    """A retrievable file past its refresh cycle or its `expires_at`."""

    path: str
    verified_at: str | None
    refresh: str | None
    freshness: Freshness


@dataclass(frozen=True)
class Coverage:
    """From the latest evaluation report: files no golden query had in its top 5."""

    report: object  # the report's `created`, as saved
    never_in_top5: tuple[str, ...]


@dataclass(frozen=True)
class PackHealth:
    pack: str
    name: str
    kind: str
    files: int
    findings: tuple[PackWarning, ...]
    stale_or_expired: tuple[StaleFile, ...]
    verified_age: tuple[tuple[str, int], ...]  # (age bucket, files), youngest first
    orphans: tuple[str, ...]
    requires_cycles: tuple[tuple[str, ...], ...]
    coverage: Coverage | None
    index: IndexState

    @property
    def broken_links(self) -> tuple[PackWarning, ...]:
        return tuple(f for f in self.findings if "does not match any" in f.message)


def _report_names(report: JsonObject) -> set[object]:
    packs = report.get("packs")
    rows = packs if isinstance(packs, list) else []
    return {row.get("pack") for row in rows if isinstance(row, dict)}


def pack_health(
    pack: Pack,
    index: IndexState,
    today: dt.date,
    report: JsonObject | None = None,
    unit_of: Mapping[str, str] | None = None,
) -> PackHealth:
    """Everything the health page shows."""
    files: list[StaleFile] = []
    histogram = dict.fromkeys([b for _, b in AGE_BUCKETS] + ["≥ 1 y", "never"], 0)
    for doc in pack.documents:
        if doc.navigation:
            continue
        f = freshness(doc.verified_at, doc.refresh, pack.refresh_cycle, doc.expires_at, today)
        histogram[_age_bucket(f.verified_age_days)] += 1
        if f.age_stale or f.expired:
            files.append(StaleFile(doc.path, doc.verified_at, doc.refresh or pack.refresh_cycle, f))
    retrievable = [d.path for d in pack.documents if not d.navigation]
    coverage: Coverage | None = None
    if report is not None:
        name = pack.slug if pack.slug in _report_names(report) else pack.root.name
        units = unit_of or {}
        by_unit: dict[str, list[str]] = {}
        for path in retrievable:
            by_unit.setdefault(units.get(path, path), []).append(path)
        missed_units = set(never_in_top(report, name, by_unit, k=5))
        never = tuple(sorted(p for u in missed_units for p in by_unit[u]))
        coverage = Coverage(report.get("created"), never)
    return PackHealth(
        pack=pack.slug,
        name=pack.name,
        kind=pack.kind,
        files=len(pack.documents),
        findings=tuple(validate_pack(pack)),
        stale_or_expired=tuple(files),
        verified_age=tuple(histogram.items()),
        orphans=tuple(orphans(pack)),
        requires_cycles=tuple(tuple(c) for c in requires_cycles(_requires_graph(pack))),
        coverage=coverage,
        index=index,
    )


def _list(items: Sequence[str], empty: str) -> str:
    if not items:
        return f'<p class="ok">{e(empty)}</p>'
    return "<ul>" + "".join(f"<li><code>{e(i)}</code></li>" for i in items) + "</ul>"


def _or_dash(value: int | None) -> object:
    return "-" if value is None else value


def _where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line else path


def health_html(h: PackHealth, eval_hint: str) -> str:
    index_rows = "".join(
        f"<tr><th scope=row>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in h.index.rows()
    )
    findings = "".join(
        f"<tr><td><code>{e(_where(f.path, f.line))}</code></td><td>{e(f.message)}</td></tr>"
        for f in h.findings
    )
    stale_rows = "".join(
        f"<tr><td><code>{e(f.path)}</code></td><td>{e(f.verified_at or '-')}</td>"
        f"<td>{e(_or_dash(f.freshness.verified_age_days))}</td>"
        f"<td>{e(f.refresh or '-')}</td><td>{'stale' if f.freshness.age_stale else ''}"
        f"{' expired ' + e(f.freshness.expires_at) if f.freshness.expired else ''}</td></tr>"
        for f in h.stale_or_expired
    )
    cycles = [" → ".join(c) for c in h.requires_cycles]
    cov = h.coverage
    coverage = (
        f"<p class=muted>from the evaluation report {e(cov.report)}</p>"
        + _list(cov.never_in_top5, "Every retrievable file was in some query's top 5.")
        if cov is not None
        else f"<p class=muted>{e(eval_hint)}</p>"
    )
    n_find, n_stale = len(h.findings), len(h.stale_or_expired)
    return (
        f'<div class="health" id="health"><p class="summary"><b>{e(h.name)}</b> '
        f"({e(h.kind)}, {e(h.files)} files) · <b>{n_find}</b> findings · "
        f"<b>{n_stale}</b> stale or expired · <b>{len(h.orphans)}</b> orphans · "
        f"<b>{len(cycles)}</b> requires: cycles</p>"
        f"<h2>Findings (validate)</h2>"
        + (
            f'<table class="findings"><tr><th>file:line</th><th>problem</th></tr>{findings}</table>'
            if findings
            else '<p class="ok">No findings.</p>'
        )
        + "<h2>Freshness</h2>"
        + (
            '<table class="stale"><tr><th>file</th><th>verified_at</th><th>age (d)</th>'
            f"<th>refresh</th><th>state</th></tr>{stale_rows}</table>"
            if stale_rows
            else '<p class="ok">Nothing stale or expired.</p>'
        )
        + svg.histogram("Verified age of retrievable files", list(h.verified_age))
        + "<h2>Navigation and graph</h2><h3>Orphans (nothing links to them)</h3>"
        + _list(h.orphans, "Every file is linked or listed.")
        + "<h3>Broken links</h3>"
        + _list(
            [f"{_where(f.path, f.line)} {f.message}" for f in h.broken_links],
            "No broken wikilinks, requires: or related: entries.",
        )
        + "<h3>requires: cycles</h3>"
        + _list(cycles, "No cycles.")
        + "<h2>Retrieval coverage: never in any top 5 of the golden set</h2>"
        + coverage
        + f'<h2>Index</h2><table class="index">{index_rows}</table></div>'
    )
