"""Merging several packs' answers: comparable scores, each hit named, empty packs silent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.merge import by_activation_rank, merge_results
from ep_mcp.retrieval.types import Hit, SearchResult


def hit(path: str, score: float, *, requires: bool = False) -> Hit:
    return Hit(
        id=path,
        source_file=path,
        title=path,
        type="concept",
        tags=(),
        heading_path=(),
        text=path,
        score=score,
        content_hash="h",
        verified_at=None,
        chunk_index=0,
        line_range=(1, 2),
        requires_expanded=requires,
    )


def answer(pack: str, activation: float | None, *hits: Hit) -> SearchResult:
    return SearchResult("q", pack, "hybrid" if hits else "empty", hits, activation=activation)


def test_hits_of_both_packs_come_back_named_the_stronger_pack_first() -> None:
    weak = answer("weak", 0.5, hit("w1.md", 1.0), hit("w2.md", 0.4))
    strong = answer("strong", 0.8, hit("s1.md", 2.0), hit("s2.md", 1.8))
    merged = merge_results("q", [weak, strong], k=10)
    assert [(m.pack, m.hit.source_file) for m in merged.hits] == [
        ("strong", "s1.md"),
        ("strong", "s2.md"),
        ("weak", "w1.md"),
        ("weak", "w2.md"),
    ]
    assert merged.packs == ("weak", "strong") and merged.mode == "hybrid"
    out = merged.to_dict()
    assert out["packs"] == ["weak", "strong"] and "pack" not in out
    first = out["results"][0]
    assert first["pack"] == "strong" and first["pack_score"] == 2.0
    assert first["score"] == 0.8  # activation x score / the pack's best


def test_a_pack_answering_empty_contributes_nothing() -> None:
    empty = answer("empty", 0.9)
    some = answer("some", 0.5, hit("a.md", 1.0))
    merged = merge_results("q", [empty, some], k=5)
    assert [m.pack for m in merged.hits] == ["some"]
    assert merge_results("q", [empty], k=5).mode == "empty"


def test_k_cuts_the_merged_ranking_and_requires_hits_follow_their_placed_pack() -> None:
    a = answer("a", 0.9, hit("a1.md", 1.0), hit("a2.md", 0.9), hit("need.md", 0.0, requires=True))
    b = answer("b", 0.3, hit("b1.md", 1.0), hit("bneed.md", 0.0, requires=True))
    merged = merge_results("q", [a, b], k=2)
    assert [m.hit.source_file for m in merged.hits] == ["a1.md", "a2.md", "need.md"]
    assert [m.pack for m in merged.hits] == ["a", "a", "a"]


def test_a_close_second_pack_interleaves() -> None:
    a = answer("a", 0.70, hit("a1.md", 1.0), hit("a2.md", 0.5))
    b = answer("b", 0.68, hit("b1.md", 1.0), hit("b2.md", 0.5))
    order = [m.hit.source_file for m in merge_results("q", [a, b], k=4).hits]
    assert order == ["a1.md", "b1.md", "a2.md", "b2.md"]


def test_a_rank_rule_can_replace_the_default() -> None:
    a = answer("a", 0.6, hit("a1.md", 1.0), hit("a2.md", 0.01))
    b = answer("b", 0.5, hit("b1.md", 1.0))
    order = [m.hit.source_file for m in merge_results("q", [a, b], 3, by_activation_rank(1)).hits]
    assert order == ["a1.md", "b1.md", "a2.md"]


scores = st.lists(st.floats(0.0, 10.0), min_size=0, max_size=8)


@given(scores, scores, st.floats(0.0, 1.5), st.floats(0.0, 1.5), st.integers(1, 20))
def test_the_merge_keeps_each_packs_order_and_returns_at_most_k(
    xs: list[float], ys: list[float], ax: float, ay: float, k: int
) -> None:
    def ranked(pack: str, values: list[float], act: float) -> SearchResult:
        hits = tuple(hit(f"{pack}{i}.md", s) for i, s in enumerate(sorted(values, reverse=True)))
        return answer(pack, act, *hits)

    x, y = ranked("x", xs, ax), ranked("y", ys, ay)
    merged = merge_results("q", [x, y], k)
    assert len(merged.hits) == min(k, len(xs) + len(ys))
    for r in (x, y):
        mine = [m.hit for m in merged.hits if m.pack == r.pack]
        assert mine == list(r.hits[: len(mine)])
    assert all(a.score >= b.score for a, b in zip(merged.hits, merged.hits[1:], strict=False))


def test_a_packs_scores_count_relative_to_its_best_searched_hit() -> None:
    a = answer("a", 0.5, hit("a1.md", 2.0), hit("a2.md", 1.0), hit("need.md", 9.0, requires=True))
    assert [m.score for m in merge_results("q", [a], k=5).hits] == [0.5, 0.25, 0.0]


def test_without_positive_scores_a_packs_hits_count_by_rank() -> None:
    a = answer("a", 0.6, hit("a1.md", 0.0), hit("a2.md", 0.0), hit("a3.md", -1.0))
    merged = merge_results("q", [a], k=5)
    assert [m.score for m in merged.hits] == pytest.approx([0.6, 0.3, 0.2])


def test_a_negative_score_or_no_activation_counts_as_nothing() -> None:
    a = answer("a", 0.5, hit("a1.md", 1.0), hit("a2.md", -0.5))
    b = answer("b", None, hit("b1.md", 1.0))
    merged = merge_results("q", [a, b], k=5)
    assert [(m.hit.source_file, m.score) for m in merged.hits] == [
        ("a1.md", 0.5),
        ("a2.md", 0.0),
        ("b1.md", 0.0),
    ]


def test_ties_keep_the_order_of_the_packs_then_the_rank() -> None:
    a = answer("a", 0.5, hit("a1.md", 1.0), hit("a2.md", 1.0))
    b = answer("b", 0.5, hit("b1.md", 1.0))
    merged = merge_results("q", [b, a], k=5)
    assert [m.hit.source_file for m in merged.hits] == ["b1.md", "a1.md", "a2.md"]


def test_the_merged_answer_names_each_packs_notes_and_modes() -> None:
    a = SearchResult("q", "a", "hybrid", (hit("a1.md", 1.0),), notes=("slow",), activation=0.5)
    b = SearchResult("q", "b", "lexical", (hit("b1.md", 1.0),), activation=0.4)
    c = SearchResult("q", "c", "empty", (), notes=("not covered",), activation=0.1)
    merged = merge_results("q", [a, b, c], k=5, took_ms=3.14159)
    assert merged.mode == "hybrid+lexical"
    assert merged.notes == ("a: slow", "c: not covered")
    assert merged.to_dict() == {
        "query": "q",
        "packs": ["a", "b", "c"],
        "mode": "hybrid+lexical",
        "took_ms": 3.14,
        "results": [h.to_dict() for h in merged.hits],
        "notes": ["a: slow", "c: not covered"],
    }
    untimed = merge_results("q", [b], k=5).to_dict()
    assert "notes" not in untimed and untimed["took_ms"] == 0.0


def test_a_merged_hit_keeps_the_packs_score_and_rounds_the_merged_one() -> None:
    a = answer("a", 0.123456789, hit("a1.md", 2.0))
    data = merge_results("q", [a], k=1).hits[0].to_dict()
    assert (data["pack"], data["pack_score"], data["score"]) == ("a", 2.0, 0.123457)


def test_the_rank_rule_divides_the_activation_by_offset_plus_rank() -> None:
    rule = by_activation_rank(60)
    a = answer("a", 0.61, hit("a1.md", 1.0))
    assert rule(a, 1, a.hits[0]) == 0.61 / 61
    assert rule(answer("b", None, hit("b1.md", 1.0)), 1, a.hits[0]) == 0.0
