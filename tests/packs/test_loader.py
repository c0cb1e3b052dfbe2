"""Kind detection, the plain-markdown and skills readers, and loader errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.errors import PackError
from ep_mcp.packs.loader import detect_kind, load_pack

from .conftest import Writer


def test_a_missing_folder_is_a_pack_error_that_says_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(PackError) as info:
        load_pack(missing)
    assert str(info.value) == (
        f"pack folder '{missing}' does not exist — pass the path of a folder of markdown files"
    )


def test_a_file_instead_of_a_folder_is_a_pack_error(write: Writer) -> None:
    root = write("a.md", "# A\n")
    with pytest.raises(PackError, match="is a file"):
        load_pack(root / "a.md")


def test_an_unknown_kind_is_a_pack_error(write: Writer) -> None:
    with pytest.raises(PackError, match="unknown pack kind 'wiki'"):
        load_pack(write("a.md", "# A\n"), kind="wiki")


@pytest.mark.parametrize(
    ("files", "kind"),
    [
        ({"manifest.yaml": "slug: x\n", "a/SKILL.md": "# S\n"}, "expertpack"),
        ({"a/b/c/d/SKILL.md": "# S\n"}, "skills"),
        ({"a/b/c/d/e/SKILL.md": "# S\n"}, "markdown"),
        ({".git/x/SKILL.md": "# S\n"}, "markdown"),
        ({"notes.md": "# N\n"}, "markdown"),
    ],
)
def test_kind_is_detected(write: Writer, files: dict[str, str], kind: str) -> None:
    root = write("placeholder.txt", "")
    for rel, text in files.items():
        write(rel, text)
    assert detect_kind(root) == kind


def test_a_plain_folder_uses_headings_or_file_names_as_titles(write: Writer) -> None:
    write("notes/first.md", "intro\n\n# First Note\n")
    write("notes/untitled.md", "just text\n")
    root = write("readme.txt", "not markdown\n")
    pack = load_pack(root)
    assert (pack.kind, pack.slug, pack.name) == ("markdown", "pack", "pack")
    titles = {d.path: d.title for d in pack.documents}
    assert titles == {"notes/first.md": "First Note", "notes/untitled.md": "untitled"}


def test_a_plain_folder_still_reads_frontmatter(write: Writer) -> None:
    root = write("a.md", "---\ntitle: Given\ntags: [t]\nid: n/a\n---\n# Heading\n")
    doc = load_pack(root, kind="markdown").document("a.md")
    assert doc is not None
    assert (doc.title, doc.tags, doc.id, doc.body_line) == ("Given", ("t",), "n/a", 6)


def test_the_folder_name_is_slugified(tmp_path: Path) -> None:
    root = tmp_path / "My Notes!"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    assert load_pack(root).slug == "My-Notes"


SKILL = "---\nname: {name}\ndescription: Does {name}.\n---\n# {name} heading\n"


def test_a_skills_repo_has_one_item_per_skill_directory(write: Writer) -> None:
    write("README.md", "# Repo\n")
    write("skills/alpha/SKILL.md", SKILL.format(name="alpha"))
    write("skills/alpha/reference/api.md", "# API\n")
    write("skills/alpha/nested/SKILL.md", SKILL.format(name="inner"))
    write("skills/alpha/nested/more.md", "# More\n")
    root = write("skills/beta/SKILL.md", "# Beta Skill\n\nNo frontmatter.\n")
    pack = load_pack(root)
    assert pack.kind == "skills"
    items = {item.name: item for item in pack.skills}
    assert set(items) == {"alpha", "inner", "beta"}
    assert items["alpha"].files == ("skills/alpha/SKILL.md", "skills/alpha/reference/api.md")
    assert items["inner"].files == ("skills/alpha/nested/SKILL.md", "skills/alpha/nested/more.md")
    assert items["alpha"].description == "Does alpha."
    docs = {d.path: d for d in pack.documents}
    assert (docs["skills/alpha/SKILL.md"].type, docs["skills/alpha/SKILL.md"].title) == (
        "skill",
        "alpha",
    )
    assert docs["skills/alpha/reference/api.md"].skill == "alpha"
    assert docs["skills/alpha/reference/api.md"].type == "skill-file"
    assert docs["skills/beta/SKILL.md"].title == "Beta Skill"
    assert docs["README.md"].skill is None


def test_duplicate_skill_names_are_disambiguated_with_a_warning(write: Writer) -> None:
    write("a/SKILL.md", SKILL.format(name="same"))
    root = write("b/SKILL.md", SKILL.format(name="same"))
    pack = load_pack(root)
    assert sorted(item.name for item in pack.skills) == ["b", "same"]
    assert "also used by a/SKILL.md" in pack.warnings[0].message


def test_a_new_kind_of_pack_is_one_registration(tmp_path: Path) -> None:
    from ep_mcp.config.load import load_settings
    from ep_mcp.errors import ConfigError
    from ep_mcp.packs import loader
    from ep_mcp.packs.markdown import load_markdown

    (tmp_path / "NOTES.kind").write_text("notes\n", encoding="utf-8")
    (tmp_path / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    saved = dict(loader.READERS)
    try:
        loader.register_kind(
            loader.PackReader(
                "notes",
                lambda root: (root / "NOTES.kind").is_file(),
                lambda root, slug, cap: load_markdown(
                    root, slug=slug or "notes", max_file_bytes=cap
                ),
            ),
            before="markdown",
        )
        assert loader.detect_kind(tmp_path) == "notes"
        assert loader.load_pack(tmp_path).document("a.md") is not None
        assert list(loader.READERS)[-1] == "markdown"
        # the config accepts it with no second edit, and its message names it among the kinds
        data = {"packs": [{"path": str(tmp_path), "kind": "notes"}]}
        assert load_settings(data=data).packs[0].kind == "notes"
        with pytest.raises(ConfigError, match="must be expertpack, skills, notes or markdown"):
            load_settings(data={"packs": [{"path": str(tmp_path), "kind": "note"}]})
    finally:
        loader.READERS.clear()
        loader.READERS.update(saved)
