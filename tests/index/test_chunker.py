from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ep_mcp.index.chunker import chunk_document
from ep_mcp.packs.loader import load_pack


def words(text: str) -> int:
    return len(text.split())


def test_a_small_file_is_one_atom_without_its_frontmatter(make_pack) -> None:
    root = make_pack({"a.md": "---\ntitle: A\n---\n\n# A\n\nShort body.\n"})
    (doc,) = load_pack(root).documents
    (chunk,) = chunk_document(doc, words, max_tokens=100)
    assert chunk.text == "# A\n\nShort body.\n"
    assert chunk.line_range == (5, 7)
    raw = (root / "a.md").read_bytes()
    assert raw[chunk.byte_range[0] : chunk.byte_range[1]].decode() == chunk.text
    assert chunk.span_hash == hashlib.sha256(chunk.text.encode()).hexdigest()


def test_a_big_file_splits_at_h2_and_h3_but_never_inside_a_code_fence(make_pack) -> None:
    body = (
        "# Guide\n\nintro "
        + "word " * 50
        + "\n\n## Setup\n\n"
        + "step " * 50
        + "\n\n```\n## not a heading\n```\n\n### Ports\n\n"
        + "port " * 50
        + "\n"
    )
    root = make_pack({"g.md": body})
    (doc,) = load_pack(root).documents
    chunks = chunk_document(doc, words, max_tokens=60)
    assert [c.heading_path for c in chunks] == [
        ("Guide",),
        ("Guide", "Setup"),
        ("Guide", "Setup", "Ports"),
    ]
    assert "## not a heading" in chunks[1].text
    lines = (root / "g.md").read_text().splitlines(keepends=True)
    assert "".join(c.text for c in chunks) == "".join(lines)


def test_a_valid_sidecar_decides_the_boundaries_and_adds_a_prefix(make_pack) -> None:
    body = "# T\n\nopening words\n\n## One\n\nfirst part\n\n## Two\n\nsecond part\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    text = f"---\ntitle: T\ncontent_hash: sha256:{digest}\n---\n{body}"
    sidecar = (
        f"content_hash: sha256:{digest}\nchunks:\n"
        "- {chunk_id: t--opening, chunk_order: 0, section: null, line_range: [5, 8],"
        " context_prefix: 'From T, opening.'}\n"
        "- {chunk_id: t--one, chunk_order: 1, section: One, line_range: [9, 12],"
        " context_prefix: 'From T, section One.'}\n"
        "- {chunk_id: t--two, chunk_order: 2, section: Two, line_range: [13, 15],"
        " context_prefix: 'From T, section Two.'}\n"
    )
    root = make_pack({"t.md": text, "t.chunks.yaml": sidecar})
    (doc,) = load_pack(root).documents
    assert doc.sidecar is not None
    chunks = chunk_document(doc, words, max_tokens=1000)
    assert [c.line_range for c in chunks] == [(5, 8), (9, 12), (13, 15)]
    assert chunks[1].heading_path == ("T", "One")
    assert chunks[1].indexed_text.startswith("From T, section One.\n\n")
    assert chunks[1].text.startswith("## One")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["", "## ", "### ", "# "]), st.text("abc xyz\n", max_size=40)),
        min_size=1,
        max_size=12,
    )
)
def test_split_chunks_tile_the_body_exactly(tmp_path_factory, sections) -> None:
    root = tmp_path_factory.mktemp("p")
    text = "".join(f"{h}{t.strip() or 'x'}\n\nbody {t}\n\n" for h, t in sections)
    (root / "f.md").write_text(text, encoding="utf-8")
    (doc,) = load_pack(Path(root)).documents
    chunks = chunk_document(doc, words, max_tokens=1)
    lines = text.splitlines(keepends=True)
    assert "".join(c.text for c in chunks).strip() == "".join(lines).strip()
    for a, b in itertools.pairwise(chunks):
        assert a.line_range[1] < b.line_range[0]


def test_a_unicode_line_separator_in_the_body_does_not_shift_the_split_points(make_pack) -> None:
    body = (
        "# Guide\n\nintro\u2028more intro "
        + "word " * 50
        + "\n\n## Setup\n\n"
        + "step " * 50
        + "\n"
    )
    root = make_pack({"g.md": body})
    (doc,) = load_pack(root).documents
    chunks = chunk_document(doc, words, max_tokens=60)
    assert [c.text.splitlines()[0] for c in chunks] == ["# Guide", "## Setup"]
    assert chunks[1].heading_path == ("Guide", "Setup")
    raw = (root / "g.md").read_bytes()
    for c in chunks:
        assert raw[c.byte_range[0] : c.byte_range[1]].decode() == c.text


def test_a_file_of_many_headings_chunks_in_linear_time(make_pack) -> None:
    """150,000 heading lines (1.8 MB, under the file cap) once took minutes: every chunk
    rescanned every heading. Bounded by the CPU time of this thread, not the clock."""
    import time

    body = "".join(f"{'#' * (1 + i % 6)} h{i}\n" for i in range(150_000))
    pack = load_pack(make_pack({"many.md": body}))
    (doc,) = pack.documents
    started = time.thread_time()
    chunks = chunk_document(doc, words, max_tokens=50)
    assert time.thread_time() - started < 20.0  # linear: about a second; quadratic: hours
    assert len(chunks) > 40_000
    # the last split is at the last ###; above it the # and ## in force
    assert chunks[-1].heading_path == ("h149994", "h149995", "h149996")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" \t\n\r\u2028\x0ca#-", max_size=30), st.sampled_from([1, 2, 3]))
def test_the_one_chunk_text_is_the_body_from_its_first_content_line(text: str, body_line: int):
    from ep_mcp.index.chunker import whole_text
    from ep_mcp.packs.models import Document

    doc = Document(
        path="a.md",
        text=text,
        body_line=body_line,
        meta={},
        title="",
        type="",
        tags=(),
        id=None,
        content_hash="",
        file_hash="",
        navigation=False,
        always=False,
        on_demand=False,
        requires=(),
        related=(),
        verified_at=None,
        refresh=None,
        expires_at=None,
        sidecar=None,
    )
    lines = text.splitlines(keepends=True)
    first = body_line
    while first <= len(lines) and not lines[first - 1].strip():
        first += 1
    assert whole_text(doc) == "".join(lines[first - 1 :])
    assert doc.body == "".join(lines[body_line - 1 :])
