"""``engine.search`` stage by stage over a real index: what each stage asks of the index, the
notes users read, and what the options change. The hashing embedder; MMR and graph off."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.config.model import Fusion, RetrievalSettings
from ep_mcp.errors import EmbeddingError, QueryError, RerankError
from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval import engine
from ep_mcp.retrieval.confidence import ConfidenceModel, Logistic
from ep_mcp.retrieval.engine import SearchOptions
from ep_mcp.retrieval.source import Uncached
from ep_mcp.retrieval.types import SearchRequest, SearchResult
from ep_mcp.retrieval.view import pack_view

QUIET = RetrievalSettings(
    today="2026-06-01",
    profile_weight=0.0,
    length_penalty=0.0,
    always_tier_boost=0.0,
    requires_expansion=False,
    confidence=False,
)
PUMPS = {
    f"pump{i:02}.md": f"# Pump {i}\n\nPump valve impeller priming, note {i}.\n" for i in range(40)
}
PUMPS["howto.md"] = "---\ntype: howto\ntags: [field]\n---\n# Field\n\nA pump, now and then.\n"

PENDING = (
    "3 chunk(s) await embeddings — they are found by words only until `ep-mcp index` "
    "(or the server, in the background) embeds them"
)


class Recording:
    """The store, with what the pipeline asked of it recorded (and pending vectors faked)."""

    def __init__(self, store: Store, pending: int = 0) -> None:
        self.store = store
        self.pending = pending
        self.asked: dict[str, list[Any]] = {"lexical": [], "vector": [], "rows": []}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def lexical_top(self, terms: Sequence[str], n: int, **kw: Any) -> list[tuple[int, float]]:
        self.asked["lexical"].append(n)
        return self.store.lexical_top(terms, n, **kw)

    def vector_top(self, query: Any, n: int) -> list[tuple[int, float]]:
        self.asked["vector"].append(n)
        return self.store.vector_top(query, n)

    def chunks_by_ids(self, chunk_ids: Sequence[int]) -> Any:
        self.asked["rows"].append(list(chunk_ids))
        return self.store.chunks_by_ids(chunk_ids)

    def pending_count(self) -> int:
        return self.pending


class Index:
    def __init__(self, root: Path, store: Store, embedder: HashingEmbedder | None) -> None:
        self.root, self.store, self.embedder = root, store, embedder
        self.view = pack_view(load_pack(root))

    def search(
        self,
        request: SearchRequest,
        settings: RetrievalSettings = QUIET,
        source: Any = None,
        **options: Any,
    ) -> SearchResult:
        query = Uncached(self.embedder) if self.embedder is not None else None
        opts = SearchOptions(view=self.view, **options)
        return engine.search(source or self.store, "p", request, settings, query, opts)


def build(folder: Path, files: dict[str, str], embedder: HashingEmbedder | None) -> Index:
    root = folder / "pack"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    store = Store(folder / "index.db", vector_engine="numpy")
    build_index(load_pack(root), store, embedder, lambda t: len(t.split()))
    return Index(root, store, embedder)


@pytest.fixture
def index_of(tmp_path: Path) -> Iterator[Any]:
    built: list[Index] = []

    def make(files: dict[str, str], embedder: HashingEmbedder | None = None) -> Index:
        built.append(build(tmp_path / f"i{len(built)}", files, embedder))
        return built[-1]

    yield make
    for index in built:
        index.store.close()


@pytest.fixture(scope="module")
def pumps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    index = build(tmp_path_factory.mktemp("pumps"), PUMPS, HashingEmbedder(64))
    yield index
    index.store.close()


@pytest.fixture(scope="module")
def lexical_pumps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    index = build(tmp_path_factory.mktemp("lexical"), PUMPS, None)
    yield index
    index.store.close()


def files(result: SearchResult) -> list[str]:
    return [h.source_file for h in result.hits]


def stage(result: SearchResult, name: str) -> dict[str, Any]:
    (record,) = [r for r in result.explain if r["stage"] == name]
    return record


# --- the legs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "pool"), [(2, 50), (10, 80)])
def test_each_leg_asks_for_k_times_the_multiplier_and_at_least_min_candidates(
    pumps: Index, k: int, pool: int
) -> None:
    source = Recording(pumps.store)
    pumps.search(SearchRequest("pump valve", k=k), source=source)
    assert source.asked["lexical"] == [pool] and source.asked["vector"] == [pool]


@pytest.mark.parametrize(("legs", "mode"), [("lexical", "lexical"), ("vector", "vector")])
def test_one_leg_alone_answers_in_its_own_mode(pumps: Index, legs: str, mode: str) -> None:
    result = pumps.search(SearchRequest("pump valve", k=3), legs=legs)
    assert result.mode == mode and len(result.hits) == 3


def test_the_vector_leg_alone_skips_the_activation_test(pumps: Index) -> None:
    floored = dataclasses.replace(QUIET, activation_floor=5.0, activation_model="*")
    assert pumps.search(SearchRequest("pump valve"), floored).hits == ()
    assert pumps.search(SearchRequest("pump valve"), floored, legs="vector").hits


def test_without_routing_the_intent_is_general(pumps: Index) -> None:
    result = pumps.search(SearchRequest("how do I prime the pump", explain=True))
    assert result.intent == "GENERAL"
    assert stage(result, "legs")["summary"].startswith("intent GENERAL (vector 0.4 / lexical 0.6)")


def test_chunks_awaiting_vectors_are_named_in_a_note(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve"), source=Recording(pumps.store, pending=3))
    assert result.notes == (PENDING,)
    lexical = pumps.search(
        SearchRequest("pump valve"), source=Recording(pumps.store, pending=3), legs="lexical"
    )
    assert lexical.notes == ()  # a lexical benchmark does not wait for vectors


# --- fusion and the head of the list ----------------------------------------------------------


def test_only_the_head_of_the_fused_list_is_read(pumps: Index) -> None:
    source = Recording(pumps.store)
    pumps.search(SearchRequest("pump valve impeller", k=1), source=source)
    assert len(source.asked["rows"][0]) == 1 + 20  # k + the margin (the top lexical are in it)
    source = Recording(pumps.store)
    pumps.search(SearchRequest("pump valve impeller", k=30), source=source)
    assert len(source.asked["rows"][0]) == 41  # every chunk: k + k would be 60


@pytest.mark.parametrize(
    "request_",
    [
        SearchRequest("pump valve impeller", k=1, type="howto"),
        SearchRequest("pump valve impeller", k=1, tags=("field",)),
    ],
    ids=["type", "tags"],
)
def test_a_filter_finds_its_match_however_far_down_the_fused_list(
    pumps: Index, request_: SearchRequest
) -> None:
    assert files(pumps.search(request_)) == ["howto.md"]


@pytest.mark.parametrize(
    ("fusion", "summary"), [(Fusion.WEIGHTED, "weighted; "), (Fusion.RRF, "rrf; ")]
)
def test_the_fusion_stage_names_the_method(pumps: Index, fusion: Fusion, summary: str) -> None:
    settings = dataclasses.replace(QUIET, fusion=fusion)
    result = pumps.search(SearchRequest("pump valve", explain=True), settings)
    assert stage(result, "fusion")["summary"].startswith(summary)


def test_without_vectors_the_fallback_score_is_the_fused_score(lexical_pumps: Index) -> None:
    result = lexical_pumps.search(SearchRequest("pump valve", k=3, explain=True))
    assert result.mode == "lexical"
    assert stage(result, "fusion")["summary"] == "lexical fallback; 23 left"  # k + 20
    for c in result.explain[-1]["candidates"]:
        assert c["fused"] == c["final"] > 1.0  # no boost applies: fused is the fallback score


# --- activation and the threshold -------------------------------------------------------------


def test_the_activation_is_the_best_cosine_plus_the_weighted_coverage(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve zebra", k=50, explain=True))
    best_cosine = max(
        c["vector_score"] for c in result.explain[-1]["candidates"] if c["vector_rank"] == 1
    )
    assert result.activation == pytest.approx(best_cosine + 0.2 * 2 / 3, abs=1e-3)


def test_without_vectors_the_activation_is_the_term_coverage(lexical_pumps: Index) -> None:
    result = lexical_pumps.search(SearchRequest("pump valve zebra"))
    assert result.activation == pytest.approx(2 / 3)


def test_a_query_that_activates_nothing_says_so_in_explain(pumps: Index) -> None:
    floored = dataclasses.replace(QUIET, activation_floor=5.0, activation_model="*")
    result = pumps.search(SearchRequest("pump valve zebra", explain=True), floored)
    assert result.hits == () and result.mode == "empty"
    summary = stage(result, "threshold")["summary"]
    act = result.activation
    assert act is not None
    assert summary.startswith(f"nothing activated: activation {act:.3f} < floor 5.0 (top cosine ")
    assert summary.endswith(", term coverage 0.67) — empty answer")


def test_a_lexical_query_below_the_coverage_floor_says_so_in_explain(
    lexical_pumps: Index,
) -> None:
    floored = dataclasses.replace(QUIET, lexical_coverage_floor=0.9)
    result = lexical_pumps.search(SearchRequest("pump zebra", explain=True), floored)
    assert result.hits == ()
    assert stage(result, "threshold")["summary"] == (
        "nothing activated: coverage 0.50 < floor 0.9 (top cosine n/a, cosine margin n/a, "
        "term coverage 0.50) — empty answer"
    )


# --- the profile stage and the deadline -------------------------------------------------------

TITLED = {
    "a.md": "---\ntitle: Kiln firing\n---\n# Notes\n\nClay work and a kiln.\n",
    "b.md": "# Kilns\n\nKiln firing clay work, again a kiln firing.\n",
    "c.md": "# Shelf\n\nA kiln shelf.\n",
    "d.md": "# Glaze\n\nGlaze recipes.\n",
}


def test_the_file_profile_stage_runs_only_before_the_deadline(index_of: Any) -> None:
    index = index_of(TITLED, HashingEmbedder(64))
    settings = dataclasses.replace(QUIET, profile_weight=0.9)
    request = SearchRequest("kiln firing", explain=True)
    in_time = index.search(request, settings, deadline_ms=60_000)
    assert stage(in_time, "profile")["summary"].startswith("file profile weight 0.9")
    late = index.search(request, settings, deadline_ms=0)
    assert "profile" not in [r["stage"] for r in late.explain]
    assert late.hits  # the answer is still given, without the stage


# --- confidence and "not covered" -------------------------------------------------------------


def model(answerable_bias: float) -> ConfidenceModel:
    hit = Logistic(("position_rr",), (1.0,), 0.0, (0.0,), (1.0,))
    answer = Logistic(("best_hit",), (0.0,), answerable_bias, (0.0,), (1.0,))
    return ConfidenceModel(hit, answer, "*")


CONFIDENT = dataclasses.replace(QUIET, confidence=True)


def test_an_answer_judged_unlikely_is_withheld_with_a_note(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve"), CONFIDENT, confidence=model(-10.0))
    assert result.hits == () and result.covered is False
    assert result.answerable == pytest.approx(0.0, abs=1e-4)
    assert result.notes == (
        "the pack does not appear to cover this question (answerable 0.00 < min_answerable "
        f"{RetrievalSettings().min_answerable}) — pass include_low_confidence to see the hits "
        "anyway",
    )


def test_include_low_confidence_keeps_the_hits_with_their_confidence(pumps: Index) -> None:
    request = SearchRequest("pump valve", k=2, include_low_confidence=True)
    result = pumps.search(request, CONFIDENT, confidence=model(-10.0))
    assert result.covered is False and len(result.hits) == 2
    # the hit model: sigmoid(1 / position), rounded to four places
    assert [h.confidence for h in result.hits] == [0.7311, 0.6225]


def test_a_likely_answer_is_given_with_its_probability(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve", explain=True), CONFIDENT, confidence=model(3))
    assert result.covered is True and result.hits and result.notes == ()
    assert result.answerable == pytest.approx(0.952574, abs=1e-6)
    assert stage(result, "confidence")["summary"] == "answerable 0.953"


def test_an_empty_answer_under_a_confidence_model_says_no_hit(pumps: Index) -> None:
    floored = dataclasses.replace(CONFIDENT, activation_floor=5.0, activation_model="*")
    result = pumps.search(SearchRequest("pump valve"), floored, confidence=model(3))
    assert result.notes == ("the pack does not appear to cover this question (no hit)",)


def names_model() -> ConfidenceModel:
    hit = Logistic(("position_rr",), (1.0,), 0.0, (0.0,), (1.0,))
    answer = Logistic(("unknown_uncovered",), (-20.0,), 2.0, (0.0,), (1.0,))
    return ConfidenceModel(hit, answer, "*")


def test_a_name_the_pack_never_mentions_is_counted_against_answering(pumps: Index) -> None:
    # "Houdini" is written like a name and no chunk holds it; "gaskets" is not answered either
    unknown = pumps.search(SearchRequest("pump valve for Houdini gaskets"), CONFIDENT,
                           confidence=names_model())  # fmt: skip
    assert unknown.assessment is not None
    assert unknown.assessment.query_features["unknown_uncovered"] > 0.1
    assert unknown.covered is False and unknown.hits == ()
    # "Impeller" is written like a name too, but the pack holds it: nothing counted
    known = pumps.search(SearchRequest("pump valve for Impeller gaskets"), CONFIDENT,
                         confidence=names_model())  # fmt: skip
    assert known.assessment is not None
    assert known.assessment.query_features["unknown_uncovered"] == 0.0
    assert known.covered is True and known.hits


def test_confidence_needs_the_setting_on(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve"), QUIET, confidence=model(-10.0))
    assert result.hits and result.answerable is None
    assert all(h.confidence is None for h in result.hits)


# --- reconstruct ------------------------------------------------------------------------------


def test_reconstruct_without_the_pack_folder_marks_hits_stale_and_says_why(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve", k=1, reconstruct=True))
    extra = result.hits[0].extra
    assert extra["stale"] is True
    assert extra["stale_note"] == "live file unavailable: the pack folder is not known"
    assert "stale" not in pumps.search(SearchRequest("pump valve", k=1)).hits[0].extra


def test_a_file_about_the_question_is_lifted_by_its_profile(index_of: Any) -> None:
    index = index_of(TITLED, HashingEmbedder(64))
    request = SearchRequest("kiln firing", explain=True)
    assert files(index.search(request))[0] == "b.md"  # more of the words, no profile stage
    on = dataclasses.replace(QUIET, profile_weight=0.9)
    result = index.search(request, on)
    assert files(result)[0] == "a.md"
    final = {c["candidate"].split("#")[0]: c for c in result.explain[-1]["candidates"]}
    (why,) = [w for w in final["a.md"]["why"] if w.startswith("file profile:")]
    bonus = final["a.md"]["final"] - final["a.md"]["fused"]
    assert why == f"file profile: cosine 1.000 +{bonus:.4f}"
    assert not [w for w in final["b.md"]["why"] if w.startswith("file profile:")]  # no title


def test_the_profile_embedder_given_is_used_for_the_profiles(index_of: Any) -> None:
    index = index_of(TITLED, HashingEmbedder(64))
    embedder = HashingEmbedder(64)
    asked: list[str] = []

    def embed_profile(text: str) -> Any:
        asked.append(text)
        return embedder.embed_query(text)

    on = dataclasses.replace(QUIET, profile_weight=0.9)
    result = index.search(SearchRequest("kiln firing"), on, embed_profile=embed_profile)
    assert asked == ["Kiln firing"]
    assert files(result)[0] == "a.md"


def test_profiles_that_cannot_be_embedded_leave_the_order_alone(
    index_of: Any, caplog: pytest.LogCaptureFixture
) -> None:
    index = index_of(TITLED, HashingEmbedder(64))

    def failing(text: str) -> Any:
        raise EmbeddingError("provider down")

    on = dataclasses.replace(QUIET, profile_weight=0.9)
    request = SearchRequest("kiln firing", explain=True)
    with caplog.at_level(logging.WARNING, logger="ep_mcp.retrieval.engine"):
        result = index.search(request, on, embed_profile=failing)
    assert files(result)[0] == "b.md"
    assert stage(result, "profile")["summary"].startswith("file profile weight 0.9")
    logged = [r.getMessage() for r in caplog.records if r.name == "ep_mcp.retrieval.engine"]
    assert logged == ["file profiles not embedded (provider down) — stage skipped"]


# --- boosts -----------------------------------------------------------------------------------

HINTED = {  # a.md and b.md say the same: only a hint tells them apart
    "a.md": "# Pump\n\nPump valve impeller priming notes.\n",
    "b.md": "---\ntype: howto\ntags: [field, shop]\n---\n# Pump\n\n"
    "Pump valve impeller priming notes.\n",
    "c.md": "# Seal\n\nA pump seal.\n",
    "d.md": "# Glaze\n\nGlaze recipes.\n",
}


@pytest.mark.parametrize(
    ("hint", "note"),
    [
        ({"type_hint": "howto"}, "boosts: type hint +0.05"),
        ({"tag_hints": ("field", "shop")}, "boosts: 2 tag hint(s) +0.06"),
    ],
)
def test_a_hint_lifts_its_match_by_a_share_of_the_best_score(
    index_of: Any, hint: dict[str, Any], note: str
) -> None:
    index = index_of(HINTED, HashingEmbedder(64))
    plain = index.search(SearchRequest("pump valve impeller priming", explain=True))
    assert files(plain)[:2] == ["a.md", "b.md"]
    result = index.search(SearchRequest("pump valve impeller priming", explain=True, **hint))
    assert files(result)[:2] == ["b.md", "a.md"]
    final = {c["candidate"].split("#")[0]: c for c in result.explain[-1]["candidates"]}
    boost = float(note.rsplit("+", 1)[1])
    assert final["b.md"]["why"] == [note]
    assert final["b.md"]["final"] == pytest.approx(
        final["b.md"]["fused"] + boost * final["a.md"]["fused"], abs=1e-5
    )
    assert stage(result, "boosts")["summary"] == (
        "type/tag hints, always tier, length and freshness penalties; 4 left"
    )


# --- rerank, diversity and the graph, as explain shows them -----------------------------------


class NoteReranker:
    """A fake cross-encoder: the passage naming ``note 7`` is the relevant one."""

    name = "fake/note7"

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.asked.append((query, len(passages)))
        return [1.0 if "note 7." in p else 0.0 for p in passages]


def test_the_reranker_reorders_the_pool_by_the_chunks_text(pumps: Index) -> None:
    plain = files(pumps.search(SearchRequest("pump valve", k=3)))
    assert plain[0] != "pump07.md"
    reranker = NoteReranker()
    request = SearchRequest("pump valve", k=3, explain=True)
    result = pumps.search(request, reranker=reranker, rerank_pool=30)
    assert files(result)[0] == "pump07.md"
    assert reranker.asked == [("pump valve", 23)]  # the head read: k + 20
    assert stage(result, "rerank")["summary"] == "fake/note7 over the top 30; 23 left"


def test_the_reranker_only_reorders_its_pool(pumps: Index) -> None:
    plain = files(pumps.search(SearchRequest("pump valve", k=3)))
    reranker = NoteReranker()
    result = pumps.search(SearchRequest("pump valve", k=3), reranker=reranker, rerank_pool=2)
    assert reranker.asked == [("pump valve", 2)]
    assert "pump07.md" not in files(result)[:2]
    assert set(files(result)[:2]) == set(plain[:2])


class DownReranker:
    name = "fake/down"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        raise RerankError("reranker down failed (connection refused)")


def test_a_reranker_adds_no_note_and_keeps_the_notes_before_it(pumps: Index) -> None:
    source = Recording(pumps.store, pending=3)
    result = pumps.search(SearchRequest("pump valve", k=3), source=source, reranker=NoteReranker())
    assert files(result)[0] == "pump07.md" and result.notes == (PENDING,)


def test_a_failing_reranker_is_named_after_the_notes_before_it(pumps: Index) -> None:
    plain = files(pumps.search(SearchRequest("pump valve", k=3)))
    source = Recording(pumps.store, pending=3)
    result = pumps.search(SearchRequest("pump valve", k=3), source=source, reranker=DownReranker())
    assert files(result) == plain
    assert result.notes == (
        PENDING,
        "reranker down failed (connection refused) — results are in their unreranked order",
    )


def test_a_query_can_turn_the_configured_reranker_off(pumps: Index) -> None:
    plain = files(pumps.search(SearchRequest("pump valve", k=3)))
    reranker = NoteReranker()
    result = pumps.search(
        SearchRequest("pump valve", k=3, rerank=False, explain=True), reranker=reranker
    )
    assert reranker.asked == [] and files(result) == plain
    assert "rerank" not in [r["stage"] for r in result.explain]


def test_explain_names_the_lexical_gate_and_the_one_leg_stage(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve priming", explain=True))
    assert stage(result, "gate")["summary"].startswith("lexical share x query coverage^0.5; ")
    assert stage(result, "support")["summary"].startswith("one leg only: fused x0.5; ")


@pytest.mark.parametrize(
    ("retrieval", "summary"),
    [
        ({}, "MMR off, ≤2 chunks per file; 3 left"),
        ({"mmr": True, "mmr_lambda": 0.5}, "λ 0.5, ≤2 chunks per file; 3 left"),
        ({"mmr": True, "mmr_lambda": 1.0}, "MMR off, ≤2 chunks per file; 3 left"),
        ({"mmr": False, "mmr_lambda": 0.5}, "MMR off, ≤2 chunks per file; 3 left"),
        (
            {"graph_expansion": True, "graph_reserved_slots": 2},
            "MMR off, ≤2 chunks per file; 5 left",
        ),
        ({"max_chunks_per_file": 1}, "MMR off, ≤1 chunks per file; 3 left"),
    ],
)
def test_the_diversity_stage_says_what_it_did(
    pumps: Index, retrieval: dict[str, Any], summary: str
) -> None:
    settings = dataclasses.replace(QUIET, **retrieval)
    result = pumps.search(SearchRequest("pump valve", k=3, explain=True), settings)
    assert stage(result, "mmr")["summary"] == summary


LINKED = {
    "panels.md": "# Panels\n\nSolar panels tilt orientation yield.\nSee [[inverter]].\n",
    "inverter.md": "# Inverters\n\nThe inverter turns DC into AC.\n",
    "battery.md": "# Battery\n\nA battery bank.\n",
}


def test_the_graph_stage_names_its_depth_and_decay(index_of: Any) -> None:
    index = index_of(LINKED, HashingEmbedder(64))
    settings = dataclasses.replace(
        QUIET, graph_expansion=True, graph_reserved_slots=1, graph_min_score=0.0
    )
    result = index.search(SearchRequest("solar panels tilt", k=2, explain=True), settings)
    assert [(h.source_file, h.graph_expanded) for h in result.hits] == [
        ("panels.md", False),
        ("inverter.md", True),
    ]
    assert stage(result, "graph")["summary"] == "depth 1, decay 0.85; 2 left"
    off = index.search(SearchRequest("solar panels tilt", k=2, explain=True))
    assert "graph" not in [r["stage"] for r in off.explain]


def test_with_a_callers_vector_a_neighbour_outside_the_pool_counts_as_half_related(
    index_of: Any,
) -> None:
    embedder = HashingEmbedder(64)
    crowd = {f"solar{i:02}.md": f"# Solar {i}\n\nSolar note {i}.\n" for i in range(55)}
    index = index_of({**LINKED, **crowd}, embedder)  # inverter.md: not in the top 50 cosines
    settings = dataclasses.replace(
        QUIET, graph_expansion=True, graph_reserved_slots=1, graph_min_score=0.0
    )
    vector = tuple(float(x) for x in embedder.embed_query("solar panels tilt"))
    request = SearchRequest("solar panels tilt", k=2, vector=vector, explain=True)
    final = {
        c["candidate"].split("#")[0]: c
        for c in index.search(request, settings).explain[-1]["candidates"]
    }
    (why,) = final["inverter.md"]["why"]
    assert why == "graph: 1 hop(s) from panels.md, similarity 0.500 x decay 0.850"
    request = SearchRequest("solar panels tilt", k=2, explain=True)  # embedded here: asked
    final = {
        c["candidate"].split("#")[0]: c
        for c in index.search(request, settings).explain[-1]["candidates"]
    }
    (why,) = final["inverter.md"]["why"]
    assert why == "graph: 1 hop(s) from panels.md, similarity 0.000 x decay 0.850"


# --- more of what users read ------------------------------------------------------------------


def test_an_empty_query_is_refused_with_the_advice_users_read(pumps: Index) -> None:
    with pytest.raises(QueryError) as caught:
        pumps.search(SearchRequest("  "))
    assert str(caught.value) == "the query is blank — pass some words to search for"


def test_the_result_names_the_query_the_pack_and_the_assessment(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve"), CONFIDENT, confidence=model(3))
    assert (result.query, result.pack) == ("pump valve", "p")
    assert result.assessment is not None
    assert result.assessment.answerable == result.answerable


def test_an_answer_exactly_at_min_answerable_is_covered(pumps: Index) -> None:
    at = dataclasses.replace(CONFIDENT, min_answerable=0.5)
    result = pumps.search(SearchRequest("pump valve"), at, confidence=model(0.0))  # sigmoid(0)
    assert result.answerable == 0.5 and result.covered is True and result.hits


@pytest.mark.parametrize(("fitted_for", "judged"), [("fake/hashing", True), ("other/", False)])
def test_a_confidence_model_applies_only_to_the_index_embedder(
    pumps: Index, fitted_for: str, judged: bool
) -> None:
    fitted = dataclasses.replace(model(3), calibrated_for=fitted_for)
    result = pumps.search(SearchRequest("pump valve"), CONFIDENT, confidence=fitted)
    assert (result.answerable is not None) is judged


def test_the_hit_confidence_weighs_the_rare_terms_each_hit_holds(pumps: Index) -> None:
    hit = Logistic(("idf_coverage",), (4.0,), -2.0, (0.0,), (1.0,))
    fitted = ConfidenceModel(hit, model(3).answerable, "*")
    result = pumps.search(SearchRequest("impeller priming", k=1), CONFIDENT, confidence=fitted)
    assert result.hits[0].confidence == pytest.approx(0.8808, abs=1e-4)  # sigmoid(-2 + 4 x 1)


@pytest.mark.parametrize("fusion", [Fusion.WEIGHTED, Fusion.RRF])
def test_a_hint_boost_is_a_share_of_the_fusions_own_scale(index_of: Any, fusion: Fusion) -> None:
    index = index_of(HINTED, HashingEmbedder(64))
    settings = dataclasses.replace(QUIET, fusion=fusion)
    request = SearchRequest("pump valve impeller priming", explain=True, type_hint="howto")
    final = {
        c["candidate"].split("#")[0]: c
        for c in index.search(request, settings).explain[-1]["candidates"]
    }
    scale = final["a.md"]["fused"]  # the best fused score
    assert final["b.md"]["final"] == pytest.approx(final["b.md"]["fused"] + 0.05 * scale, abs=1e-6)


def test_the_threshold_stage_describes_the_evidence(pumps: Index) -> None:
    result = pumps.search(SearchRequest("pump valve", k=3, explain=True))
    summary = stage(result, "threshold")["summary"]
    assert summary.startswith("top cosine ") and summary.endswith("; dropped 0; 23 left")


def test_the_requires_stage_shows_what_was_appended(index_of: Any) -> None:
    index = index_of(
        {
            "a.md": "---\nrequires: [b.md]\n---\n# Anchor\n\nZebra quartz anchor.\n",
            "b.md": "# Bee\n\nSomething else entirely.\n",
        }
    )
    on = dataclasses.replace(QUIET, requires_expansion=True)
    result = index.search(SearchRequest("zebra quartz", k=1, explain=True), on)
    assert files(result) == ["a.md", "b.md"]
    assert stage(result, "requires")["summary"] == "appended after the slice; 2 left"


@pytest.mark.parametrize("weight", [0.0, -0.5])
def test_the_profile_stage_is_off_at_a_weight_of_zero_or_below(
    index_of: Any, weight: float
) -> None:
    index = index_of(TITLED, HashingEmbedder(64))
    off = dataclasses.replace(QUIET, profile_weight=weight)
    result = index.search(SearchRequest("kiln firing", explain=True), off)
    assert "profile" not in [r["stage"] for r in result.explain]


def test_the_profile_stage_needs_profiles_and_a_query_vector(index_of: Any) -> None:
    on = dataclasses.replace(QUIET, profile_weight=0.9)
    lexical = index_of(TITLED, None).search(SearchRequest("kiln firing", explain=True), on)
    assert "profile" not in [r["stage"] for r in lexical.explain]
    untitled = index_of(HINTED, HashingEmbedder(64))
    result = untitled.search(SearchRequest("pump valve", explain=True), on)
    assert "profile" not in [r["stage"] for r in result.explain]


def test_a_callers_vector_without_an_embedder_leaves_the_profiles_out(index_of: Any) -> None:
    embedder = HashingEmbedder(64)
    index = index_of(TITLED, embedder)
    on = dataclasses.replace(QUIET, profile_weight=0.9)
    vector = tuple(float(x) for x in embedder.embed_query("kiln firing"))
    request = SearchRequest("kiln firing", vector=vector)
    result = engine.search(index.store, "p", request, on, None, SearchOptions(view=index.view))
    assert files(result)[0] == "b.md"  # nothing to embed the profiles with


def test_live_files_are_read_only_in_reconstruct_mode(pumps: Index) -> None:
    read: list[str] = []

    def live(path: str, length: int) -> tuple[bytes | None, str | None]:
        read.append(path)
        return (pumps.root / path).read_bytes(), None

    plain = pumps.search(SearchRequest("pump valve", k=1), live_files=live)
    assert read == [] and "fragment_id" not in plain.hits[0].extra
    rebuilt = pumps.search(SearchRequest("pump valve", k=1, reconstruct=True), live_files=live)
    assert read == [rebuilt.hits[0].source_file]
    assert rebuilt.hits[0].extra["stale"] is False
