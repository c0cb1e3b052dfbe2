"""The expansion stages: graph neighbours into reserved slots, ``requires:`` after the slice.

Both add a file by its first chunk, scored below what the search found, with a note saying why
it is there; neither changes the order of what the search ranked.
"""

from __future__ import annotations

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.index.records import StoredChunk
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.graph import graph_neighbours, merge_reserved
from ep_mcp.retrieval.requires import expand_requires
from ep_mcp.retrieval.source import ChunkSource
from ep_mcp.retrieval.view import PackView


def expand_graph(
    source: ChunkSource,
    top: list[Candidate],
    picked: list[Candidate],
    k: int,
    settings: RetrievalSettings,
    view: PackView,
    dense: list[tuple[int, float]],
    caller_vector: bool,
) -> list[Candidate]:
    """Neighbours of the top files in the link graph, merged into reserved slots of ``k``.

    A neighbour's relevance is its cosine in the dense pool (0 when it fell outside the pool;
    0.5 when there is no dense leg to ask, or the caller supplied the vector).
    """
    seeds = list(dict.fromkeys(c.path for c in top))
    found = graph_neighbours(
        seeds,
        view.adjacency,
        depth=settings.graph_depth,
        decay=settings.graph_decay,
        exclude=sorted(view.navigation),
    )
    vec = dict(dense)
    best = max(c.score for c in top)
    bonus: list[Candidate] = []
    for n in found:
        sc = first_chunk(source, n.path)
        if sc is None:
            continue
        sim = vec.get(sc.id)
        if sim is None and not caller_vector and dense:
            sim = 0.0  # outside the dense pool: too far from the query
        relevance = sim if sim is not None else 0.5
        if relevance * n.factor < settings.graph_min_score:
            continue
        note = (
            f"graph: {n.hop} hop(s) from {n.via}, similarity {relevance:.3f} x decay {n.factor:.3f}"
        )
        bonus.append(_expanded(sc, best * relevance * n.factor, "graph", n.via, n.hop, note))
    core = [c for c in picked if c.origin == "search"]
    return merge_reserved(core[:k], bonus, k=k, slots=settings.graph_reserved_slots)


def expand_requires_of(
    source: ChunkSource, top: list[Candidate], settings: RetrievalSettings, view: PackView
) -> list[Candidate]:
    """The files the top hits name in ``requires:``, within the depth, atom and token budgets."""
    if not view.requires or not top:
        return []
    reachable: set[str] = set()
    frontier = {c.path for c in top}
    for _ in range(settings.requires_max_depth):  # every hop the walk may take is costed
        frontier = {t for p in frontier for t in view.requires.get(p, ())} - reachable
        reachable |= frontier
    tokens = source.file_tokens(sorted(reachable))
    found = expand_requires(
        [c.path for c in top],
        view.requires,
        tokens,
        max_depth=settings.requires_max_depth,
        max_atoms=settings.requires_max_atoms,
        token_budget=settings.requires_token_budget,
        skip=sorted(view.navigation),
    )
    floor = min(c.score for c in top)
    out = []
    for i, req in enumerate(found):
        sc = first_chunk(source, req.path)
        if sc is None:
            continue
        note = f"requires: named by {req.via} ({req.hop} hop(s))"
        out.append(_expanded(sc, floor * 0.5 / (i + 1), "requires", req.via, req.hop, note))
    return out


def first_chunk(source: ChunkSource, path: str) -> StoredChunk | None:
    chunks = source.chunks_for_path(path)
    return chunks[0] if chunks else None


def _expanded(
    sc: StoredChunk, score: float, origin: str, via: str, hop: int, note: str
) -> Candidate:
    """A candidate that expansion (graph or requires:) added after the search."""
    return Candidate(
        chunk_id=sc.id,
        path=sc.file.path,
        score=score,
        type=sc.file.type,
        tags=sc.file.tags,
        chars=len(sc.chunk.text),
        tokens=sc.chunk.tokens,
        origin=origin,
        via=via,
        hop=hop,
        notes=(note,),
    )
