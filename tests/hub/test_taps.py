"""Taps: real git clones of local repositories, commit-keyed reindex, update, untap."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.config.model import TapSettings
from ep_mcp.hub import tapindex
from ep_mcp.hub.errors import TapError
from ep_mcp.hub.hub import SkillHub

from .helpers import commit, skill_md


def test_a_local_repository_is_cloned_into_the_taps_folder_and_indexed(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    repo = make_repo()
    hub = make_hub()
    report = hub.tap(str(repo), allow_file=True).to_dict()
    assert report["tap"] == "acme__skills"
    assert (home / "taps" / "acme__skills" / ".git").is_dir()
    assert report["reindexed"] == 1 and report["taps"][0]["skills"] == 3
    (row,) = [t.to_dict() for t in hub.list_taps()]
    assert row["tap"] == "acme__skills" and row["skills"] == 3 and row["indexed"]
    assert len(str(row["commit"])) == 40 and row["indexed_at"] and not row["stale"]
    assert row["url"].startswith("file://")


def test_a_local_repository_needs_the_explicit_flag(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    with pytest.raises(TapError, match="--allow-file"):
        make_hub().tap(str(make_repo()))
    assert not (home / "taps").exists() or not any((home / "taps").iterdir())


def test_a_failed_clone_leaves_no_half_tap(
    tmp_path: Path, make_hub: Callable[..., SkillHub], home: Path
) -> None:
    not_a_repo = tmp_path / "plain" / "folder"
    not_a_repo.mkdir(parents=True)
    (not_a_repo / "SKILL.md").write_text(skill_md("x", "y"), encoding="utf-8")
    with pytest.raises(TapError, match="git clone failed"):
        make_hub().tap(str(not_a_repo), allow_file=True)
    assert list((home / "taps").iterdir()) == []


def test_tapping_the_same_repository_twice_is_refused(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    repo = make_repo()
    hub = make_hub()
    hub.tap(str(repo), allow_file=True).to_dict()
    with pytest.raises(TapError, match="already tapped"):
        hub.tap(str(repo), allow_file=True).to_dict()


def test_update_after_a_new_commit_reindexes_only_that_tap(
    make_repo: Callable[..., Path], obra_repo: Path, make_hub: Callable[..., SkillHub]
) -> None:
    small = make_repo()
    hub = make_hub()
    hub.tap(str(small), allow_file=True).to_dict()
    hub.tap(str(obra_repo), allow_file=True).to_dict()
    again = hub.reindex().to_dict()
    assert (again["reused"], again["reindexed"]) == (2, 0)
    commit(
        small,
        {
            "skills/tax-returns/SKILL.md": skill_md(
                "tax-returns", "Use when preparing a personal income tax return."
            )
        },
    )
    report = hub.update().to_dict()
    assert report["changed"] == 1 and report["reindexed"] == 1 and report["reused"] == 1
    changed = {u["tap"]: u for u in report["updated"]}
    assert changed["acme__skills"]["changed"] and not changed["obra__superpowers"]["changed"]
    top = hub.search("prepare my income tax return", 3).to_dict()["results"][0]
    assert top["id"] == "acme__skills:skills/tax-returns"


def test_untap_removes_the_clone_and_its_index(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    hub = make_hub()
    hub.tap(str(make_repo()), allow_file=True).to_dict()
    assert hub.untap("acme/skills") == "acme__skills"
    assert not (home / "taps" / "acme__skills").exists()
    assert not (home / "skills-index" / "acme__skills").exists()
    assert [t.to_dict() for t in hub.list_taps()] == []
    with pytest.raises(TapError, match="no tap named"):
        hub.untap("acme__skills")


def test_a_folder_listed_in_config_is_indexed_in_place_and_keyed_by_its_files(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    folder = make_repo()
    hub = make_hub(taps=(TapSettings(url=str(folder), name="mine"),))
    first = hub.reindex().to_dict()
    assert first["reindexed"] == 1 and not (home / "taps").exists()
    assert hub.reindex().to_dict()["reused"] == 1
    (folder / "skills" / "marinade" / "SKILL.md").write_text(
        skill_md("marinade", "Use when grilling fish."), encoding="utf-8"
    )
    os.utime(folder / "skills" / "marinade" / "SKILL.md", ns=(1, 1))
    assert hub.reindex().to_dict()["reindexed"] == 1
    with pytest.raises(TapError, match=r"config\.yaml"):
        hub.untap("mine")


def test_a_format_bump_rebuilds_every_tap(
    make_repo: Callable[..., Path],
    make_hub: Callable[..., SkillHub],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = make_hub()
    hub.tap(str(make_repo()), allow_file=True).to_dict()
    assert hub.reindex().to_dict()["reused"] == 1
    monkeypatch.setattr(tapindex, "HUB_FORMAT", tapindex.HUB_FORMAT + 1)
    assert hub.reindex().to_dict()["reindexed"] == 1


def test_dense_adds_vectors_and_a_dimension_change_invalidates_them(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], hashing: object
) -> None:
    from ep_mcp.index.embed import HashingEmbedder

    repo = make_repo()
    hub = make_hub(embedder=hashing)
    hub.tap(str(repo), allow_file=True).to_dict()
    report = hub.reindex(dense=True).to_dict()
    assert report["dense"] and report["reindexed"] == 1
    assert hub.reindex().to_dict()["reused"] == 1  # --dense is remembered
    assert hub.search("grilled chicken flavour", 3).to_dict()["ranker"] == "hybrid"
    other = make_hub(embedder=HashingEmbedder(32))
    again = other.reindex()
    assert again.reindexed == 1 and again.taps[0].embedded > 0
    assert other.reindex(dense=False).reindexed == 1
    assert other.search("grilled chicken flavour", 3).ranker == "lexical"


def test_a_serving_hub_sees_a_reindex_made_by_another_process(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]
) -> None:
    repo = make_repo()
    serving = make_hub()
    serving.tap(str(repo), allow_file=True)
    before = serving.search("income tax return", 3).to_dict()["results"]
    assert all(r["name"] != "tax-returns" for r in before)
    commit(
        repo,
        {
            "skills/tax-returns/SKILL.md": skill_md(
                "tax-returns", "Use when preparing a personal income tax return."
            )
        },
    )
    assert make_hub().update().report.reindexed == 1
    assert serving.search("income tax return", 3).results[0].skill.name == "tax-returns"
