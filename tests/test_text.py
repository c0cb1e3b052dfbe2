"""The four word patterns keep their differences; the stemmer is crude and shared."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.text import ascii_words, identifier_words, name_words, query_words, stem, words

SAMPLE = "Don't index snake_case Café-Größe v2.0"


def test_each_word_pattern_cuts_the_same_text_its_own_way() -> None:
    assert words(SAMPLE) == ["don", "t", "index", "snake", "case", "café", "größe", "v2", "0"]
    assert query_words(SAMPLE) == ["don't", "index", "snake", "case", "café", "größe", "v2", "0"]
    assert identifier_words(SAMPLE) == [
        "don",
        "t",
        "index",
        "snake_case",
        "café",
        "größe",
        "v2",
        "0",
    ]
    assert ascii_words(SAMPLE) == [
        *["don", "t", "index", "snake", "case"],
        *["caf", "gr", "e", "v2", "0"],
    ]


def test_stem_strips_one_common_suffix_and_keeps_three_letters() -> None:
    assert [stem(w) for w in ("indexes", "indexed", "indexing", "flies", "bus")] == [
        "index",
        "index",
        "index",
        "fli",
        "bus",
    ]


@given(st.text(max_size=200))
def test_no_text_crashes_the_word_functions(text: str) -> None:
    for cut in (words, query_words, identifier_words, ascii_words):
        assert all(isinstance(w, str) and w for w in cut(text))


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("EcoFlow vs Jackery portable power station", {"ecoflow", "jackery"}),
        ("Smart Export Guarantee tariffs in the UK", {"export", "guarantee", "uk"}),
        ("rig a character in Maya\u2019s HumanIK", {"maya", "humanik"}),
        ("how do I loop an animation", set()),
        ("Houdini pyro setup", set()),  # a capital first word is only sentence case
    ],
)
def test_name_words_are_the_capitalised_words_of_a_query(query: str, names: set[str]) -> None:
    assert name_words(query) == names
