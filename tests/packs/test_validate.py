"""validate_pack findings and resolve_reference's resolution order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.models import Pack
from ep_mcp.packs.references import References, extract_wikilinks
from ep_mcp.packs.validate import no_frontmatter_files, resolve_reference, validate_pack

from .conftest import Writer


def _refs_pack(write: Writer) -> Path:
    write("manifest.yaml", "slug: demo\nname: Demo\ntype: product\n")
    write("a/x.md", "---\ntitle: AX\ntype: c\nid: key/x\n---\n# AX\n")
    write("a/y.md", "---\ntitle: AY\ntype: c\n---\n# AY\n")
    write("b/x.md", "---\ntitle: BX\ntype: c\n---\n# BX\n")
    write("b/unique.md", "---\ntitle: U\ntype: c\n---\n# U\n")
    return write("top.md", "---\ntitle: Top\ntype: c\n---\n# Top\n")


@pytest.mark.parametrize(
    ("from_path", "ref", "expected"),
    [
        ("top.md", "key/x", "a/x.md"),  # frontmatter id first
        ("b/unique.md", "a/x.md", "a/x.md"),  # exact pack path
        ("b/unique.md", "a/y", "a/y.md"),  # exact path without .md
        ("top.md", "demo/b/x", "b/x.md"),  # id-style "<slug>/<path>"
        ("b/unique.md", "x.md", "b/x.md"),  # same directory
        ("a/y.md", "x", "a/x.md"),  # same directory without .md
        ("a/y.md", "../b/unique.md", "b/unique.md"),  # relative path
        ("top.md", "unique", "b/unique.md"),  # unique basename
        ("top.md", "x.md", None),  # ambiguous basename
        ("top.md", "missing.md", None),
        ("top.md", "  a/y.md#section ", "a/y.md"),
        ("top.md", "", None),
    ],
)
def test_references_resolve_in_order(
    write: Writer, from_path: str, ref: str, expected: str | None
) -> None:
    pack = load_pack(_refs_pack(write))
    assert resolve_reference(pack, from_path, ref) == expected


def test_the_reference_index_is_cached_per_pack(write: Writer) -> None:
    root = _refs_pack(write)
    pack = load_pack(root)
    assert References.of(pack) is References.of(pack)
    assert References.of(load_pack(root)) is not References.of(pack)


@given(st.text(max_size=40))
def test_resolving_any_string_never_raises(ref: str) -> None:
    pack = Pack(Path("/p"), "p", "p", "markdown", "markdown", {}, ())
    assert resolve_reference(pack, "a/b.md", ref) is None


def test_wikilinks_outside_code_are_extracted_with_lines() -> None:
    text = "See [[a.md|A]] and [[b#sec]].\n```\n[[in-fence]]\n```\n`[[in-code]]` [[c]]\n"
    assert extract_wikilinks(text) == [(1, "a.md"), (1, "b"), (5, "c")]


def test_validate_reports_every_problem_with_file_and_line(write: Writer) -> None:
    write("manifest.yaml", "slug: demo\nname: Demo\ntype: product\n")
    write(
        "a.md",
        "---\ntitle: A\ntype: c\nid: dup\nrequires:\n  - b.md\n  - ghost.md\n"
        "content_hash: sha256:0000\n---\n# A\n\nSee [[nowhere]].\n",
    )
    write("b.md", "---\ntitle: B\nid: dup\n---\n# B\n")
    root = write("c.md", "# C\n")
    found = [str(w) for w in validate_pack(load_pack(root))]
    assert found == [
        "a.md:7: requires: 'ghost.md' does not match any file or id in the pack",
        "a.md:8: content_hash sha256:0000… does not match the body "
        f"({found[1].split('(')[1].split('…')[0]}…) — update it after editing the file",
        "a.md:12: wikilink [[nowhere]] does not match any file",
        "b.md:1: frontmatter has no type: — add it",
        "b.md:3: id 'dup' is also used by a.md — ids must be unique",
        "c.md:1: no frontmatter — add title: and type:",
    ]


def test_validate_includes_load_warnings_first(write: Writer) -> None:
    write("a.md", "# A\n")
    root = write("bad.md", b"\xff")
    found = validate_pack(load_pack(root))
    assert [w.path for w in found] == ["bad.md"]


def test_standard_expertpack_files_need_no_frontmatter_and_are_named_as_skipped(
    write: Writer,
) -> None:
    write("manifest.yaml", "slug: demo\nname: Demo\ntype: product\n")
    write("TOOLS.md", "# Pack Tools & Capabilities\n\nIntegrator contract.\n")
    write("concepts/_index.md", "# Concepts\n\n- [A](a.md)\n")
    write("concepts/a.md", "---\ntitle: A\ntype: concept\n---\n# A\n")
    root = write("concepts/TOOLS.md", "# Not at the root: an ordinary file\n")
    pack = load_pack(root)
    assert [str(w) for w in validate_pack(pack)] == [
        "concepts/TOOLS.md:1: no frontmatter — add title: and type:"
    ]
    assert no_frontmatter_files(pack) == ["TOOLS.md", "concepts/_index.md"]


def test_an_unclosed_frontmatter_block_is_reported_as_that_not_as_no_frontmatter(
    write: Writer,
) -> None:
    write("manifest.yaml", "slug: demo\nname: Demo\ntype: product\n")
    root = write("open.md", "---\ntitle: Open\ntype: concept\n\n# Open\n\nThe body.\n")
    found = [str(w) for w in validate_pack(load_pack(root))]
    assert found == [
        "open.md:1: frontmatter opened at line 1 is never closed (end it with a `---` line)"
        " — indexed without frontmatter"
    ]
