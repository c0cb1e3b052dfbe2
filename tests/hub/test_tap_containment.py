"""Taps serve no `.git/*`, dot-file or outside bytes, and never store or show URL credentials."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.model import TapSettings
from ep_mcp.errors import NotFoundError
from ep_mcp.hub.errors import TapError
from ep_mcp.hub.git import Git, TapSource, parse_source, shown_url, strip_credentials
from ep_mcp.hub.hub import SkillHub
from ep_mcp.hub.taps import TapManager
from ep_mcp.tools.registry import ToolContext, call_tool

from .helpers import SMALL_REPO, commit, skill_md, write_tree

CANARY = "zebracanary"
LEAKY_URL = f"https://token-user:{CANARY}@example.com/acme/skills"
LINKS = {  # committed into a tapped repository
    "skills/leak/SKILL.md": "../../.git/config",
    "skills/dot/SKILL.md": "../../.env",
    "skills/out/SKILL.md": "/etc/passwd",
}


def _everything(hub: SkillHub) -> str:
    """Every answer the skill tools give a caller (through the tool registry), as one string."""
    tools = ToolContext(library=None, hub=hub)
    out = [
        json.dumps(call_tool(tools, "skill_list", {})),
        json.dumps([t.to_dict() for t in hub.list_taps()]),
    ]
    for query in (CANARY, "git config secret", "token user example", "leak dot out"):
        answer = call_tool(tools, "skill_search", {"query": query, "limit": 20})
        answer.pop("query")  # the echo of the question itself
        out.append(json.dumps(answer))
    for entry in hub.entries():
        out.append(json.dumps(call_tool(tools, "skill_info", {"name": entry.id})))
        out.append(json.dumps(call_tool(tools, "skill_read", {"name": entry.id})))
    return "\n".join(out)


def _link_all(root: Path, links: dict[str, str]) -> None:
    for rel, target in links.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(target)


def test_a_cloned_tap_lands_links_as_plain_files_and_serves_no_git_config(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    repo = make_repo()
    (repo / ".env").write_text(f"TOKEN={CANARY}\n", encoding="utf-8")
    _link_all(repo, LINKS)
    commit(repo, {}, "links")
    hub = make_hub()
    hub.tap(str(repo), allow_file=True).to_dict()
    clone = home / "taps" / "acme__skills"
    for rel, target in LINKS.items():
        assert not (clone / rel).is_symlink()  # core.symlinks=false
        assert (clone / rel).read_text(encoding="utf-8") == target
    Git(os.environ).run(["config", "remote.origin.url", LEAKY_URL], cwd=clone)
    with (clone / ".git" / "config").open("a", encoding="utf-8") as fh:
        fh.write(f"[ep]\n\tsecret = {CANARY}\n")
    hub.reindex(force=True).to_dict()
    assert CANARY not in _everything(hub)
    runner, env = CliRunner(), {"EP_MCP_HOME": str(home)}
    for args in (["skills", "read", "leak"], ["skills", "search", "git config"], ["taps"]):
        result = runner.invoke(main, args, env=env)
        assert CANARY not in result.output + result.stderr, args


def test_a_folder_tap_refuses_links_into_git_dot_files_and_outside(
    tmp_path: Path, make_hub: Callable[..., SkillHub], plant_hostile: Callable[..., Any]
) -> None:
    folder = write_tree(tmp_path / "folder-tap", SMALL_REPO)
    outside = tmp_path / "outside"
    outside.mkdir()
    plant_hostile(folder, outside, "skills/marinade/SKILL.md")
    links = {
        "skills/leak/SKILL.md": "../../.git/config",
        "skills/dot/SKILL.md": "../../.secret.md",
        "skills/hid/SKILL.md": "../../.hidden/x.md",
        "skills/out/SKILL.md": str(outside / "secret.md"),
        "skills/fifo/SKILL.md": "../../fifo.md",
    }
    _link_all(folder, links)
    (folder / "skills" / "linked").symlink_to(outside, target_is_directory=True)
    (outside / "SKILL.md").write_text(skill_md("linked", CANARY), encoding="utf-8")
    hub = make_hub(taps=(TapSettings(url=str(folder)),))
    hub.reindex().to_dict()
    names = {e.name for e in hub.entries()}
    assert names == {"pdf-forms", "kubernetes-ingress", "marinade"}
    assert CANARY not in _everything(hub)


def test_skill_read_refuses_a_skill_file_swapped_for_a_link_after_indexing(
    tmp_path: Path, make_hub: Callable[..., SkillHub]
) -> None:
    folder = write_tree(tmp_path / "folder-tap", SMALL_REPO)
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text(f"[ep]\n\tsecret = {CANARY}\n", encoding="utf-8")
    hub = make_hub(taps=(TapSettings(url=str(folder)),))
    hub.reindex().to_dict()
    skill = folder / "skills" / "marinade" / "SKILL.md"
    skill.unlink()
    skill.symlink_to("../../.git/config")
    with pytest.raises(NotFoundError, match="cannot be served") as info:
        hub.read("marinade").to_dict()
    assert CANARY not in str(info.value)
    skill.unlink()
    os.mkfifo(skill)  # never written: a blocking read would hang skill_read
    with pytest.raises(NotFoundError, match="not a regular file"):
        hub.read("marinade").to_dict()


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://user:pass@github.com/acme/skills", "https://github.com/acme/skills"),
        ("https://ghp_token@github.com/acme/skills.git", "https://github.com/acme/skills.git"),
        ("https://u:p@ss@host/acme/skills", "https://host/acme/skills"),
        ("ssh://git:pw@host/acme/skills", "ssh://git@host/acme/skills"),
        ("ssh://git@host/acme/skills", "ssh://git@host/acme/skills"),
        ("https://github.com/acme/skills", "https://github.com/acme/skills"),
        ("git@github.com:acme/skills.git", "git@github.com:acme/skills.git"),
        ("file:///srv/repo", "file:///srv/repo"),
    ],
)
def test_credentials_are_stripped_from_tap_urls(url: str, clean: str) -> None:
    assert strip_credentials(url) == (clean, clean != url)
    assert shown_url(url) == clean


def test_a_tap_source_with_credentials_is_parsed_without_them() -> None:
    parsed = parse_source(LEAKY_URL)
    assert parsed == TapSource("https://example.com/acme/skills", "acme__skills", "https", True)
    assert not parse_source("https://example.com/acme/skills").dropped_credentials


class RecordingGit(Git):
    """A fake git: records what clone is given and makes an empty repository folder."""

    def __init__(self) -> None:
        super().__init__({})
        self.cloned: list[str] = []

    def clone(self, source: TapSource, dest: Path, timeout: float = 0) -> None:
        self.cloned.append(source.url)
        (dest / ".git").mkdir(parents=True)


def test_git_never_sees_the_credentials_and_a_warning_says_where_they_belong(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    git = RecordingGit()
    with caplog.at_level(logging.WARNING, logger="ep_mcp.hub"):
        tap = TapManager(tmp_path, (), git).add(LEAKY_URL)
    assert git.cloned == ["https://example.com/acme/skills"]
    assert tap.url == "https://example.com/acme/skills"
    assert CANARY not in caplog.text and "credential helper" in caplog.text


def test_the_cli_warns_about_credentials_and_never_prints_them(home: Path) -> None:
    runner = CliRunner()
    bad = f"https://token-user:{CANARY}@127.0.0.1:9/acme/skills"  # nothing listens on port 9
    result = runner.invoke(main, ["tap", bad], env={"EP_MCP_HOME": str(home)})
    assert result.exit_code == 1
    assert "credential helper" in result.stderr
    assert CANARY not in result.output + result.stderr


def test_taps_json_hides_credentials_already_stored_in_an_old_clone(
    make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub], home: Path
) -> None:
    hub = make_hub()
    hub.tap(str(make_repo()), allow_file=True).to_dict()
    clone = home / "taps" / "acme__skills"
    Git(os.environ).run(["config", "remote.origin.url", LEAKY_URL], cwd=clone)
    result = CliRunner().invoke(main, ["taps", "--json"], env={"EP_MCP_HOME": str(home)})
    assert result.exit_code == 0
    assert json.loads(result.stdout)[0]["url"] == "https://example.com/acme/skills"
    assert CANARY not in result.output


def test_git_error_messages_never_carry_credentials(
    fake_bin: Callable[[str, str], Path], tmp_path: Path
) -> None:
    script = f"echo \"fatal: unable to access '{LEAKY_URL}/': denied\" >&2\nexit 128\n"
    git = Git({"PATH": str(fake_bin("git", script))})
    with pytest.raises(TapError) as info:
        git.run(["fetch", "origin"], cwd=tmp_path)
    assert "https://example.com/acme/skills/" in str(info.value)
    assert CANARY not in str(info.value)
