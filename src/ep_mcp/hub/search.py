"""The hub's retrieval legs over every ready tap, fused into one ranked list of skills.

Legs (each reduced to one row per skill by ``fuse_skills``):
- ``body``: BM25 over SKILL.md chunks, supporting-file chunks scaled by ``support``;
- ``card``: BM25 over the per-skill cards (name, name as words, description, headings);
- ``name``: the name/description scorer, which does not depend on each tap's BM25 statistics;
- ``vector``: cosine over every chunk, for taps indexed with the current embedder.

Then the shortlist's best chunks are read for snippets (``best_chunks``), the evidence that any
skill matches at all is gathered (``match_evidence``, judged by ``retrieval.threshold``) and,
when asked, an LLM reorders the head (``llm_rerank``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ep_mcp.config.model import HubSettings, RetrievalSettings
from ep_mcp.errors import EmbeddingError
from ep_mcp.hub.catalog import NameIndex, SkillEntry, card_text
from ep_mcp.hub.llm import Candidate, LlmReranker
from ep_mcp.hub.match import MATCH_DEPTH, unknown_share
from ep_mcp.hub.ranking import ChunkHit, ChunkRef, SkillCandidate, apply_order, fuse_skills
from ep_mcp.hub.tapindex import TapIndex, is_card
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.store import StoredChunk
from ep_mcp.retrieval import threshold as th
from ep_mcp.retrieval.lexical import query_terms

logger = logging.getLogger(__name__)


def lexical_legs(
    query: str, ready: Sequence[TapIndex], pool: int, r: RetrievalSettings, support: float
) -> tuple[list[ChunkHit], list[ChunkHit]]:
    """(card hits, body hits), best first, across every tap."""
    terms = query_terms(query)
    weights = (r.text_column_weight, r.title_weight, r.heading_weight)
    cards: list[ChunkHit] = []
    body: list[ChunkHit] = []
    for ti in ready:
        for ref, score in ti.lexical(terms, pool, weights, r.lexical_time_limit_ms):
            entry = ti.entry_for(ref)
            if entry is None:
                continue
            if is_card(ref.path):
                cards.append(ChunkHit(entry.id, ref, score))
            else:
                factor = 1.0 if ref.path == entry.skill_file else support
                body.append(ChunkHit(entry.id, ref, score * factor))
    cards.sort(key=lambda h: -h.score)
    body.sort(key=lambda h: -h.score)
    return cards, body


def vector_leg(
    query: str, ready: Sequence[TapIndex], pool: int, embedder: Embedder, notes: list[str]
) -> list[ChunkHit]:
    try:
        qvec = embedder.embed_query(query)
    except EmbeddingError as exc:
        notes.append(f"embedding failed, answered lexically: {exc}")
        logger.warning("query embedding failed (%s) — lexical only", exc)
        return []
    hits: list[ChunkHit] = []
    for ti in ready:
        for ref, score in ti.vector(qvec, pool, embedder.name):
            entry = ti.entry_for(ref)
            if entry is not None:
                hits.append(ChunkHit(entry.id, ref, score))
    hits.sort(key=lambda h: -h.score)
    return hits


def name_leg(query: str, names: NameIndex, lexical: Sequence[ChunkHit]) -> list[ChunkHit]:
    """Skills by name/description match; each keeps its best lexical chunk as a reference."""
    first: dict[str, ChunkHit] = {}
    for hit in lexical:
        first.setdefault(hit.skill_id, hit)
    return [
        ChunkHit(entry.id, first[entry.id].chunk, score)
        for entry, score in names.scores(query)
        if entry.id in first
    ]


def per_tap_pool(pool: int, taps: int) -> int:
    """Chunks each tap contributes: twice its even share, at least 20, at most the pool."""
    return min(pool, max(20, -(-2 * pool // max(1, taps))))


def retrieve(
    query: str,
    ready: Sequence[TapIndex],
    pool: int,
    *,
    retrieval: RetrievalSettings,
    hub: HubSettings,
    names: NameIndex,
    embedder: Embedder | None,
    legs: Sequence[str],
    notes: list[str],
) -> tuple[list[SkillCandidate], str, float | None]:
    """Ranked skills, the ranker's name (hybrid, lexical or dense) and the best dense cosine
    (None without a dense leg). ``hub`` holds the legs' weights and the RRF constant.

    ``pool`` is the shortlist across all taps; each tap contributes its best
    ``per_tap_pool(pool, taps)`` chunks per leg, which together always cover at least ``pool``.
    """
    pool = per_tap_pool(pool, len(ready))
    cards: list[ChunkHit] = []
    body: list[ChunkHit] = []
    names_hits: list[ChunkHit] = []
    if "lexical" in legs:
        cards, body = lexical_legs(query, ready, pool, retrieval, hub.support_factor)
        names_hits = name_leg(query, names, [*cards, *body])
    dense: list[ChunkHit] = []
    if "vector" in legs and embedder is not None and any(ti.has_dense() for ti in ready):
        dense = vector_leg(query, ready, pool, embedder, notes)
    ranked: Mapping[str, Sequence[ChunkHit]] = {
        "body": body, "vector": dense, "card": cards, "name": names_hits,
    }  # fmt: skip
    fused = fuse_skills(
        ranked,
        k=hub.rrf_k,
        snippet_from=lambda ref: not is_card(ref.path),
        weights={"body": hub.body_weight, "card": hub.card_weight, "name": hub.name_weight,
                 "vector": hub.vector_weight},
    )  # fmt: skip
    if not dense:
        return fused, "lexical", None
    return fused, "hybrid" if cards or body else "dense", dense[0].score


def best_chunks(
    indexes: Mapping[str, TapIndex], ranked: Sequence[SkillCandidate]
) -> dict[tuple[str, int], StoredChunk]:
    """Full rows of the given candidates' best chunks, read per tap."""
    out: dict[tuple[str, int], StoredChunk] = {}
    by_tap: dict[str, list[ChunkRef]] = {}
    for c in ranked:
        by_tap.setdefault(c.chunk.tap, []).append(c.chunk)
    for tap, refs in by_tap.items():
        ti = indexes.get(tap)
        if ti is not None:
            out.update({(tap, cid): sc for cid, sc in ti.chunks(refs).items()})
    return out


def match_evidence(
    query: str,
    ranked: Sequence[SkillCandidate],
    top_cosine: float | None,
    by_id: Mapping[str, SkillEntry],
    rows: Mapping[tuple[str, int], StoredChunk],
    ready: Sequence[TapIndex] = (),
) -> th.Evidence:
    """What says any skill fits: the best cosine, the task's terms in the first skills'
    cards and best sections (``rows`` must hold the first ``MATCH_DEPTH``), and the share of
    its terms that no chunk of the ``ready`` taps holds."""
    terms = query_terms(query)
    texts = [
        f"{card_text(by_id[c.skill_id])}\n{_text(rows, c)}"
        for c in ranked[:MATCH_DEPTH]
        if c.skill_id in by_id
    ]

    held: set[str] = set().union(*(ti.held(terms) for ti in ready))
    unknown = unknown_share(terms, held.__contains__) if ready else 0.0
    return th.Evidence(
        top_cosine=top_cosine,
        cosine_margin=None,
        coverage=th.best_coverage(terms, texts),
        terms=len(terms),
        unknown=unknown,
    )


def llm_rerank(
    reranker: LlmReranker,
    query: str,
    ranked: list[SkillCandidate],
    top_n: int,
    by_id: Mapping[str, SkillEntry],
    rows: Mapping[tuple[str, int], StoredChunk],
    ranker: str,
    notes: list[str],
) -> tuple[list[SkillCandidate], str]:
    """Let the LLM reorder the first ``top_n``; on any failure keep ``ranker``'s order and
    say why in ``notes``."""
    top = ranked[:top_n]
    cands = [
        Candidate(
            c.skill_id,
            by_id[c.skill_id].name,
            f"{by_id[c.skill_id].description} — {_text(rows, c)[:200]}",
        )
        for c in top
    ]
    order = reranker.rerank(query, cands)
    if order is None:
        notes.append(f"LLM rerank did not run ({reranker.last_error}) — {ranker} order")
        return ranked, ranker
    return apply_order(top, order) + ranked[len(top) :], "llm"


def _text(rows: Mapping[tuple[str, int], StoredChunk], cand: SkillCandidate) -> str:
    sc = rows.get((cand.chunk.tap, cand.chunk.id))
    return sc.chunk.text if sc is not None else ""
