"""What the engine knows of a pack: links, requires:, tiers and skills, resolved once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval.view import pack_view

MakePack = Callable[[dict[str, str]], Path]

FILES = {
    "manifest.yaml": "slug: solar\nname: Solar\ntype: product\nfreshness:\n  refresh_cycle: P90D\n"
    "context:\n  always: [concepts/safety.md]\n",
    "_index.md": "# Index\n\nEvery page: [[battery]], [[wiring]].\n",
    "concepts/battery.md": "---\nid: solar/battery\nrequires: [wiring, concepts/safety.md, "
    "battery, nowhere]\n---\n# Battery\n\nSee [[wiring]] and [[wiring]], then [[safety]].\n",
    "concepts/wiring.md": "# Wiring\n\nFuse it; see [[battery]].\n",
    "concepts/safety.md": "# Safety\n\nDisconnect first.\n",
}


def test_a_pack_view_resolves_links_and_requires_once(make_pack: MakePack) -> None:
    root = make_pack(FILES).resolve()
    view = pack_view(load_pack(root, slug="solar", max_file_bytes=1 << 20))
    assert view.root == root
    assert view.adjacency["concepts/battery.md"] == ("concepts/wiring.md", "concepts/safety.md")
    assert view.adjacency["concepts/wiring.md"] == ("concepts/battery.md",)
    # requires: resolved by id, path and basename; itself and the unknown are left out
    assert view.requires == {
        "concepts/battery.md": ("concepts/wiring.md", "concepts/safety.md"),
    }
    assert view.always == frozenset({"concepts/safety.md"})
    assert view.navigation == frozenset({"_index.md"})
    assert view.refresh_cycle == "P90D"
    assert view.skill_of == {}


def test_a_skills_pack_view_knows_each_files_skill(make_pack: MakePack) -> None:
    root = make_pack(
        {
            "skills/worktrees/SKILL.md": "---\nname: worktrees\ndescription: Isolate work\n---\n"
            "# Worktrees\n\nBody.\n",
            "skills/worktrees/notes.md": "# Notes\n\nMore.\n",
            "README.md": "# Library\n\nSkills.\n",
        }
    ).resolve()
    view = pack_view(load_pack(root, kind="skills", slug="sp", max_file_bytes=1 << 20))
    assert view.skill_of == {
        "skills/worktrees/SKILL.md": "worktrees",
        "skills/worktrees/notes.md": "worktrees",
    }


def test_a_skill_without_a_description_is_profiled_by_its_name(make_pack: MakePack) -> None:
    root = make_pack({"skills/tidy/SKILL.md": "---\nname: tidy\n---\n# Tidy\n\nBody.\n"}).resolve()
    view = pack_view(load_pack(root, kind="skills", slug="sp", max_file_bytes=1 << 20))
    assert view.profiles["skills/tidy/SKILL.md"] == "tidy"
