"""From stored chunks to candidates (what the stages rank) and to hits (what callers read)."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

from ep_mcp.index.records import StoredChunk
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.freshness import freshness_of
from ep_mcp.retrieval.reconstruct import provenance, span_changed
from ep_mcp.retrieval.source import LiveFiles
from ep_mcp.retrieval.types import Hit
from ep_mcp.retrieval.view import PackView
from ep_mcp.text import strip_leading_noise

Ranks = dict[int, tuple[int, float]]  # chunk id → (rank from 1, score) in one leg


def candidate_of(
    sc: StoredChunk, score: float, lex: Ranks, vec: Ranks, view: PackView, today: dt.date | None
) -> Candidate:
    """A fused chunk as the stages see it: its score, its ranks in each leg, its file's metadata
    and, when ``today`` is given (a freshness penalty is set), whether the file is past its
    refresh date then."""
    lr, ls = lex.get(sc.id, (None, None))
    vr, vs = vec.get(sc.id, (None, None))
    info = sc.file.info
    stale = (
        today is not None
        and freshness_of(
            info.get("verified_at"), info.get("refresh"), view.refresh_cycle, None, today
        ).age_stale
    )
    return Candidate.made(
        chunk_id=sc.id,
        path=sc.file.path,
        score=score,
        fused=score,
        lexical_rank=lr,
        lexical_score=ls,
        vector_rank=vr,
        vector_score=vs,
        type=sc.file.type,
        tags=sc.file.tags,
        always=bool(sc.file.info.get("always")) or sc.file.path in view.always,
        chars=len(sc.chunk.text),
        tokens=sc.chunk.tokens,
        age_stale=stale,
    )


def hit_of(
    sc: StoredChunk,
    c: Candidate,
    view: PackView,
    today: dt.date,
    live_files: LiveFiles | None,
) -> Hit:
    """The answer for one candidate, with freshness; with ``live_files`` (reconstruct mode)
    also its provenance and whether the file changed under the span since indexing."""
    info = sc.file.info
    fresh = freshness_of(
        info.get("verified_at"),
        info.get("refresh"),
        view.refresh_cycle,
        info.get("expires_at"),
        today,
    )
    extra = fresh.to_dict()
    if live_files is not None:
        prov = provenance(
            ident=sc.file.doc_id or sc.file.path,
            section=sc.chunk.section,
            heading_path=sc.chunk.heading_path,
            text=sc.chunk.text,
            span_hash=sc.chunk.span_hash,
            line_range=sc.chunk.line_range,
            byte_range=sc.chunk.byte_range,
        )
        extra.update(prov.to_dict())
        live, why = live_files(sc.file.path, sc.chunk.byte_range[1])
        extra["stale"] = span_changed(live, sc.chunk.byte_range, sc.chunk.span_hash)
        if why is not None:
            extra["stale_note"] = f"live file unavailable: {why}"
    verified = info.get("verified_at")
    return Hit(
        id=sc.file.doc_id or sc.file.path,
        source_file=sc.file.path,
        title=sc.file.title,
        type=sc.file.type,
        tags=sc.file.tags,
        heading_path=sc.chunk.heading_path,
        text=sc.chunk.text,
        score=round(c.score, 6),
        content_hash=sc.file.content_hash,
        verified_at=str(verified) if verified is not None else None,
        chunk_index=sc.chunk.chunk_index,
        line_range=sc.chunk.line_range,
        graph_expanded=c.origin == "graph",
        requires_expanded=c.origin == "requires",
        extra=extra,
    )


def as_shown(hit: Hit) -> Hit:
    """The hit as callers read it: ``text`` from its first line of content (HTML comments,
    frontmatter blocks and residue skipped, the rest verbatim). Every ranking and confidence
    stage has read the raw span before; ``line_range`` and reconstruct's ``original_markdown``
    still name the whole span."""
    shown = _shown(hit.text)
    return hit if shown == hit.text else hit_with(hit, text=shown)


@lru_cache(maxsize=4096)
def _shown(text: str) -> str:
    """``strip_leading_noise``, once per distinct chunk text (the same chunks come back)."""
    return strip_leading_noise(text)


def hit_with(hit: Hit, **changes: object) -> Hit:
    """``dataclasses.replace(hit, **changes)`` without its per-call walk over the fields (a
    query copies every hit once or twice): the fields copied, ``changes`` applied. ``Hit``
    has no ``__post_init__``; its one default factory (``extra``) is shared by the copy, as
    ``replace`` shares it. For the pipeline's own calls, which name only fields."""
    new = object.__new__(Hit)
    new.__dict__.update(hit.__dict__, **changes)
    return new


def no_live_files(path: str, length: int) -> tuple[bytes | None, str | None]:
    """Reconstruct's reader when the pack folder is not known: every span unverifiable."""
    return None, "the pack folder is not known"
