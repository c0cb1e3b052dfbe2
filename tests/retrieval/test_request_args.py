"""`SearchRequest.from_args`: a search's arguments checked once, whichever door they came by."""

from __future__ import annotations

import pytest

from ep_mcp.errors import QueryError
from ep_mcp.retrieval.types import BLANK_QUERY, MAX_RESULTS, SearchRequest, out_of_range


def _error(args: dict[str, object]) -> str:
    with pytest.raises(QueryError) as caught:
        SearchRequest.from_args(args)
    return str(caught.value)


def test_a_query_alone_takes_every_default() -> None:
    assert SearchRequest.from_args({"query": "kiln"}) == SearchRequest("kiln")


def test_every_argument_is_carried_into_the_request() -> None:
    args: dict[str, object] = {
        "query": "glaze kiln",
        "max_results": 3.0,
        "type": "howto",
        "tags": ["ceramics", 7],
        "reconstruct": 1,
        "include_low_confidence": "yes",
        "rerank": 0,
    }
    got = SearchRequest.from_args(args, vector=(0.5, 0.5), explain=True)
    assert got == SearchRequest(
        query="glaze kiln",
        k=3,
        type="howto",
        tags=("ceramics", "7"),
        reconstruct=True,
        vector=(0.5, 0.5),
        explain=True,
        include_low_confidence=True,
        rerank=False,
    )
    assert type(got.k) is int
    assert SearchRequest.from_args({"query": "q", "tags": ("a",)}).tags == ("a",)
    empty = SearchRequest.from_args({"query": "q", "type": "", "tags": None})
    assert empty.type is None and empty.tags == ()


@pytest.mark.parametrize("k", [1, MAX_RESULTS])
def test_the_ends_of_the_range_are_allowed(k: int) -> None:
    assert SearchRequest.from_args({"query": "q", "max_results": k}).k == k


def test_a_bad_argument_is_named_in_one_wording() -> None:
    assert _error({}) == "`query` must be a string"
    assert _error({"query": 3}) == "`query` must be a string"
    assert _error({"query": " \n\t"}) == BLANK_QUERY
    assert _error({"query": "q", "max_results": True}) == "`max_results` must be an integer"
    assert _error({"query": "q", "max_results": "5"}) == "`max_results` must be an integer"
    for k in (0, MAX_RESULTS + 1, 0.5):
        assert _error({"query": "q", "max_results": k}) == out_of_range(
            "max_results", 1, MAX_RESULTS, k
        )
    assert _error({"query": "q", "tags": "ceramics"}) == "`tags` must be a list of strings"


def test_a_number_out_of_range_names_its_parameter_and_a_short_value() -> None:
    assert out_of_range("n", 1, 50, 0) == "`n` must be between 1 and 50 — got 0"
    assert out_of_range("n", 1, 50, "9" * 60) == "`n` must be between 1 and 50 — got " + "9" * 40
