"""The lexical fallback (no vectors): BM25 plus coverage, density, path and length signals."""

from __future__ import annotations

import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.retrieval import fallback
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.fallback import FallbackWeights, lexical_signals, score_lexically
from ep_mcp.retrieval.settings import fallback_weights


def _only(signal: str, length_chars: int = 100) -> FallbackWeights:
    weights = {
        f"{n}_weight": 1.0 if n == signal else 0.0
        for n in ("coverage", "density", "path", "length")
    }
    return FallbackWeights(**weights, length_chars=length_chars)


ONLY = {  # one signal at a time: the others weigh nothing
    "coverage": _only("coverage"),
    "density": _only("density"),
    "path": _only("path"),
    "length": _only("length", 1000),
}


def test_coverage_is_the_share_of_query_terms_in_the_chunk() -> None:
    cov, _, _ = lexical_signals(["pump", "valve", "pipe"], "A pump and a valve.", "x.md")
    assert cov == pytest.approx(2 / 3)


def test_density_is_twenty_times_the_share_of_words_that_are_query_terms_capped_at_one() -> None:
    sparse = "pump " + "filler " * 39  # 1 of 40 words: 0.025 x 20
    assert lexical_signals(["pump"], sparse, "x.md")[1] == pytest.approx(0.5)
    assert lexical_signals(["pump"], "pump pump filler", "x.md")[1] == 1.0
    assert lexical_signals(["pump"], "", "x.md")[1] == 0.0  # an empty chunk: no division by 0


def test_the_path_signal_is_the_share_of_terms_found_in_the_lower_cased_path() -> None:
    assert lexical_signals(["pump", "valve"], "text", "Guides/Pump-Care.md")[2] == 0.5
    assert lexical_signals(["pump", "valve"], "text", "pumps/valve.md")[2] == 1.0
    assert lexical_signals([], "text", "pump.md") == (0.0, 0.0, 0.0)


def test_the_fallback_score_adds_normalised_bm25_and_the_weighted_signals() -> None:
    weights = fallback_weights(RetrievalSettings())  # 0.4, 0.1, 0.1, 0.1 over 300 chars
    text = "pump" + " filler" * 39  # 277 chars, 1 word of 40
    cands = [Candidate(1, "pump.md", lexical_score=4.0), Candidate(2, "b.md", lexical_score=2.0)]
    texts = {1: text, 2: "nothing here"}
    best, other = score_lexically(["pump"], cands, texts, weights)
    # bm25 1 (the best) + 0.4 x coverage 1 + 0.1 x density 0.5 + 0.1 x path 1 + 0.1 x length
    assert best.score == pytest.approx(1 + 0.4 + 0.1 * 0.5 + 0.1 + 0.1 * 277 / 300)
    assert best.notes == (
        "lexical fallback: bm25 1.000 + coverage 1.00 + density 0.50 + path 1.00 + length 0.92",
    )
    assert other.score == pytest.approx(0.1 * len("nothing here") / 300)  # bm25 0: the lowest


@pytest.mark.parametrize(
    ("signal", "first"),
    [("coverage", 2), ("density", 3), ("path", 4), ("length", 5)],
)
def test_each_signal_lifts_the_chunk_that_has_it(signal: str, first: int) -> None:
    terms = ["pump", "valve"]
    texts = {
        1: "unrelated words only",
        2: "pump valve " + "filler " * 60,  # every term, thin
        3: "pump pump pump",  # dense in one term
        4: "nothing",  # both terms in its path
        5: "long " * 300,  # long, no terms
    }
    cands = [Candidate(i, "pump/valve.md" if i == 4 else f"{i}.md") for i in texts]
    ranked = score_lexically(terms, cands, texts, ONLY[signal])
    assert ranked[0].chunk_id == first


def test_a_chunk_longer_than_length_chars_gets_the_whole_length_signal() -> None:
    cands = [Candidate(1, "a.md"), Candidate(2, "b.md")]
    texts = {1: "x" * 2000, 2: "x" * 500}
    scores = {c.chunk_id: c.score for c in score_lexically([], cands, texts, ONLY["length"])}
    assert scores == {1: pytest.approx(1.0 + 1.0), 2: pytest.approx(1.0 + 0.5)}  # bm25 flat: 1


def test_a_chunk_without_text_scores_on_bm25_alone() -> None:
    cands = [Candidate(1, "a.md", lexical_score=3.0), Candidate(2, "b.md", lexical_score=1.0)]
    out = score_lexically(["a"], cands, {}, ONLY["coverage"])
    assert [(c.chunk_id, c.score) for c in out] == [(1, 1.0), (2, 0.0)]


def test_a_chunk_without_text_has_no_length_signal() -> None:
    cands = [Candidate(1, "a.md", lexical_score=3.0), Candidate(2, "b.md", lexical_score=1.0)]
    out = score_lexically(["a"], cands, {1: "x" * 500}, ONLY["length"])
    assert [(c.chunk_id, c.score) for c in out] == [(1, 1.5), (2, 0.0)]


def test_a_candidate_without_a_bm25_score_counts_as_the_lowest() -> None:
    cands = [Candidate(1, "a.md", lexical_score=None), Candidate(2, "b.md", lexical_score=2.0)]
    cands.append(Candidate(3, "c.md", lexical_score=4.0))
    out = score_lexically(["zzz"], cands, {}, ONLY["coverage"])
    assert [(c.chunk_id, c.score) for c in out] == [(3, 1.0), (2, 0.5), (1, 0.0)]


def test_density_counts_every_occurrence_of_a_query_term_among_the_chunks_words() -> None:
    text = "Pump the pump, then pump again; the valve waits."  # 9 words, 3 of them "pump"
    _, density, _ = lexical_signals(["pump", "pump", "hose"], text, "x.md")
    assert density == pytest.approx(min(3 / 9 * 20, 1.0))
    _, sparse, _ = lexical_signals(["valve"], text + " filler" * 200, "x.md")
    assert sparse == pytest.approx(1 / 209 * 20)


def test_a_chunks_words_are_read_once_however_many_queries_score_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[str] = []
    real = fallback.words
    fallback._word_counts.cache_clear()  # not counted by an earlier run in this process
    monkeypatch.setattr(fallback, "words", lambda text: read.append(text) or real(text))
    text = "A kiln fires stoneware to cone six; a glaze kiln fires lower."
    first = lexical_signals(["kiln", "glaze"], text, "kilns.md")
    lexical_signals(["stoneware"], text, "kilns.md")
    assert lexical_signals(["kiln", "glaze"], text, "kilns.md") == first
    assert read == [text]
