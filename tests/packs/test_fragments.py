"""Anchors and fragment ids: one spelling, GitHub-style; the old ep_read spelling still read."""

from __future__ import annotations

import hashlib

import pytest

from ep_mcp.packs.fragments import anchor, anchors, fragment_id, holds_span, split_fragment_id


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("v2.0 API", "v20-api"),
        ("Sizing: the Basics!", "sizing-the-basics"),
        ("Café crème", "cafe-creme"),
        ("日本語の見出し", "日本語の見出し"),
        ("!!!", "top"),
        (None, "top"),
    ],
)
def test_anchor_drops_punctuation_and_joins_words_with_hyphens(
    title: str | None, expected: str
) -> None:
    assert anchor(title) == expected


def test_anchors_also_name_the_spelling_ep_read_wrote_before() -> None:
    assert anchors("v2.0 API") == ("v20-api", "v2-0-api")


def test_fragment_id_splits_back_into_its_parts() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    fid = fragment_id("pack/notes", "v2.0 API", digest)
    assert fid == f"pack/notes#v20-api:{digest[:12]}"
    assert split_fragment_id(fid) == ("pack/notes", "v20-api", digest[:12])
    assert split_fragment_id("notes.md#setup") == ("notes.md", "setup", None)
    assert split_fragment_id("notes.md") is None


def test_holds_span_finds_a_run_of_whole_lines_by_its_digest() -> None:
    lines = ["a\n", "b\n", "c\n"]
    assert holds_span(lines, hashlib.sha256(b"b\nc\n").hexdigest()[:12])
    assert not holds_span(lines, hashlib.sha256(b"b\nc").hexdigest()[:12])
