import hashlib

import pytest

from ep_mcp.retrieval.reconstruct import (
    excerpt,
    provenance,
    readable,
    section_slug,
    span_changed,
)

RAW = b"# Title\n\n## Wiring the Inverter\n\nUse 10 AWG.\n"


def test_fragment_id_is_id_section_slug_and_short_hash() -> None:
    text = "## Wiring the Inverter\n\nUse 10 AWG.\n"
    span = hashlib.sha256(text.encode()).hexdigest()
    p = provenance(
        ident="solar/wiring",
        section=None,
        heading_path=("Title", "Wiring the Inverter"),
        text=text,
        span_hash=span,
        line_range=(3, 5),
        byte_range=(9, len(RAW)),
    )
    assert p.fragment_id == f"solar/wiring#wiring-the-inverter:{span[:12]}"
    assert p.content_hash == f"sha256:{span}"
    assert RAW[p.byte_offset[0] : p.byte_offset[1]].decode() == p.original_markdown == text


def test_section_slug_prefers_the_sidecar_section_and_falls_back_to_top() -> None:
    assert section_slug("Sizing: the Basics!", ("x",)) == "sizing-the-basics"
    assert section_slug(None, ()) == "top"


def test_excerpt_is_one_line_cut_at_a_word() -> None:
    assert excerpt("a\n b  c") == "a b c"
    long = "word " * 100
    cut = excerpt(long, 20)
    assert cut.endswith("…") and len(cut) <= 21


def test_stale_when_the_live_span_no_longer_matches() -> None:
    span = hashlib.sha256(RAW[9:]).hexdigest()
    assert not span_changed(RAW, (9, len(RAW)), span)
    assert span_changed(RAW.replace(b"10", b"12"), (9, len(RAW)), span)
    assert span_changed(None, (9, len(RAW)), span)


def test_a_provenance_without_a_stored_span_hash_hashes_the_text() -> None:
    text = "Use 10 AWG.\n"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    p = provenance(
        ident="wiring.md",
        section="Gauge",
        heading_path=("Title", "Wiring"),
        text=text,
        span_hash="",
        line_range=(5, 5),
        byte_range=(30, 42),
    )
    assert p.to_dict() == {
        "fragment_id": f"wiring.md#gauge:{digest[:12]}",  # the sidecar section wins
        "line_range": [5, 5],
        "byte_offset": [30, 42],
        "original_markdown": text,
        "span_content_hash": f"sha256:{digest}",
        "excerpt": "Use 10 AWG.",
    }


def test_the_section_slug_is_the_last_heading_without_a_sidecar_section() -> None:
    assert section_slug(None, ("Battery", "Sizing the Bank")) == "sizing-the-bank"


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("<!-- generated -->\nThe prose.", "The prose."),
        ("Before <!-- a\nlong comment --> after.", "Before  after."),
        ("The prose. <!-- never closed\nmore", "The prose. "),
        ("---\ntitle: X\nid: y\n---\nThe prose.", "The prose."),
        ("  ---\ntitle: X\n---  \nThe prose.", "The prose."),
        ("[context: Battery > Sizing]\n\nThe prose.", "The prose."),
        ("tags: a, b\nstatus: draft\n-----\nThe prose.", "The prose."),
        ("The prose.\ntags: a, b", "The prose.\ntags: a, b"),  # residue only at the start
        ("- item: one\nThe prose.", "- item: one\nThe prose."),  # a list item is prose
    ],
)
def test_readable_skips_comments_frontmatter_and_leading_residue(text: str, first: str) -> None:
    assert readable(text) == first


def test_a_chunk_that_is_all_residue_reads_as_itself() -> None:
    assert readable("  status: draft  \n") == "status: draft"
    assert readable("---\ntitle: X\n---\n") == "---\ntitle: X\n---"  # kept, not emptied


def test_the_excerpt_is_240_characters_at_most_by_default() -> None:
    exact = "x" * 240
    assert excerpt(exact) == exact
    words = "word " * 60  # 300 characters
    cut = excerpt(words)
    assert cut == ("word " * 48).rstrip() + "…"  # 239 characters of words, then the ellipsis


def test_the_excerpt_skips_what_readable_skips() -> None:
    assert excerpt("<!-- c -->\n[context: X]\n\nThe  real\nprose.") == "The real prose."


def test_a_span_is_compared_at_its_own_bytes() -> None:
    span = hashlib.sha256(RAW[9:20]).hexdigest()
    assert not span_changed(RAW + b"appended", (9, 20), span)
    assert span_changed(b"x" + RAW, (9, 20), span)
