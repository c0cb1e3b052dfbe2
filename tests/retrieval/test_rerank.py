import sys
import types
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ep_mcp.config.model import RerankerKind, RerankerSettings
from ep_mcp.errors import ConfigError, RerankError
from ep_mcp.index.rerank import make_reranker
from ep_mcp.index.rerank.sentence import CrossEncoderReranker
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.rerank import Reranker, best_window, rerank, rerank_or_keep


class LengthReranker:
    """A fake: longer passages are more relevant."""

    name = "fake/length"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [float(len(p)) for p in passages]


TEXTS = {1: "a", 2: "bbb", 3: "cc", 4: "dddddddd"}


def test_the_fake_satisfies_the_protocol() -> None:
    assert isinstance(LengthReranker(), Reranker)


def test_rerank_reorders_the_wide_pool_before_the_cut() -> None:
    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2, 3, 4)]
    out = rerank("q", cands, lambda c: TEXTS[c.chunk_id], LengthReranker(), pool=3, max_chars=100)
    assert [c.chunk_id for c in out] == [2, 3, 1, 4]  # 4 is outside the pool: stays after
    assert out[0].notes[-1].startswith("rerank fake/length")


def test_rerank_is_off_unless_enabled() -> None:
    assert make_reranker(RerankerSettings()) is None
    chosen = RerankerSettings(enabled=True, kind=RerankerKind.SENTENCE_TRANSFORMERS)
    made = make_reranker(chosen)
    assert made is not None and isinstance(made.inner, CrossEncoderReranker)


def test_a_missing_cross_encoder_says_what_to_do() -> None:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError) as caught:
            CrossEncoderReranker("some/model").score("q", ["p"])
        assert str(caught.value) == (
            "reranker.kind is sentence-transformers but it is not installed — "
            "install `ep-mcp[rerank]`, choose another reranker.kind, or set "
            "reranker.enabled: false"
        )
    else:  # pragma: no cover - only when the extra is installed
        pytest.skip("sentence-transformers is installed")


def test_rerank_decides_the_order_and_the_pool_keeps_its_scores() -> None:
    """The reranker's own scale (here passage lengths) never reaches later stages: the new
    first takes the best score the pool had, and so on down."""
    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2, 3)]
    out = rerank("q", cands, lambda c: TEXTS[c.chunk_id], LengthReranker(), pool=3, max_chars=100)
    assert [(c.chunk_id, c.score, c.notes) for c in out] == [
        (2, 1.0, ("rerank fake/length: 3.0000 (was #2)",)),
        (3, 0.5, ("rerank fake/length: 2.0000 (was #3)",)),
        (1, pytest.approx(1 / 3), ("rerank fake/length: 1.0000 (was #1)",)),
    ]


def test_candidates_past_the_pool_stay_below_every_reranked_one_in_their_order() -> None:
    cands = [Candidate(i, f"{i}.md", s) for i, s in ((1, 1.0), (2, 0.5), (3, 0.5), (4, 0.25))]
    texts = {1: "aa", 2: "aaaa", 3: "x", 4: "y"}
    out = rerank("q", cands, lambda c: texts[c.chunk_id], LengthReranker(), pool=2, max_chars=100)
    assert [c.chunk_id for c in out] == [2, 1, 3, 4]
    assert [c.score for c in out[:2]] == [1.0, 0.5]
    assert out[2].score < 0.5 and out[2].notes == ("below the rerank pool",)  # was tied
    assert out[3].score == 0.25 and out[3].notes == ()  # already below: untouched
    assert out[2].score > out[3].score


def test_a_pool_of_zero_leaves_the_order_alone() -> None:
    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2)]
    assert rerank("q", cands, lambda c: "", LengthReranker(), pool=0, max_chars=100) == cands
    assert rerank("q", [], lambda c: "", LengthReranker(), pool=5, max_chars=100) == []


class FakeCrossEncoder:
    """Stands in for sentence_transformers.CrossEncoder: scores a pair by the passage length."""

    loaded: ClassVar[list[tuple[str, bool]]] = []

    def __init__(self, model: str, local_files_only: bool = False) -> None:
        if model == "not/downloaded":
            raise OSError("no such file")
        FakeCrossEncoder.loaded.append((model, local_files_only))
        self.calls: list[dict[str, Any]] = []

    def predict(self, pairs: list[tuple[str, str]], show_progress_bar: bool = True) -> list[int]:
        self.calls.append({"pairs": pairs, "show_progress_bar": show_progress_bar})
        return [len(passage) for _, passage in pairs]


@pytest.fixture
def fake_extra(monkeypatch: pytest.MonkeyPatch) -> type[FakeCrossEncoder]:
    module = types.ModuleType("sentence_transformers")
    module.CrossEncoder = FakeCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    FakeCrossEncoder.loaded = []
    return FakeCrossEncoder


def test_the_cross_encoder_loads_offline_once_and_scores_the_passages_it_is_given(
    fake_extra: type[FakeCrossEncoder],
) -> None:
    reranker = CrossEncoderReranker("acme/ms-marco")
    assert reranker.name == "cross-encoder/acme/ms-marco"
    assert reranker.score("q", ["abcdefgh", "ab"]) == [8.0, 2.0]
    assert reranker.score("q", ["abc"]) == [3.0]
    assert fake_extra.loaded == [("acme/ms-marco", True)]  # loaded once, never downloaded
    encoder = reranker._load()
    assert encoder.calls[0] == {
        "pairs": [("q", "abcdefgh"), ("q", "ab")],
        "show_progress_bar": False,
    }


def test_the_configured_model_reaches_the_cross_encoder_and_the_stage_cuts_passages(
    fake_extra: type[FakeCrossEncoder],
) -> None:
    chosen = RerankerSettings(
        enabled=True, kind=RerankerKind.SENTENCE_TRANSFORMERS, model="acme/tiny"
    )
    reranker = make_reranker(chosen)
    assert reranker is not None
    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2)]
    texts = {1: "x" * 600, 2: "y"}
    rerank("q", cands, lambda c: texts[c.chunk_id], reranker, pool=2, max_chars=512)
    pairs = reranker.inner._load().calls[0]["pairs"]  # type: ignore[attr-defined]
    assert [len(p) for _, p in pairs] == [512, 1]  # the stage sent 512 characters of 600
    assert fake_extra.loaded == [("acme/tiny", True)]


def test_a_cross_encoder_model_not_available_offline_says_what_to_do(
    fake_extra: type[FakeCrossEncoder],
) -> None:
    with pytest.raises(ConfigError) as caught:
        CrossEncoderReranker("not/downloaded").score("q", ["p"])
    assert str(caught.value) == (
        "reranker model 'not/downloaded' is not available offline (no such file) — download it "
        "once with network access, point reranker.model at a local folder, or set "
        "reranker.enabled: false"
    )


class ShortReranker(LengthReranker):
    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return super().score(query, passages)[:-1]


def test_a_reranker_that_scores_fewer_passages_than_given_is_an_error() -> None:
    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2, 3)]
    with pytest.raises(ValueError):
        rerank("q", cands, lambda c: TEXTS[c.chunk_id], ShortReranker(), pool=3, max_chars=100)


def test_a_failing_reranker_keeps_the_order_and_says_why() -> None:
    class Down:
        name = "down"

        def score(self, query: str, passages: Sequence[str]) -> list[float]:
            raise RerankError("reranker down failed (connection refused)")

    cands = [Candidate(i, f"{i}.md", 1.0 / i) for i in (1, 2, 3)]
    kept, why = rerank_or_keep("q", cands, lambda c: TEXTS[c.chunk_id], Down(), 3, 100)
    assert kept == cands
    assert why == (
        "reranker down failed (connection refused) — results are in their unreranked order"
    )
    ranked, why = rerank_or_keep("q", cands, lambda c: TEXTS[c.chunk_id], LengthReranker(), 3, 9)
    assert why is None and [c.chunk_id for c in ranked] == [2, 3, 1]


def test_a_short_text_is_its_own_window() -> None:
    assert best_window("lava", "Lava flows.", 100) == "Lava flows."


def test_the_window_holding_the_query_words_wins_over_the_opening() -> None:
    text = "Intro about bread. " * 20 + "Magma rises and lava erupts from the vent. " + "End. " * 30
    window = best_window("where does lava erupt from magma", text, 120)
    assert len(window) <= 120 and "lava erupts" in window and "Magma rises" in window


def test_on_a_tie_the_earliest_window_is_kept() -> None:
    text = "alpha beta gamma " * 50
    assert best_window("beta", text, 60) == text[:60]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.text(max_size=800), st.integers(min_value=1, max_value=300))
def test_a_window_is_a_slice_of_the_text_no_longer_than_asked(
    query: str, text: str, max_chars: int
) -> None:
    window = best_window(query, text, max_chars)
    assert len(window) <= max(max_chars, 0) and window in text
    if len(text) <= max_chars:
        assert window == text
    elif text:
        assert len(window) > 0
