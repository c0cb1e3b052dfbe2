import pytest

from ep_mcp.config import RetrievalSettings
from ep_mcp.retrieval.boosts import apply_boosts, apply_filters
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.settings import boost_settings


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
