from collections.abc import Sequence

import pytest

from ep_mcp.config import RerankerSettings
from ep_mcp.errors import ConfigError
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.rerank import CrossEncoderReranker, Reranker, make_reranker, rerank


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
    out = rerank("q", cands, lambda c: TEXTS[c.chunk_id], LengthReranker(), pool=3)
    assert [c.chunk_id for c in out] == [2, 3, 1, 4]  # 4 is outside the pool: stays after
    assert out[0].notes[-1].startswith("rerank fake/length")


def test_rerank_is_off_unless_enabled() -> None:
    assert make_reranker(RerankerSettings()) is None
    assert isinstance(make_reranker(RerankerSettings(enabled=True)), CrossEncoderReranker)


def test_a_missing_cross_encoder_says_what_to_do() -> None:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"ep-mcp\[rerank\]"):
            CrossEncoderReranker("some/model").score("q", ["p"])
    else:  # pragma: no cover - only when the extra is installed
        pytest.skip("sentence-transformers is installed")
