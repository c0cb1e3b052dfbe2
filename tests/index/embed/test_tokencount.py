"""The piece-by-piece token count equals the tokenizer's own count, character for character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ep_mcp.index.embed.local import _counting_tokenizer
from ep_mcp.index.embed.tokencount import WordPieceCounter


def _exact(texts: list[str]) -> list[int]:
    encoded = _counting_tokenizer().encode_batch(texts, add_special_tokens=False)
    return [len(e.ids) for e in encoded]


def test_every_character_of_the_basic_plane_cuts_or_joins_as_the_tokenizer_does() -> None:
    # a character taken for a boundary where the tokenizer deletes it (and joins "a<c>a<c>a"
    # into one word, "aaa": one token) counts three words instead
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"a{c}a{c}a" for c in chars]
    got = WordPieceCounter(_counting_tokenizer()).count_batch(texts)
    wrong = [hex(ord(c)) for c, a, b in zip(chars, got, _exact(texts), strict=True) if a != b]
    assert wrong == []


def test_special_tokens_in_the_text_long_words_and_accents_are_counted_like_the_tokenizer() -> None:
    texts = [
        "see [CLS] and [MASK]x, [SEP][PAD] but [cls] and [ UNK ]",
        "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "é" * 101,
        "Café naïve ΣΑΣ İstanbul straße 東京タワー ﬁ ① x²\u200bz \x00\ufffd\x1cq",
        "line\r\nbreaks\rand\x0bvertical\x0ctabs\x85next\u2028sep\u2029par",
        "",
        "   \n\t",
    ]
    assert WordPieceCounter(_counting_tokenizer()).count_batch(texts) == _exact(texts)


def test_a_full_memory_starts_afresh_and_counts_stay_exact() -> None:
    counter = WordPieceCounter(_counting_tokenizer(), max_cached=200)
    texts = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(20)]
    assert [counter.count(t) for t in texts] == _exact(texts)
    assert len(counter._known) < 200 + 30 + 100


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(min_size=0, max_size=40),
            st.text(alphabet="ab [CLS]#.-_é東\t\n\x1c\u00a0", max_size=40),
            st.sampled_from(["unaffable", "tokenization", "[UNK]", "straße", "x" * 120]),
        ),
        max_size=12,
    ).map("".join)
)
def test_any_text_is_counted_like_the_tokenizer(text: str) -> None:
    assert WordPieceCounter(_counting_tokenizer()).count(text) == _exact([text])[0]
