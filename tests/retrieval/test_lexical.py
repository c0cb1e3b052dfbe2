"""Query terms: what of a user's query reaches the lexical index."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.lexical import MAX_QUERY_CHARS, query_terms


def test_terms_are_lower_cased_unique_content_words_in_query_order() -> None:
    assert query_terms("How do I size the Battery bank, the battery?") == [
        "size",
        "battery",
        "bank",
    ]


def test_a_query_of_stop_words_only_keeps_them() -> None:
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]
    assert query_terms("what is it", keep_stopwords=True) == ["what", "is", "it"]
    assert query_terms("the battery", keep_stopwords=True) == ["the", "battery"]


def test_an_apostrophe_ends_a_term() -> None:
    assert query_terms("the inverter's fuse won\u2019t blow") == ["inverter", "fuse", "won", "blow"]


def test_fts_syntax_never_passes_through() -> None:
    assert query_terms('"solar" AND panel* NEAR(tilt) -yield') == [
        "solar",
        "panel",
        "near",
        "tilt",
        "yield",
    ]  # "and" is a stop word
    assert query_terms("  ??  ") == []


def test_at_most_32_terms_and_2000_characters_are_read() -> None:
    many = " ".join(f"term{i}" for i in range(40))
    assert query_terms(many) == [f"term{i}" for i in range(32)]
    long = "a" * (MAX_QUERY_CHARS - 1) + " zebra"
    assert query_terms(long) == ["a" * (MAX_QUERY_CHARS - 1)]  # zebra is past the cut
    assert query_terms("x" * (MAX_QUERY_CHARS - 6) + " zebra") == ["x" * 1994, "zebra"]


@given(st.text(max_size=300))
def test_no_query_crashes_and_every_term_is_a_plain_lower_case_word(query: str) -> None:
    for term in query_terms(query):
        assert term and term == term.lower()
        assert not set(term) & set("\"'*()-: ")
