import datetime as dt

import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.retrieval.boosts import apply_boosts, apply_filters
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.settings import boost_settings, today_of


def cand(i: int, score: float, **kw: object) -> Candidate:
    return Candidate(i, f"f{i}.md", score=score, chars=500, **kw)  # type: ignore[arg-type]


def test_type_and_tags_given_as_filters_remove_the_rest() -> None:
    cands = [
        cand(1, 1, type="howto", tags=("a",)),
        cand(2, 1, type="concept", tags=("b",)),
        cand(3, 1, type="howto", tags=("b",)),
    ]
    assert [c.chunk_id for c in apply_filters(cands, "howto", ())] == [1, 3]
    assert [c.chunk_id for c in apply_filters(cands, None, ["b"])] == [2, 3]
    assert [c.chunk_id for c in apply_filters(cands, "howto", ["b"])] == [3]


def test_type_and_tag_hints_boost_instead_of_filtering() -> None:
    cands = [cand(1, 1.0), cand(2, 0.98, type="howto", tags=("x", "y"))]
    out = apply_boosts(
        cands, boost_settings(RetrievalSettings()), type_hint="howto", tag_hints=["x", "y"]
    )
    assert [c.chunk_id for c in out] == [2, 1]
    assert out[0].score == pytest.approx(0.98 + 0.05 + 0.06)
    assert any("type hint" in n for n in out[0].notes)


def test_boosts_scale_with_the_fusion_score_range() -> None:
    out = apply_boosts(
        [cand(1, 0.03, always=True)], boost_settings(RetrievalSettings()), scale=0.03
    )
    assert out[0].score == pytest.approx(0.03 + 0.03 * 0.03)


def test_short_chunks_are_penalised() -> None:
    short = Candidate(1, "a.md", score=1.0, chars=20)
    out = apply_boosts(
        [short], boost_settings(RetrievalSettings(length_penalty_chars=80, length_penalty=0.15))
    )
    assert out[0].score == pytest.approx(0.85)


def test_the_freshness_penalty_is_off_by_default_and_applies_when_set() -> None:
    stale = cand(1, 1.0, age_stale=True)
    assert apply_boosts([stale], boost_settings(RetrievalSettings()))[0].score == 1.0
    assert apply_boosts([stale], boost_settings(RetrievalSettings(freshness_penalty=0.2)))[
        0
    ].score == pytest.approx(0.8)


def test_each_boost_and_penalty_says_what_it_did() -> None:
    settings = boost_settings(RetrievalSettings(freshness_penalty=0.2))
    c = Candidate(
        1, "a.md", score=1.0, type="howto", tags=("x", "y", "z"), always=True, chars=20,
        age_stale=True,
    )  # fmt: skip
    (out,) = apply_boosts([c], settings, type_hint="howto", tag_hints=["x", "y"], scale=2.0)
    assert out.notes == (
        "boosts: type hint +0.05, 2 tag hint(s) +0.06, always tier +0.03, "
        "short chunk (20 chars) x0.85, past its refresh date x0.8",
    )
    assert out.score == pytest.approx((1.0 + 2.0 * (0.05 + 0.06 + 0.03)) * 0.85 * 0.8)


def test_a_candidate_no_boost_touches_keeps_its_score_and_has_no_note() -> None:
    c = cand(1, 1.0, type="howto", tags=("x",))
    (out,) = apply_boosts(
        [c], boost_settings(RetrievalSettings()), type_hint="faq", tag_hints=["y"]
    )
    assert out == c


def test_boosts_set_to_zero_add_nothing_and_say_nothing() -> None:
    zero = RetrievalSettings(
        type_match_boost=0.0, tag_match_boost=0.0, always_tier_boost=0.0, length_penalty=0.0
    )
    c = Candidate(1, "a.md", score=1.0, type="howto", tags=("x",), always=True, chars=5)
    (out,) = apply_boosts([c], boost_settings(zero), type_hint="howto", tag_hints=["x"])
    assert out == c


def test_a_chunk_at_the_length_limit_is_not_short() -> None:
    settings = boost_settings(RetrievalSettings(length_penalty_chars=80, length_penalty=0.15))
    (out,) = apply_boosts([Candidate(1, "a.md", score=1.0, chars=80)], settings)
    assert out.score == 1.0


def test_boosted_candidates_are_sorted_again_best_first() -> None:
    cands = [cand(1, 1.0), cand(2, 0.9, type="howto"), cand(3, 0.8)]
    out = apply_boosts(cands, boost_settings(RetrievalSettings()), type_hint="howto", scale=3.0)
    assert [c.chunk_id for c in out] == [2, 1, 3]
    assert out[0].score == pytest.approx(0.9 + 0.05 * 3.0)


def test_a_tag_filter_keeps_candidates_with_any_of_the_tags() -> None:
    cands = [cand(1, 1, tags=("a", "b")), cand(2, 1, tags=()), cand(3, 1, tags=("c",))]
    assert [c.chunk_id for c in apply_filters(cands, "", ["b", "c"])] == [1, 3]
    assert apply_filters(cands, None, []) == cands


def test_freshness_is_judged_on_the_pinned_day_else_on_the_clock() -> None:
    assert today_of(RetrievalSettings(today="2026-06-01")) == dt.date(2026, 6, 1)
    assert today_of(RetrievalSettings(today=None)) == dt.date.today()


def test_the_freshness_penalty_spares_a_fresh_chunk() -> None:
    fresh = cand(1, 1.0, age_stale=False)
    settings = boost_settings(RetrievalSettings(freshness_penalty=0.2))
    assert apply_boosts([fresh], settings)[0] == fresh
