"""Every ranking knob, end to end: a setting changed in the config changes the answer.

Unit tests of the stages alone let wiring bugs through (λ and 1-λ swapped, a cap or ``rrf_k``
ignored, the fusion weights swapped): here each knob runs through ``PackRuntime.search`` over a
tmp pack, with MMR on where it matters, and the test names what the knob must decide.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Fusion, IndexSettings, PackSettings, RetrievalSettings, Settings
from ep_mcp.errors import ConfigError
from ep_mcp.index.embed.base import Embedder, EmbeddingSpec, Matrix
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.index.embed.local import LocalEmbedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.types import SearchRequest

MakePack = Callable[[dict[str, str]], Path]
QUIET = {  # stages that would blur the arithmetic of the knob under test
    "profile_weight": 0.0,
    "length_penalty": 0.0,
    "always_tier_boost": 0.0,
    "requires_expansion": False,
}


class MarkerEmbedder(HashingEmbedder):
    """Hashing vectors, except that every query and every text with ``vecmark`` lie on axis 0
    and all other texts are orthogonal to it: the vector leg disagrees with the lexical one."""

    def _vector(self, text: str) -> Matrix:
        if "vecmark" in text.lower():
            return _axis(self.dimension)
        v = super()._vector(text).astype(np.float64)
        v[0] = 0.0
        norm = float(np.linalg.norm(v))
        return (v / norm if norm else _axis(self.dimension, 1)).astype(np.float32)

    def embed_query(self, text: str) -> Matrix:
        return _axis(self.dimension)


def _axis(dim: int, i: int = 0) -> Matrix:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def open_runtime(
    root: Path, home: Path, embedder: Embedder | None, **retrieval: object
) -> PackRuntime:
    base = RetrievalSettings(today="2026-06-01", **QUIET)  # type: ignore[arg-type]
    settings = Settings(
        retrieval=dataclasses.replace(base, **retrieval),  # type: ignore[arg-type]
        index=IndexSettings(max_tokens=32),  # one chunk per ## section
    )
    rt = PackRuntime(PackSettings(path=root, index_dir=home / "idx"), settings, embedder, home)
    rt.index(show_progress=False)
    return rt


@pytest.fixture
def searcher(make_pack: MakePack, tmp_path: Path) -> Iterator[Callable[..., PackRuntime]]:
    opened: list[PackRuntime] = []

    def make(files: dict[str, str], embedder: Embedder | None, **retrieval: object):  # type: ignore[no-untyped-def]
        home = tmp_path / f"home{len(opened)}"
        rt = open_runtime(make_pack(files), home, embedder, **retrieval)
        opened.append(rt)
        return rt

    yield make
    for rt in opened:
        rt.close()


def files_of(rt: PackRuntime, query: str, k: int = 5) -> list[str]:
    return [h.source_file for h in rt.search(SearchRequest(query, k=k)).hits]


# --- MMR: λ weighs relevance against novelty --------------------------------------------------

TWINS = {
    "twin.md": "# Kiln\n\n## Firing\n\nKiln firing schedule for stoneware glaze cone six.\n\n"
    "## Again\n\nKiln firing schedule for stoneware glaze cone six, again.\n",
    "other.md": "# Clay\n\nStoneware clay wedging before the kiln.\n",
    "far.md": "# Tools\n\nA wire cutter and a sponge.\n",
}


def test_mmr_with_a_low_lambda_puts_a_new_file_before_a_near_duplicate(
    searcher: Callable[..., PackRuntime],
) -> None:
    query = "kiln firing schedule stoneware glaze"
    relevant = searcher(TWINS, HashingEmbedder(256), mmr=True, mmr_lambda=0.9)
    assert files_of(relevant, query)[:3] == ["twin.md", "twin.md", "other.md"]
    diverse = searcher(TWINS, HashingEmbedder(256), mmr=True, mmr_lambda=0.1)
    found = files_of(diverse, query)
    assert found[0] == found[-1] == "twin.md"  # the twin section comes last
    assert found.count("twin.md") == 2 and len(found) == 4


# --- the per-file cap, with MMR on and off -----------------------------------------------------

MANY = {
    "big.md": "# Pumps\n\n"
    + "".join(f"## Pump {i}\n\nCentrifugal pump impeller priming note {i}.\n\n" for i in range(5)),
    "small.md": "# Valves\n\nA pump needs a check valve.\n",
    "tiny.md": "# Pipes\n\nPipe impeller sizes.\n",
}


@pytest.mark.parametrize("mmr", [False, True])
@pytest.mark.parametrize("cap", [1, 3])
def test_the_per_file_cap_bounds_the_chunks_of_one_file(
    searcher: Callable[..., PackRuntime], mmr: bool, cap: int
) -> None:
    rt = searcher(MANY, HashingEmbedder(256), mmr=mmr, mmr_lambda=0.9, max_chunks_per_file=cap)
    counts = Counter(files_of(rt, "centrifugal pump impeller priming", k=8))
    assert counts["big.md"] == cap
    assert {"small.md", "tiny.md"} <= set(counts)


# --- fusion: RRF honours rrf_k, weighted fusion honours the weights -------------------------

DISAGREE = {
    "words.md": "# Alpha\n\nAlpha beta gamma, alpha beta: every word of the question.\n",
    "meaning.md": "# Other\n\nvecmark: nothing in common with the question's words.\n",
    "filler.md": "# Filler\n\nAlpha filler text about something else entirely.\n",
    "more.md": "# More\n\nUnrelated delta epsilon text.\n",
}


@pytest.mark.parametrize(
    ("text_weight", "vector_weight", "first"),
    [(0.6, 0.4, "words.md"), (0.2, 0.8, "meaning.md")],
)
def test_when_the_legs_disagree_the_fusion_weights_decide(
    searcher: Callable[..., PackRuntime], text_weight: float, vector_weight: float, first: str
) -> None:
    rt = searcher(
        DISAGREE,
        MarkerEmbedder(64),
        text_weight=text_weight,
        vector_weight=vector_weight,
        adaptive_threshold=False,
    )
    assert files_of(rt, "alpha beta gamma")[0] == first


def test_the_default_weights_favour_the_lexical_leg(searcher: Callable[..., PackRuntime]) -> None:
    rt = searcher(DISAGREE, MarkerEmbedder(64), adaptive_threshold=False)
    assert files_of(rt, "alpha beta gamma")[:2] == ["words.md", "meaning.md"]


@pytest.mark.parametrize("rrf_k", [1, 60])
def test_rrf_scores_are_one_over_rrf_k_plus_the_rank_in_each_leg(
    searcher: Callable[..., PackRuntime], rrf_k: int
) -> None:
    rt = searcher(DISAGREE, MarkerEmbedder(64), fusion=Fusion.RRF, rrf_k=rrf_k)
    result = rt.search(SearchRequest("alpha beta gamma", k=5, explain=True))
    final = result.explain[-1]["candidates"]
    both = [c for c in final if c["lexical_rank"] and c["vector_rank"]]
    assert both, "no candidate in both legs"
    for c in both:
        expected = 1 / (rrf_k + c["lexical_rank"]) + 1 / (rrf_k + c["vector_rank"])
        assert c["fused"] == pytest.approx(expected, abs=1e-6), c["candidate"]
    only_vector = next(c for c in final if c["candidate"].startswith("meaning.md"))
    assert only_vector["lexical_rank"] is None
    assert only_vector["fused"] == pytest.approx(1 / (rrf_k + 1), abs=1e-6)


@pytest.mark.parametrize(("factor", "first"), [(1.0, "meaning.md"), (0.5, "words.md")])
def test_a_chunk_one_leg_alone_found_needs_a_lead_past_one_leg_factor_to_come_first(
    searcher: Callable[..., PackRuntime], factor: float, first: str
) -> None:
    # meaning.md is the dense leg's only match (0.6 of the fused scale, no query word in it);
    # words.md is first lexically and in the dense pool too (cosine 0): 0.4
    rt = searcher(
        DISAGREE,
        MarkerEmbedder(64),
        text_weight=0.4,
        vector_weight=0.6,
        one_leg_factor=factor,
        adaptive_threshold=False,
    )
    result = rt.search(SearchRequest("alpha beta gamma", k=5, explain=True))
    assert result.hits[0].source_file == first
    stages = [s["stage"] for s in result.explain]
    assert ("support" in stages) == (factor < 1.0)


def test_one_leg_factor_is_a_share_between_0_and_1() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.one_leg_factor: must be between 0 and 1"):
        load_settings(data={"retrieval": {"one_leg_factor": 1.5}})


GATED = {
    # noise.md is first lexically on one word of the question (no dense support: cosine 0);
    # answer.md is the dense leg's only match and holds one common word of the question
    "noise.md": "# Noise\n\nBeta, beta, beta.\n",
    "answer.md": "# Answer\n\nvecmark, and alpha once in a much longer sentence of many words.\n",
    "a1.md": "# One\n\nAlpha filler.\n",
    "a2.md": "# Two\n\nAlpha again.\n",
}


@pytest.mark.parametrize(
    ("gate", "noise", "first"),
    [
        (0.0, "Beta, beta, beta.", "noise.md"),
        (0.5, "Beta, beta, beta.", "answer.md"),
        (0.5, "Beta, beta, beta, and alpha and gamma.", "noise.md"),  # every word: kept whole
    ],
)
def test_a_lexical_hit_on_part_of_the_question_keeps_that_part_of_its_lexical_weight(
    searcher: Callable[..., PackRuntime], gate: float, noise: str, first: str
) -> None:
    files = {**GATED, "noise.md": f"# Noise\n\n{noise}\n"}
    rt = searcher(files, MarkerEmbedder(64), lexical_gate=gate, adaptive_threshold=False)
    result = rt.search(SearchRequest("alpha beta gamma", k=4, explain=True))
    assert result.hits[0].source_file == first
    stages = [s["stage"] for s in result.explain]
    assert ("gate" in stages) == (gate > 0)


def test_lexical_gate_is_not_negative() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.lexical_gate"):
        load_settings(data={"retrieval": {"lexical_gate": -1}})


# --- intent routing: the query's shape moves the weights ---------------------------------------


def test_intent_routing_gives_how_questions_the_vector_leg(
    searcher: Callable[..., PackRuntime],
) -> None:
    query = "how do I alpha beta gamma"
    plain = searcher(DISAGREE, MarkerEmbedder(64), adaptive_threshold=False)
    routed = searcher(DISAGREE, MarkerEmbedder(64), adaptive_threshold=False, intent_routing=True)
    assert files_of(plain, query)[0] == "words.md"  # GENERAL: lexical 0.6
    result = routed.search(SearchRequest(query, k=5))
    assert result.intent == "HOW"
    assert result.hits[0].source_file == "meaning.md"  # HOW: vector 0.8
    assert files_of(routed, "alpha beta gamma")[0] == "words.md"  # GENERAL again


# --- the activation floor with the real model it was calibrated for ---------------------------

HOUSEHOLD = {
    "kettle.md": "# Descaling a kettle\n\nBoil a mix of water and white vinegar, leave it for an "
    "hour, then rinse twice to remove limescale.\n",
    "bike.md": "# Fixing a puncture\n\nLever the tyre off the rim, find the hole in the inner "
    "tube, roughen the rubber and apply a patch.\n",
    "tax.md": "# Filing a tax return\n\nGather your income statements and receipts, then submit "
    "the form online before the January deadline.\n",
}


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    return LocalEmbedder(EmbeddingSpec(model="all-MiniLM-L6-v2-int8", batch_size=2))


def test_the_default_floor_empties_an_off_topic_answer_with_the_real_model(
    searcher: Callable[..., PackRuntime], minilm: LocalEmbedder
) -> None:
    # the floor alone (the answerability model, fitted on real packs, is off: on a three-file
    # pack it has no rare terms to weigh and withholds this paraphrase too)
    rt = searcher(HOUSEHOLD, minilm, confidence=False)
    assert rt.search(SearchRequest("which team won the football world cup in 1998")).hits == ()
    assert files_of(rt, "how do I repair a flat bicycle tire")[0] == "bike.md"
    unfloored = searcher(HOUSEHOLD, minilm, activation_floor=0.0, confidence=False)
    assert unfloored.search(SearchRequest("which team won the football world cup in 1998")).hits


# --- graph expansion: decay and the minimum score decide what joins ----------------------------

LINKED = {
    "panels.md": "# Panels\n\nSolar panels produce DC; tilt and orientation decide the yield.\n"
    "See [[inverter]] for conversion.\n",
    "inverter.md": "# Inverters\n\nThe inverter turns panel DC into household AC.\n",
    "battery.md": "# Battery\n\nSolar yield is stored in a battery bank.\n",
}


def test_a_graph_neighbour_scores_best_times_similarity_times_decay(
    searcher: Callable[..., PackRuntime],
) -> None:
    query = "solar panels tilt orientation yield"
    options = {"graph_expansion": True, "graph_reserved_slots": 1, "graph_decay": 0.5}
    rt = searcher(LINKED, HashingEmbedder(256), graph_min_score=0.0, **options)
    result = rt.search(SearchRequest(query, k=2, explain=True))
    assert [(h.source_file, h.graph_expanded) for h in result.hits] == [
        ("panels.md", False),
        ("inverter.md", True),
    ]
    final = {c["candidate"].split("#")[0]: c for c in result.explain[-1]["candidates"]}
    graph = final["inverter.md"]
    assert (graph["origin"], graph["via"]) == ("graph", "panels.md")
    (why,) = [w for w in graph["why"] if w.startswith("graph:")]
    assert why.startswith("graph: 1 hop(s) from panels.md, similarity ") and "decay 0.500" in why
    similarity = float(why.split("similarity ")[1].split(" ")[0])
    assert 0 < similarity < 1
    expected = final["panels.md"]["final"] * similarity * 0.5
    assert graph["final"] == pytest.approx(expected, abs=2e-3)
    strict = searcher(
        LINKED, HashingEmbedder(256), graph_min_score=similarity * 0.5 + 0.01, **options
    )
    assert [h.graph_expanded for h in strict.search(SearchRequest(query, k=2)).hits] == [False] * 2


def test_lambda_does_nothing_while_mmr_is_off(searcher: Callable[..., PackRuntime]) -> None:
    query = "kiln firing schedule stoneware glaze"
    off = searcher(TWINS, HashingEmbedder(256), mmr=False, mmr_lambda=0.1)
    assert files_of(off, query)[:3] == ["twin.md", "twin.md", "other.md"]


# --- freshness: a file past its refresh date is lowered when a penalty is set ------------------

AGED = {
    "aged.md": "---\ntitle: Aged\nverified_at: 2025-01-01\nrefresh: P30D\n---\n# Aged\n\n"
    "Descaling the espresso boiler with citric acid, descaling every month.\n",
    "fresh.md": "---\ntitle: Fresh\nverified_at: 2026-05-20\nrefresh: P30D\n---\n# Fresh\n\n"
    "Descaling the espresso boiler with citric acid.\n",
}


def test_a_stale_file_is_lowered_by_the_freshness_penalty_end_to_end(
    searcher: Callable[..., PackRuntime],
) -> None:
    query = "descaling espresso boiler"
    assert files_of(searcher(AGED, None), query)[:2] == ["aged.md", "fresh.md"]
    penalised = searcher(AGED, None, freshness_penalty=0.9)
    result = penalised.search(SearchRequest(query, k=5))
    assert [h.source_file for h in result.hits][:2] == ["fresh.md", "aged.md"]
    assert result.hits[1].extra["age_stale"] is True


# --- score_ratio: hits far below the best are dropped -------------------------------------------


@pytest.mark.parametrize(("ratio", "kept"), [(0.0, 4), (0.5, 1)])
def test_score_ratio_drops_what_scores_under_that_share_of_the_best(
    searcher: Callable[..., PackRuntime], ratio: float, kept: int
) -> None:
    rt = searcher(DISAGREE, HashingEmbedder(64), score_ratio=ratio, activation_floor=0.0)
    hits = rt.search(SearchRequest("alpha beta gamma", k=5)).hits
    assert len(hits) == kept
    assert hits[0].source_file == "words.md"
    assert all(h.score >= ratio * hits[0].score for h in hits)
