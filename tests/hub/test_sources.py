"""Tap sources are checked before git runs: hostile ones are refused and nothing executes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.hub.errors import TapError
from ep_mcp.hub.git import parse_source
from ep_mcp.hub.hub import SkillHub


@pytest.mark.parametrize(
    "template",
    [
        "ext::sh -c touch% {marker}",
        "ext::sh -c 'touch {marker}'",
        "--upload-pack=touch {marker}",
        "-oProxyCommand=touch {marker}",
        "--config=core.sshCommand=touch {marker}",
        "-u touch {marker}",
        "fd::17",
        "git://example.com/owner/repo",
        "http://example.com/owner/repo",
        "ftp://example.com/owner/repo",
        "ssh://-oProxyCommand=touch {marker}/repo",
        "https://-host/owner/repo",
        "git@-oProxyCommand=x:owner/repo",
        "",
        "   ",
        "owner/repo\ntouch {marker}",
    ],
)
def test_hostile_sources_are_refused_without_running_anything(
    template: str, tmp_path: Path, make_hub: Callable[..., SkillHub], home: Path
) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(TapError):
        make_hub().tap(template.format(marker=marker), allow_file=True)
    assert not marker.exists()
    assert not (home / "taps").exists() or list((home / "taps").iterdir()) == []


@pytest.mark.parametrize(
    ("source", "url", "name", "kind"),
    [
        (
            "anthropics/skills",
            "https://github.com/anthropics/skills",
            "anthropics__skills",
            "https",
        ),
        (
            "https://github.com/obra/superpowers.git",
            "https://github.com/obra/superpowers.git",
            "obra__superpowers",
            "https",
        ),
        (
            "https://gitlab.example.com/group/sub/repo",
            "https://gitlab.example.com/group/sub/repo",
            "sub__repo",
            "https",
        ),
        (
            "git@github.com:obra/superpowers.git",
            "git@github.com:obra/superpowers.git",
            "obra__superpowers",
            "ssh",
        ),
        (
            "ssh://git@example.com/team/skills",
            "ssh://git@example.com/team/skills",
            "team__skills",
            "ssh",
        ),
    ],
)
def test_allowed_sources_are_normalised(
    source: str, url: str, name: str, kind: str, tmp_path: Path
) -> None:
    parsed = parse_source(source, cwd=tmp_path)
    assert (parsed.url, parsed.name, parsed.kind) == (url, name, kind)


def test_a_local_path_becomes_a_file_url_only_with_the_flag(tmp_path: Path) -> None:
    repo = tmp_path / "me" / "my-skills"
    repo.mkdir(parents=True)
    with pytest.raises(TapError, match="--allow-file"):
        parse_source(str(repo))
    with pytest.raises(TapError, match="--allow-file"):
        parse_source(repo.as_uri())
    parsed = parse_source(str(repo), allow_file=True)
    assert parsed.url == repo.as_uri() and parsed.name == "me__my-skills" and parsed.kind == "file"


def test_a_relative_folder_wins_over_the_github_shorthand(tmp_path: Path) -> None:
    (tmp_path / "owner" / "repo").mkdir(parents=True)
    with pytest.raises(TapError, match="--allow-file"):
        parse_source("owner/repo", cwd=tmp_path)
