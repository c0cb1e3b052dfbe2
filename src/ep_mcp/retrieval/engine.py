"""The search pipeline (SPEC §4): a ``ChunkSource`` answers the two legs, pure stages rank.

``search`` reads as the list of stages; each is a call below, in the order it runs.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.errors import EmbeddingError, QueryError
from ep_mcp.index.records import StoredChunk
from ep_mcp.retrieval import threshold as th
from ep_mcp.retrieval.boosts import apply_boosts, apply_filters
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.confidence import Assessment, ConfidenceModel, HitView, applies, assess
from ep_mcp.retrieval.confidence import idf_weights as idf_of
from ep_mcp.retrieval.expand import expand_graph, expand_requires_of
from ep_mcp.retrieval.explain import Trace
from ep_mcp.retrieval.fallback import score_lexically
from ep_mcp.retrieval.fusion import FUSIONS
from ep_mcp.retrieval.hits import as_shown, candidate_of, hit_of, hit_with, no_live_files
from ep_mcp.retrieval.intent import Intent, classify_intent
from ep_mcp.retrieval.legs import LegChoice, Legs, run_legs
from ep_mcp.retrieval.lexgate import bm25_range, gate_lexical, query_coverage, query_stems
from ep_mcp.retrieval.mmr import cap_per_file, mmr_select
from ep_mcp.retrieval.profile import apply_profile, profile_similarities
from ep_mcp.retrieval.rerank import Reranker, rerank_or_keep
from ep_mcp.retrieval.settings import boost_settings, fallback_weights, threshold_settings, today_of
from ep_mcp.retrieval.source import ChunkSource, LegExecutors, LiveFiles, QueryEmbedding
from ep_mcp.retrieval.support import penalise_one_leg
from ep_mcp.retrieval.types import BLANK_QUERY, Hit, SearchRequest, SearchResult
from ep_mcp.retrieval.view import PackView
from ep_mcp.text import name_words

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

QueryEmbed = Callable[[str], "npt.NDArray[np.float32]"]
EVIDENCE_LEXICAL_TOP = 5  # lexical hits whose term coverage counts as evidence
MMR_MARGIN = 20  # candidates beyond k that MMR may promote
HEAD_MARGIN = 20  # fused candidates read beyond k (filters read the whole pool)
PROFILE_HEAD = 30  # candidates whose file profile is compared with the query


@dataclass(frozen=True)
class SearchOptions:
    """How one search runs, apart from what it asks (``SearchRequest``) and the settings.

    ``embed_profile`` gives the vector of a file's profile line (the runtime keeps them per pack
    version); without it the query embedder is used. ``deadline_ms`` bounds the wait for an
    outside embedding service (query and profiles); past it the answer is lexical. The legs
    overlap on ``executors`` (the caller's threads) when given. ``live_files`` reads the served
    files for reconstruct's stale check. ``legs`` runs one leg alone (benchmarks).
    ``confidence`` is the fitted model of the last stage (none: no confidence, nothing withheld).
    """

    view: PackView = dataclasses.field(default_factory=PackView)
    embed_profile: QueryEmbed | None = None
    reranker: Reranker | None = None
    rerank_pool: int = 20
    rerank_max_chars: int = 2000
    deadline_ms: int | None = None
    executors: LegExecutors | None = None
    live_files: LiveFiles | None = None
    legs: LegChoice = "both"
    confidence: ConfidenceModel | None = None


@dataclass
class _Run:
    """One search in flight: what every stage may read."""

    source: ChunkSource
    request: SearchRequest
    settings: RetrievalSettings
    options: SearchOptions
    trace: Trace
    deadline: float | None  # time.monotonic() seconds
    legs: Legs = dataclasses.field(init=False)
    rows: dict[int, StoredChunk] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)  # said by a stage, shown last

    @property
    def view(self) -> PackView:
        return self.options.view

    def in_time(self) -> bool:
        return self.deadline is None or time.monotonic() < self.deadline


def search(
    source: ChunkSource,
    slug: str,
    request: SearchRequest,
    settings: RetrievalSettings,
    query: QueryEmbedding | None,
    options: SearchOptions | None = None,
) -> SearchResult:
    """Run one query against one pack's index, stage by stage."""
    started = time.perf_counter()
    if not request.query.strip() and request.vector is None:
        raise QueryError(BLANK_QUERY)  # the words every front door gives
    options = options or SearchOptions()
    deadline_ms = options.deadline_ms
    deadline = time.monotonic() + deadline_ms / 1000.0 if deadline_ms is not None else None
    run = _Run(source, request, settings, options, Trace(enabled=request.explain), deadline)

    intent = _intent(run)
    run.legs = _legs(run, query, intent)
    cands = _support(run, _gate(run, _fuse(run, intent), intent))
    evidence = _evidence(run)
    cands = apply_filters(cands, request.type, request.tags)
    run.notes += [*run.legs.notes, *_pending_note(run)]
    cands = _threshold(run, cands, evidence)
    scale = max((c.score for c in cands), default=0.0)
    cands = _boost(run, cands, scale)
    cands = _profile(run, cands, query, scale)
    cands = _rerank(run, cands)
    picked = _diversify(run, cands)
    top = _expand_graph(run, picked)
    final = [*top, *_expand_requires(run, top)]
    hits = _hits(run, final)
    hits, judged = _confidence(run, final, evidence, hits)
    hits = tuple(as_shown(h) for h in hits)  # scored on the raw span; shown from its content
    covered = judged is None or judged.answerable >= settings.min_answerable
    if judged is not None and not covered:
        run.notes.append(_not_covered(judged, settings.min_answerable, hits))
        hits = hits if request.include_low_confidence else ()

    legs = run.legs
    mode = "hybrid" if legs.dense and legs.lexical else "vector" if legs.dense else "lexical"
    return SearchResult(
        query=request.query,
        pack=slug,
        mode=mode if hits else "empty",
        hits=hits,
        intent=intent.name,
        took_ms=(time.perf_counter() - started) * 1000,
        notes=tuple(run.notes),
        explain=run.trace.export(final),
        answerable=judged.answerable if judged is not None else None,
        covered=covered,
        assessment=judged,
        activation=_activation(evidence, settings),
    )


def _intent(run: _Run) -> Intent:
    s = run.settings
    if s.intent_routing:
        return classify_intent(run.request.query, s.vector_weight)
    return Intent("GENERAL", s.vector_weight, s.text_weight)


def _legs(run: _Run, query: QueryEmbedding | None, intent: Intent) -> Legs:
    s, request = run.settings, run.request
    pool = max(s.min_candidates, request.k * s.candidate_multiplier)
    executors, choice = run.options.executors, run.options.legs
    legs = run_legs(run.source, request, s, query, pool, run.deadline, executors, choice)
    run.trace.legs(legs.lexical, legs.dense, intent)
    return legs


def _fuse(run: _Run, intent: Intent) -> list[Candidate]:
    """Fusion of the two legs (or lexical fallback scoring), over the head the answer can use.

    Only the head of the fused list can reach the answer (boosts are small): only it is read,
    with the top lexical hits the activation test looks at.
    """
    legs, request, s, view = run.legs, run.request, run.settings, run.view
    lex = {cid: (r, sc) for r, (cid, sc) in enumerate(legs.lexical, start=1)}
    vec = {cid: (r, sc) for r, (cid, sc) in enumerate(legs.dense, start=1)}
    fused = _fused(legs, intent, s) if legs.dense else [(cid, sc) for cid, sc in legs.lexical]
    head = (
        fused if request.type or request.tags else fused[: request.k + max(HEAD_MARGIN, request.k)]
    )
    wanted = [cid for cid, _ in head] + [cid for cid, _ in legs.lexical[:EVIDENCE_LEXICAL_TOP]]
    run.rows = rows = run.source.chunks_by_ids(list(dict.fromkeys(wanted)))
    today = today_of(s) if s.freshness_penalty else None  # staleness only matters then
    cands = [candidate_of(rows[cid], sc, lex, vec, view, today) for cid, sc in head if cid in rows]
    cands = [c for c in cands if c.path not in view.navigation]
    if not legs.dense:
        texts = {c.chunk_id: rows[c.chunk_id].chunk.text for c in cands}
        cands = score_lexically(legs.terms, cands, texts, fallback_weights(s))
        cands = [c.rescored() for c in cands]
    run.trace.stage("fusion", cands, f"{s.fusion if legs.dense else 'lexical fallback'}")
    return cands


def _gate(run: _Run, cands: list[Candidate], intent: Intent) -> list[Candidate]:
    """A lexical hit keeps its lexical weight in proportion to the query it holds (weighted)."""
    legs, exponent = run.legs, run.settings.lexical_gate
    if not (exponent > 0 and legs.dense and legs.lexical and run.settings.fusion == "weighted"):
        return cands
    counts, total = run.source.term_counts(legs.terms)
    stems = query_stems(idf_of(legs.terms, counts, total))
    cover = {
        c.chunk_id: query_coverage(
            stems, row.chunk.text, " ".join((row.file.title, *row.chunk.heading_path))
        )
        for c in cands
        if c.lexical_score is not None and (row := run.rows.get(c.chunk_id)) is not None
    }
    cands = gate_lexical(cands, cover, intent.text_weight, bm25_range(legs.lexical), exponent)
    run.trace.stage("gate", cands, f"lexical share x query coverage^{exponent:g}")
    return cands


def _support(run: _Run, cands: list[Candidate]) -> list[Candidate]:
    """A chunk one leg alone found cannot take rank 1 on that leg's weight (hybrid only)."""
    factor = run.settings.one_leg_factor
    if run.legs.dense and run.legs.lexical and factor < 1.0:
        cands = penalise_one_leg(cands, factor)
        run.trace.stage("support", cands, f"one leg only: fused x{factor:g}")
    return cands


def _fused(legs: Legs, intent: Intent, settings: RetrievalSettings) -> list[tuple[int, float]]:
    lists = {"lexical": legs.lexical, "vector": legs.dense}
    weights = {"lexical": intent.text_weight, "vector": intent.vector_weight}
    if settings.fusion == "rrf" and not settings.intent_routing:
        weights = {"lexical": 0.5, "vector": 0.5}  # plain RRF: every leg counts the same
    return FUSIONS[settings.fusion](lists, weights, settings.rrf_k)


def _evidence(run: _Run) -> th.Evidence:
    legs, rows = run.legs, run.rows
    return th.gather_evidence(
        legs.terms,
        [rows[cid].chunk.text for cid, _ in legs.lexical[:EVIDENCE_LEXICAL_TOP] if cid in rows],
        [s for _, s in legs.dense],
    )


def _activation(evidence: th.Evidence, settings: RetrievalSettings) -> float:
    act = th.activation(evidence, settings.coverage_weight)
    return evidence.coverage if act is None else act


def _pending_note(run: _Run) -> list[str]:
    waiting = run.source.pending_count() if run.options.legs != "lexical" else 0
    if not waiting:
        return []
    return [
        f"{waiting} chunk(s) await embeddings — they are found by words only until "
        "`ep-mcp index` (or the server, in the background) embeds them"
    ]


def _threshold(run: _Run, cands: list[Candidate], evidence: th.Evidence) -> list[Candidate]:
    """Nothing activated: an empty answer; else drop what scores far below the best."""
    if not run.settings.adaptive_threshold:
        return cands
    ts = threshold_settings(run.settings)
    verdict = _verdict(run, evidence, ts.floor)
    if verdict is not None and not verdict.answered:
        hybrid = verdict.rule == th.HYBRID
        shown = f"activation {verdict.score:.3f}" if hybrid else f"coverage {verdict.score:.2f}"
        run.trace.note(
            "threshold",
            f"nothing activated: {shown} < floor {verdict.floor} ({evidence.describe()}) "
            "— empty answer",
        )
        return []
    kept = th.drop_far_below(cands, ts.score_ratio)
    run.trace.dropped("threshold", cands, kept, evidence.describe())
    return kept


def _verdict(run: _Run, evidence: th.Evidence, floor: th.Floor) -> th.Verdict | None:
    """The floor's verdict (``retrieval.threshold``); None when a benchmark runs the vector leg
    alone (no coverage) or when both rules answer, whatever the model (no need to look it up)."""
    if run.options.legs == "vector":
        return None
    act = th.activation(evidence, floor.coverage_weight)
    if act is not None and act >= floor.hybrid and evidence.coverage >= floor.lexical:
        return None
    # the index's embedding model (a caller-supplied vector is assumed to match it)
    return th.judge(evidence, floor, run.source.embedding_model())


def _boost(run: _Run, cands: list[Candidate], scale: float) -> list[Candidate]:
    cands = apply_boosts(
        cands,
        boost_settings(run.settings),
        type_hint=run.request.type_hint,
        tag_hints=run.request.tag_hints,
        scale=scale,
    )
    run.trace.stage("boosts", cands, "type/tag hints, always tier, length and freshness penalties")
    return cands


def _profile(
    run: _Run, cands: list[Candidate], query: QueryEmbedding | None, scale: float
) -> list[Candidate]:
    """+ weight x cosine(query, file profile) over the head the answer can come from."""
    s, view, qvec = run.settings, run.view, run.legs.query_vector
    if not (s.profile_weight > 0 and cands and view.profiles and qvec is not None):
        return cands
    if not run.in_time():
        return cands
    embed = run.options.embed_profile or (query.embed_query if query is not None else None)
    if embed is not None:
        head = [c.path for c in cands[:PROFILE_HEAD]]
        try:
            sims = profile_similarities(head, view.profiles, qvec, embed)
        except EmbeddingError as exc:
            logger.warning("file profiles not embedded (%s) — stage skipped", exc)
        else:
            cands = apply_profile(cands, sims, s.profile_weight, scale)
    run.trace.stage("profile", cands, f"file profile weight {s.profile_weight}")
    return cands


def _rerank(run: _Run, cands: list[Candidate]) -> list[Candidate]:
    reranker, o, rows = run.options.reranker, run.options, run.rows
    if reranker is None or not cands or not run.request.rerank:  # off, or off for this query
        return cands
    pool, cut, text_of = o.rerank_pool, o.rerank_max_chars, lambda c: rows[c.chunk_id].chunk.text
    cands, failed = rerank_or_keep(run.request.query, cands, text_of, reranker, pool, cut)
    run.notes += [failed] if failed else []
    run.trace.stage("rerank", cands, failed or f"{reranker.name} over the top {pool}")
    return cands


def _diversify(run: _Run, cands: list[Candidate]) -> list[Candidate]:
    """MMR (when on) with a per-file cap, down to k plus the graph's reserved slots."""
    s = run.settings
    want = run.request.k + (s.graph_reserved_slots if s.graph_expansion else 0)
    mmr_on = s.mmr and s.mmr_lambda < 1.0
    if mmr_on and len(cands) > 1:
        pool_head = cap_per_file(cands, s.max_chunks_per_file)[: want + MMR_MARGIN]
        vectors = run.source.vectors_for([c.chunk_id for c in pool_head])
        picked = mmr_select(
            pool_head, vectors, lam=s.mmr_lambda, k=want, per_file_cap=s.max_chunks_per_file
        )
    else:
        picked = cap_per_file(cands, s.max_chunks_per_file)[:want]
    cap = f"≤{s.max_chunks_per_file} chunks per file"
    run.trace.stage("mmr", picked, f"λ {s.mmr_lambda}, {cap}" if mmr_on else f"MMR off, {cap}")
    return picked


def _expand_graph(run: _Run, picked: list[Candidate]) -> list[Candidate]:
    s, k = run.settings, run.request.k
    top = picked[:k]
    if not (s.graph_expansion and top and run.view.adjacency):
        return top
    caller_vector = run.request.vector is not None
    top = expand_graph(
        run.source, top, picked, k, s, run.view, run.legs.dense, caller_vector=caller_vector
    )
    run.trace.stage("graph", top, f"depth {s.graph_depth}, decay {s.graph_decay}")
    return top


def _expand_requires(run: _Run, top: list[Candidate]) -> list[Candidate]:
    """``requires:`` targets appended after the slice (never displacing a hit)."""
    if not run.settings.requires_expansion:
        return []
    extra = expand_requires_of(run.source, top, run.settings, run.view)
    if extra:
        run.trace.stage("requires", [*top, *extra], "appended after the slice")
    return extra


def _hits(run: _Run, final: list[Candidate]) -> tuple[Hit, ...]:
    today = today_of(run.settings)
    live = run.options.live_files if run.request.reconstruct else None
    live = live or (no_live_files if run.request.reconstruct else None)
    rows, source = run.rows, run.source
    return tuple(
        hit_of(
            rows.get(c.chunk_id) or source.chunks_by_ids([c.chunk_id])[c.chunk_id],
            c,
            run.view,
            today,
            live,
        )
        for c in final
    )


def _confidence(
    run: _Run, final: list[Candidate], evidence: th.Evidence, hits: tuple[Hit, ...]
) -> tuple[tuple[Hit, ...], Assessment | None]:
    """Each hit's probability of relevance and the answer's of holding one (SPEC §4.8).

    Needs the model, the dense leg and the embedder the model was fitted for."""
    model, terms = run.options.confidence, run.legs.terms
    if not (run.settings.confidence and model and run.legs.query_vector is not None):
        return hits, None
    if not applies(model, run.source.embedding_model()):
        return hits, None
    counts, total = run.source.term_counts(terms) if hits else ({}, 0)
    idf = idf_of(terms, counts, total) if hits else {}
    unknown = {t for t in name_words(run.request.query) if t in idf and not counts.get(t)}
    views = [
        HitView(c, h.text, " ".join((h.title, *h.heading_path)))
        for c, h in zip(final, hits, strict=True)
    ]
    judged = assess(views, evidence, idf, model, unknown)
    hits = tuple(
        hit_with(h, confidence=round(p, 4)) for h, p in zip(hits, judged.confidences, strict=True)
    )
    run.trace.note("confidence", f"answerable {judged.answerable:.3f}")
    return hits, judged


def _not_covered(judged: Assessment, floor: float, hits: tuple[Hit, ...]) -> str:
    told = f"answerable {judged.answerable:.2f} < min_answerable {floor}" if hits else "no hit"
    more = " — pass include_low_confidence to see the hits anyway" if hits else ""
    return f"the pack does not appear to cover this question ({told}){more}"
