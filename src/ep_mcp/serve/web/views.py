"""HTML fragments for the search page: results, their explain trace, and a section in context.

Each function takes what the library returns (a `SearchResult` with its explain records, a
`DocumentRead`) and returns escaped HTML. Pack text goes through `html.escape` or
`render_markdown` (raw HTML off) and nowhere else, so a hostile pack file renders as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from urllib.parse import quote, urlencode

from ep_mcp.eval import svg
from ep_mcp.packs.reading_results import DocumentRead, Span
from ep_mcp.retrieval.types import Hit, SearchResult
from ep_mcp.serve.web.markdown import render_markdown

EXCERPT_CHARS = 420
FRONTMATTER = re.compile(r"\A---\r?\n(.*?\r?\n)---\r?\n", re.S)


def e(value: object) -> str:
    return escape(str(value), quote=True)


def read_url(pack: str, fragment_id: str, *, fragment: bool = False) -> str:
    """The page (or the fragment) that opens ``fragment_id`` with its neighbours."""
    if fragment:
        return "/ui/read?" + urlencode({"pack": pack, "id": fragment_id})
    page = f"/packs/{quote(pack, safe='')}/read?"
    return page + urlencode({"id": fragment_id}) + "#hit"


def _records(value: object) -> list[Mapping[str, object]]:
    """The JSON objects of an explain list (a ranking, the final candidates); else none."""
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _badges(hit: Hit) -> str:
    extra: Mapping[str, object] = hit.extra  # freshness and provenance fields
    out = []
    age = extra.get("verified_age_days")
    if age is not None:
        out.append(f'<span class="badge age" title="verified_at {e(hit.verified_at)}">'
                   f"verified {e(age)} d ago</span>")  # fmt: skip
    else:
        out.append('<span class="badge muted">never verified</span>')
    if extra.get("age_stale"):
        out.append('<span class="badge warn" title="older than its refresh cycle">stale</span>')
    if extra.get("expired"):
        out.append(f'<span class="badge bad" title="expires_at {e(extra.get("expires_at"))}">'
                   "expired</span>")  # fmt: skip
    if extra.get("stale"):
        out.append('<span class="badge bad" title="the file changed since it was indexed">'
                   "changed on disk</span>")  # fmt: skip
    if hit.graph_expanded:
        out.append('<span class="badge info">graph neighbour</span>')
    if hit.requires_expanded:
        out.append('<span class="badge info">requires:</span>')
    confidence = extra.get("confidence")
    if isinstance(confidence, int | float):
        out.append(f'<span class="badge">confidence {float(confidence):.2f}</span>')
    return "".join(out)


def _excerpt(hit: Hit) -> str:
    text = str(hit.extra.get("excerpt") or hit.text or "").strip()
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    return e(text)


def _value(v: object) -> str:
    return "—" if v is None else e(v)


def _why(candidate: Mapping[str, object], path: Sequence[tuple[str, int | None]]) -> str:
    """One hit's trace: its two legs, fusion, final score, the stages it passed, the notes."""
    lex = candidate.get("lexical_rank")
    vec = candidate.get("vector_rank")
    origin = str(candidate.get("origin", ""))
    if candidate.get("via"):
        origin += f" via {candidate['via']}"
    rows = [
        ("origin", e(origin)),
        ("lexical", "not matched" if lex is None
         else f"#{e(lex)} (BM25 {_value(candidate.get('lexical_score'))})"),
        ("vector", "not in the pool" if vec is None
         else f"#{e(vec)} (cosine {_value(candidate.get('vector_score'))})"),
        ("fused", _value(candidate.get("fused"))),
        ("final", _value(candidate.get("final"))),
    ]  # fmt: skip
    table = "".join(f"<tr><th scope=row>{k}</th><td>{v}</td></tr>" for k, v in rows)
    steps = " → ".join(f"{e(stage)} #{e(rank) if rank else '-'}" for stage, rank in path)
    why = candidate.get("why")
    notes = "".join(f"<li>{e(n)}</li>" for n in why) if isinstance(why, list) else ""
    return (
        f'<table class="why">{table}</table>'
        + (f'<p class="path">rank by stage: {steps}</p>' if steps else "")
        + (f'<ul class="notes">{notes}</ul>' if notes else "")
    )


def _stage_ranks(
    explain: Sequence[Mapping[str, object]], label: str
) -> list[tuple[str, int | None]]:
    out = []
    for rec in explain:
        ranking = rec.get("ranking")
        if ranking is None:  # the legs and final records rank nothing
            continue
        rows = _records(ranking)
        rank = next((_int(r.get("rank")) for r in rows if r.get("candidate") == label), None)
        out.append((str(rec.get("stage")), rank))
    return out


def _score_bar(score: float, top: float) -> str:
    width = 0.0 if top <= 0 else max(0.0, min(1.0, score / top)) * 120
    return (
        f'<svg class="bar" width="124" height="10" viewBox="0 0 124 10" aria-hidden="true">'
        f'<rect x="0" y="1" width="{width:.1f}" height="8" fill="{svg.PALETTE[0]}"/></svg>'
    )


def stage_table(rec: Mapping[str, object]) -> str:
    """One stage: its summary, the top of its ranking with moves, and what it dropped."""
    ranking = _records(rec.get("ranking"))
    top = max([_number(r.get("score")) for r in ranking] + [0.0])
    rows = []
    for r in ranking:
        was, rank = _int(r.get("was")), _int(r.get("rank")) or 0
        move = (
            '<span class="new">new</span>' if was is None
            else "=" if was == rank
            else f'<span class="{"up" if was > rank else "down"}">was #{e(was)}</span>'
        )  # fmt: skip
        score = _number(r.get("score"))
        rows.append(
            f"<tr><td>{e(rank)}</td><td><code>{e(r.get('candidate'))}</code></td>"
            f"<td>{score:.4f}</td><td>{_score_bar(score, top)}</td><td>{move}</td></tr>"
        )
    gone = rec.get("dropped")
    dropped = (
        "".join(f"<li><code>{e(d)}</code></li>" for d in gone) if isinstance(gone, list) else ""
    )
    unchanged = bool(ranking) and all(r.get("was") == r.get("rank") for r in ranking)
    if unchanged:
        body = '<p class="muted">(top of the ranking unchanged)</p>'
    elif rows:
        body = (
            "<table class=stage><tr><th>#</th><th>candidate</th><th>score</th><th></th>"
            f"<th>move</th></tr>{''.join(rows)}</table>"
        )
    else:
        body = ""
    if dropped:
        body += f'<p>dropped:</p><ul class="dropped">{dropped}</ul>'
    return (
        f'<section class="stage" data-stage="{e(rec.get("stage"))}"><h4>{e(rec.get("stage"))}'
        f"</h4><p>{e(rec.get('summary', ''))}</p>{body}</section>"
    )


def explain_html(explain: Sequence[Mapping[str, object]]) -> str:
    stages = "".join(stage_table(r) for r in explain if r.get("stage") != "final")
    return (
        '<details class="explain" id="explain"><summary>Explain: every stage of this ranking'
        f"</summary>{stages}</details>"
    )


def results_html(result: SearchResult) -> str:
    """The hits of a search (with `reconstruct` and `explain`), each with its provenance,
    freshness badges, excerpt, a link to the section in context and its trace."""
    pack = result.pack
    hits = result.hits
    explain: Sequence[Mapping[str, object]] = result.explain
    last = next((r for r in explain if r.get("stage") == "final"), {})
    final = _records(last.get("candidates"))
    head = (
        f'<p class="summary">{len(hits)} result{"s" if len(hits) != 1 else ""} in '
        f"<b>{e(pack)}</b> · mode <b>{e(result.mode)}</b> · intent "
        f"{e(result.intent)} · {e(round(result.took_ms, 2))} ms</p>"
    )
    notes = "".join(f'<p class="note">{e(n)}</p>' for n in result.notes)
    items = []
    for i, hit in enumerate(hits):
        cand = final[i] if i < len(final) else None
        if cand is not None and not str(cand.get("candidate", "")).startswith(
            hit.source_file + "#"
        ):
            cand = None
        first, last_line = hit.line_range
        where = f"{e(hit.source_file)}:{e(first)}&ndash;{e(last_line)}"
        heading = " &rsaquo; ".join(e(h) for h in hit.heading_path)
        fid = hit.extra.get("fragment_id")
        link = (
            f'<a class="open" data-panel="{e(read_url(pack, fid, fragment=True))}" '
            f'href="{e(read_url(pack, fid))}">open in context</a>'
            if isinstance(fid, str) and fid
            else ""
        )
        trace = (
            f'<details class="why"><summary>why #{i + 1}?</summary>'
            f"{_why(cand, _stage_ranks(explain, str(cand.get('candidate'))))}</details>"
            if cand is not None
            else ""
        )
        items.append(
            f'<li class="hit"><div class="hit-head"><span class="rank">{i + 1}</span>'
            f'<span class="title">{e(hit.title or hit.source_file)}</span>'
            f'<span class="score" title="final score">{hit.score:.4f}</span>'
            f'</div><div class="where"><code>{where}</code> <span class="heading">{heading}'
            f'</span></div><div class="badges">{_badges(hit)}</div>'
            f'<p class="excerpt">{_excerpt(hit)}</p><div class="actions">{link}</div>'
            f"{trace}</li>"
        )
    if not hits:
        items.append(
            '<li class="empty">Nothing above the activation floor — the pack has no answer '
            "to this query (see the threshold stage below).</li>"
        )
    return (
        f'{head}{notes}<ol class="hits" id="hits">{"".join(items)}</ol>'
        f"{explain_html(explain) if explain else ''}"
    )


def _span_html(heading_path: Sequence[str], span: Span, cls: str) -> str:
    """A section; the one asked for (`focus`) is `#hit`, where its links and the page scroll."""
    first, last = span.line_range
    where = f"lines {e(first)}&ndash;{e(last)}"
    heading = " &rsaquo; ".join(e(h) for h in heading_path)
    anchor = ' id="hit"' if cls == "focus" else ""
    return (
        f'<section class="{cls}"{anchor}><p class="where">{heading} '
        f'<span class="muted">{where}</span></p>'
        f'<div class="md">{render_markdown(span.text)}</div></section>'
    )


def read_html(read: DocumentRead) -> str:
    """What `ep_read` answers: the section, with its neighbours before and after it dimmed."""
    doc, section = read.doc, read.section or ()
    me_first = read.span.line_range[0]
    neighbors = read.neighbors or ()
    before = [n for n in neighbors if n.span.line_range[0] < me_first]
    after = [n for n in neighbors if n.span.line_range[0] > me_first]
    text = read.span.text
    front = FRONTMATTER.match(text) if not section else None
    if front is not None:  # a whole file: its frontmatter as a block, its body as markdown
        text = f"```yaml\n{front.group(1)}```\n\n" + text[front.end() :]
    me = Span(text, read.span.line_range)
    requires = "".join(f"<li><code>{e(r)}</code></li>" for r in read.requires_resolved)
    return (
        f'<article class="reader"><h3>{e(doc.title or doc.path)}</h3>'
        f'<p class="where"><code>{e(doc.path)}</code> · type {e(doc.type or "-")}'
        f"</p>"
        + "".join(_span_html(n.heading_path, n.span, "neighbour") for n in before)
        + _span_html(section, me, "focus")
        + "".join(_span_html(n.heading_path, n.span, "neighbour") for n in after)
        + (f"<p>requires:</p><ul>{requires}</ul>" if requires else "")
        + "</article>"
    )
