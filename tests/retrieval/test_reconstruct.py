import hashlib

from ep_mcp.retrieval.reconstruct import excerpt, provenance, section_slug, span_changed

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
