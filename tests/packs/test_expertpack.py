"""ExpertPack specifics on small fixture packs written to tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.packs.frontmatter import body_hash
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.models import Edge

from .conftest import Writer

MANIFEST = """\
slug: demo
name: Demo Pack
type: product
description: A demo.
freshness:
  refresh_cycle: P90D
context:
  always: [overview.md]
  searchable: [concepts/]
  on_demand: [concepts/drafts/, sources/]
"""


def _doc(title: str, extra: str = "", body: str = "") -> str:
    return f"---\ntitle: {title}\ntype: concept\n{extra}---\n\n# {title}\n\n{body or 'Text.'}\n"


def _demo(write: Writer) -> Path:
    write("manifest.yaml", MANIFEST)
    write("overview.md", _doc("Overview", body="See [[concepts/a.md|A]] and [[b]]."))
    write("concepts/a.md", _doc("A", "id: demo/concepts/a\nrelated:\n  - b.md\n"))
    write("concepts/b.md", _doc("B", "requires: [a.md]\ntags: x, y ,\n"))
    write("concepts/_index.md", _doc("Concepts"))
    write("concepts/drafts/d.md", _doc("Draft"))
    write("concepts/nav.md", _doc("Nav", "retrieval_strategy: navigation\n"))
    write("concepts/scope.md", _doc("Scope", "concept_scope: navigation\n"))
    write("sources/source-coverage.md", _doc("Coverage"))
    extra = "volatile:\n  refresh: P30D\n  expires_at: 2026-12-31\nverified_at: 2026-04-21\n"
    return write("concepts/prices.md", _doc("Prices", extra))


def test_manifest_fields_and_freshness_are_read(write: Writer) -> None:
    pack = load_pack(_demo(write))
    assert (pack.slug, pack.name, pack.pack_type) == ("demo", "Demo Pack", "product")
    assert pack.description == "A demo."
    assert pack.refresh_cycle == "P90D"
    assert pack.warnings == ()


def test_context_tiers_use_the_most_specific_entry(write: Writer) -> None:
    pack = load_pack(_demo(write))
    tiers = {d.path: (d.always, d.on_demand) for d in pack.documents}
    assert tiers["overview.md"] == (True, False)
    assert tiers["concepts/a.md"] == (False, False)
    assert tiers["concepts/drafts/d.md"] == (False, True)


def test_navigation_files_are_flagged(write: Writer) -> None:
    pack = load_pack(_demo(write))
    navigation = {d.path for d in pack.documents if d.navigation}
    assert navigation == {
        "concepts/_index.md",
        "concepts/drafts/d.md",
        "concepts/nav.md",
        "concepts/scope.md",
        "sources/source-coverage.md",
    }


def test_frontmatter_fields_are_normalised(write: Writer) -> None:
    pack = load_pack(_demo(write))
    b, prices = pack.document("concepts/b.md"), pack.document("concepts/prices.md")
    assert b is not None and prices is not None
    assert b.tags == ("x", "y")
    assert b.requires == ("a.md",)
    assert b.content_hash == body_hash(b.body)
    assert (prices.refresh, prices.expires_at, prices.verified_at) == (
        "P30D",
        "2026-12-31",
        "2026-04-21",
    )


def test_wikilinks_and_related_give_edges(write: Writer) -> None:
    pack = load_pack(_demo(write))
    assert Edge("overview.md", "concepts/a.md", "wikilink") in pack.edges
    assert Edge("overview.md", "concepts/b.md", "wikilink") in pack.edges
    assert Edge("concepts/a.md", "concepts/b.md", "related") in pack.edges


def test_graph_yaml_edges_map_node_ids_to_files(write: Writer) -> None:
    root = _demo(write)
    write(
        "_graph.yaml",
        "nodes:\n"
        "  - {id: a, title: A, type: concept, file: concepts/a.md}\n"
        "  - {id: b, title: B, type: concept, file: concepts/b.md}\n"
        "edges:\n"
        "  - {source: a, target: b, kind: prerequisite}\n"
        "  - {source: a, target: ghost, kind: related}\n",
    )
    pack = load_pack(root)
    assert Edge("concepts/a.md", "concepts/b.md", "graph:prerequisite") in pack.edges
    assert [str(w) for w in pack.warnings] == [
        "_graph.yaml: edge #1: unknown target node 'ghost' — skipped"
    ]


def test_slug_prefers_the_configured_one_then_the_manifest_then_the_folder(
    write: Writer,
) -> None:
    root = _demo(write)
    assert load_pack(root, slug="custom").slug == "custom"
    (root / "manifest.yaml").write_text("name: X\ntype: product\n", encoding="utf-8")
    pack = load_pack(root)
    assert pack.slug == "pack"
    assert "missing `slug`" in pack.warnings[0].message


def test_a_broken_manifest_warns_and_falls_back(write: Writer) -> None:
    root = write("manifest.yaml", "slug: [unclosed\n")
    write("a.md", "# A\n")
    pack = load_pack(root)
    assert pack.kind == "expertpack"
    assert (pack.slug, pack.name, pack.pack_type) == ("pack", "pack", "expertpack")
    messages = [str(w) for w in pack.warnings]
    assert messages[0].startswith("manifest.yaml:2: invalid YAML")
    assert any("missing `type`" in m for m in messages)
    assert [d.path for d in pack.documents] == ["a.md"]


@pytest.mark.parametrize(
    "extra", ["context: {always: 5}\n", "context: {on_demand: true}\n", "index_files: 3\n"]
)
def test_a_manifest_list_given_as_a_number_is_ignored_and_the_pack_still_loads(
    write: Writer, extra: str
) -> None:
    root = write("manifest.yaml", "slug: s\nname: S\ntype: product\n" + extra)
    write("a.md", "# A\n")
    pack = load_pack(root)
    assert [d.path for d in pack.documents] == ["a.md"]
    assert not pack.documents[0].navigation


def test_an_invalid_pack_type_is_a_warning(write: Writer) -> None:
    root = write("manifest.yaml", "slug: s\nname: S\ntype: gadget\n")
    pack = load_pack(root)
    assert pack.pack_type == "expertpack"
    assert "invalid type 'gadget'" in pack.warnings[0].message


def test_composite_sub_pack_entries_are_relative_to_the_sub_pack(write: Writer) -> None:
    write(
        "manifest.yaml",
        "slug: c\nname: C\ntype: composite\npacks:\n  - path: sub\n  - path: gone\n",
    )
    write(
        "sub/manifest.yaml",
        "slug: s\nname: S\ntype: process\ncontext:\n  always: [intro.md]\n"
        "  on_demand: [old/]\nindex_files: toc.md\n",
    )
    write("sub/intro.md", _doc("Intro"))
    write("sub/old/x.md", _doc("Old"))
    root = write("sub/toc.md", _doc("Toc"))
    pack = load_pack(root)
    flags = {d.path: (d.always, d.on_demand, d.navigation) for d in pack.documents}
    assert flags == {
        "sub/intro.md": (True, False, False),
        "sub/old/x.md": (False, True, True),
        "sub/toc.md": (False, False, True),
    }
    assert [str(w) for w in pack.warnings] == [
        "manifest.yaml: packs[1]: sub-pack folder 'gone' not found — skipped"
    ]


def _sidecar(content_hash: str, first: int, last: int) -> str:
    return (
        f"content_hash: {content_hash}\nchunks:\n"
        f"  - chunk_id: s--opening\n    chunk_order: 0\n    section: null\n"
        f"    line_range: [{first}, {last}]\n    context_prefix: From S.\n"
    )


def test_a_fresh_sidecar_is_attached(write: Writer) -> None:
    root = write("manifest.yaml", MANIFEST)
    text = _doc("S")
    write("concepts/s.md", text)
    write("concepts/s.chunks.yaml", _sidecar(body_hash(text.split("---\n", 2)[2]), 5, 8))
    doc = load_pack(root).document("concepts/s.md")
    assert doc is not None and doc.sidecar is not None
    assert doc.sidecar.path == "concepts/s.chunks.yaml"
    assert doc.sidecar.chunks[0].line_range == (5, 8)
    assert len(doc.sidecar.file_hash) == 64


def test_a_stale_sidecar_is_ignored_with_a_warning(write: Writer) -> None:
    root = write("manifest.yaml", MANIFEST)
    write("concepts/s.md", _doc("S"))
    write("concepts/s.chunks.yaml", _sidecar("sha256:" + "0" * 64, 5, 8))
    pack = load_pack(root)
    doc = pack.document("concepts/s.md")
    assert doc is not None and doc.sidecar is None
    assert "stale sidecar" in pack.warnings[0].message
    assert "regenerate" in pack.warnings[0].message


def test_a_sidecar_with_lines_outside_the_file_is_ignored(write: Writer) -> None:
    root = write("manifest.yaml", MANIFEST)
    text = _doc("S")
    write("concepts/s.md", text)
    write("concepts/s.chunks.yaml", _sidecar(body_hash(text.split("---\n", 2)[2]), 5, 99))
    pack = load_pack(root)
    doc = pack.document("concepts/s.md")
    assert doc is not None and doc.sidecar is None
    assert "outside the file" in pack.warnings[0].message
