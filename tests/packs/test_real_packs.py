"""The real packs in ../shared load cleanly with the expected shape."""

from __future__ import annotations

import functools

import pytest

from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.models import Pack
from ep_mcp.packs.validate import no_frontmatter_files, resolve_reference, validate_pack

from .conftest import shared


@functools.cache
def _pack(name: str) -> Pack:
    return load_pack(shared("packs", name))


@pytest.mark.parametrize(
    ("name", "pack_type", "min_docs"),
    [
        ("blender-3d", "product", 60),
        ("solar-diy", "composite", 35),
        ("home-assistant", "composite", 45),
    ],
)
def test_real_expertpacks_load_without_warnings(name: str, pack_type: str, min_docs: int) -> None:
    pack = _pack(name)
    assert pack.kind == "expertpack"
    assert pack.slug == name
    assert pack.pack_type == pack_type
    assert len(pack.documents) >= min_docs
    assert pack.warnings == ()
    assert all(doc.title for doc in pack.documents)


def test_index_files_are_navigation_and_atoms_are_not() -> None:
    pack = _pack("solar-diy")
    index = pack.document("product/concepts/_index.md")
    atom = pack.document("product/concepts/inverter-string.md")
    assert index is not None and index.navigation
    assert atom is not None and not atom.navigation
    assert sum(d.navigation for d in pack.documents) == 8


def test_composite_sub_pack_context_tiers_are_mapped_to_pack_paths() -> None:
    pack = _pack("home-assistant")
    always = {d.path for d in pack.documents if d.always}
    assert always == {"product/overview.md", "product/glossary.md", "process/overview.md"}


def test_solar_diy_sidecars_are_valid_and_inside_their_files() -> None:
    pack = _pack("solar-diy")
    with_sidecars = [d for d in pack.documents if d.sidecar is not None]
    assert len(with_sidecars) == 9
    for doc in with_sidecars:
        assert doc.sidecar is not None
        lines = len(doc.text.splitlines())
        orders = [c.order for c in doc.sidecar.chunks]
        assert orders == sorted(orders)
        for chunk in doc.sidecar.chunks:
            first, last = chunk.line_range
            assert doc.body_line <= first <= last <= lines
        assert doc.sidecar.content_hash == doc.content_hash


def test_sidecar_line_ranges_count_raw_file_lines() -> None:
    doc = _pack("solar-diy").document("process/gotchas/common-mistakes.md")
    assert doc is not None and doc.sidecar is not None
    opening, design = doc.sidecar.chunks[:2]
    assert opening.line_range == (doc.body_line, 20) == (14, 20)
    assert design.line_range == (21, 22)
    assert doc.text.splitlines()[20] == "## Design Mistakes"
    assert design.section == "Design Mistakes"
    assert opening.context_prefix.startswith("From Common Mistakes")


def test_frontmatter_fields_are_read() -> None:
    doc = _pack("solar-diy").document("process/gotchas/common-mistakes.md")
    assert doc is not None
    assert doc.id == "solar-diy/process/gotchas/common-mistakes"
    assert doc.type == "gotcha"
    assert doc.verified_at == "2026-04-21"
    assert "permitting" in doc.tags
    assert doc.content_hash.startswith("sha256:2aee66")


def test_requires_resolve_within_the_sub_pack() -> None:
    pack = _pack("solar-diy")
    path = "product/concepts/system-design-string-sizing.md"
    doc = pack.document(path)
    assert doc is not None and doc.requires == ("inverter-string.md",)
    assert (
        resolve_reference(pack, path, "inverter-string.md") == "product/concepts/inverter-string.md"
    )


def test_wikilinks_and_related_become_edges() -> None:
    pack = _pack("home-assistant")
    kinds = {e.kind for e in pack.edges}
    assert "wikilink" in kinds
    paths = {d.path for d in pack.documents}
    assert all(e.source in paths and e.target in paths for e in pack.edges)
    assert any(e.kind == "related" for e in _pack("solar-diy").edges)


@pytest.mark.parametrize(
    ("name", "findings", "skipped"),
    [
        ("blender-3d", [], ["TOOLS.md"]),  # TOOLS.md is a standard file with no frontmatter
        ("solar-diy", [], ["TOOLS.md"]),
        (  # a real finding: its first frontmatter block has neither, a second block follows
            "home-assistant",
            ["process/patterns/notification-patterns.md:1: frontmatter has no title: and type:"
             " — add it"],
            [],
        ),
    ],
)  # fmt: skip
def test_real_packs_validate_with_only_genuine_findings(
    name: str, findings: list[str], skipped: list[str]
) -> None:
    pack = _pack(name)
    assert [str(p) for p in validate_pack(pack)] == findings
    assert no_frontmatter_files(pack) == skipped


@pytest.mark.parametrize("name", ["anthropics-skills", "obra-superpowers"])
def test_skill_repos_load_one_item_per_skill_file(name: str) -> None:
    root = shared("skills", name)
    pack = load_pack(root)
    skill_files = sorted(p.relative_to(root).as_posix() for p in root.rglob("SKILL.md"))
    assert pack.kind == "skills"
    assert sorted(item.skill_file for item in pack.skills) == skill_files
    assert len({item.name for item in pack.skills}) == len(pack.skills)
    assert pack.warnings == ()
    for item in pack.skills:
        assert item.description
        assert item.files[0] == item.skill_file
        for path in item.files:
            doc = pack.document(path)
            assert doc is not None and doc.skill == item.name
            assert doc.type == ("skill" if path == item.skill_file else "skill-file")


def test_skill_supporting_files_belong_to_their_skill() -> None:
    pack = load_pack(shared("skills", "anthropics-skills"))
    creator = next(item for item in pack.skills if item.name == "skill-creator")
    assert "skills/skill-creator/agents/grader.md" in creator.files
    skill = pack.document("skills/skill-creator/SKILL.md")
    assert skill is not None and skill.title == "skill-creator"
