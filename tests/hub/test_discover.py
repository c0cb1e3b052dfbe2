"""skill_discover_github through a fake `gh`: results, and an actionable error for every failure."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.errors import EpMcpError
from ep_mcp.hub.errors import DiscoveryError
from ep_mcp.hub.hub import SkillHub
from ep_mcp.tools.registry import ToolContext, call_tool

from .helpers import env_with_path

ROWS = [
    {
        "path": "skills/pdf/SKILL.md",
        "repository": {"nameWithOwner": "acme/skills"},
        "url": "https://github.com/acme/skills/blob/main/skills/pdf/SKILL.md",
    },
    {"path": "SKILL.md", "repository": {"nameWithOwner": "solo/one-skill"}, "url": ""},
]


def test_gh_results_name_the_repository_and_the_tap_command(
    make_hub: Callable[..., SkillHub], fake_bin: Callable[[str, str], Path], tmp_path: Path
) -> None:
    args = tmp_path / "gh-args"
    folder = fake_bin(
        "gh", f'printf "%s\\n" "$@" > "{args}"\ncat <<\'EOF\'\n{json.dumps(ROWS)}\nEOF\n'
    )
    hub = make_hub(env=env_with_path(folder))
    reply = call_tool(
        ToolContext(library=None, hub=hub),
        "skill_discover_github",
        {"query": "pdf --upload-pack=x", "limit": 5},
    )
    assert [r["repository"] for r in reply["results"]] == ["acme/skills", "solo/one-skill"]
    assert reply["results"][0]["tap"] == "ep-mcp tap acme/skills"
    assert reply["results"][1]["skill_dir"] == ""
    argv = args.read_text().splitlines()
    assert argv[:4] == ["search", "code", "--filename", "SKILL.md"]
    assert argv[-2:] == ["--", "pdf --upload-pack=x"] and "5" in argv


@pytest.mark.parametrize(
    ("script", "hint"),
    [
        (None, "install it"),
        (
            'echo "To get started with GitHub CLI, please run:  gh auth login" >&2\nexit 4\n',
            "gh auth login",
        ),
        ('echo "HTTP 502: Bad Gateway" >&2\nexit 1\n', "retry"),
        ('echo "this is not json"\n', "not the expected JSON"),
        ("echo '{\"unexpected\": true}'\n", "not the expected JSON"),
        ("exec sleep 60\n", "longer than"),
    ],
)
def test_every_gh_failure_is_an_actionable_error(
    script: str | None,
    hint: str,
    make_hub: Callable[..., SkillHub],
    fake_bin: Callable[[str, str], Path],
    tmp_path: Path,
) -> None:
    folder = fake_bin("gh", script) if script is not None else tmp_path / "no-gh"
    # only the sleeping gh meets the short timeout: a slow start of the others on a busy
    # machine must not turn their own error into a timeout
    timeout_s = 0.5 if "sleep" in (script or "") else 30.0
    hub = make_hub(env=env_with_path(folder), discover_timeout_s=timeout_s)
    with pytest.raises(DiscoveryError, match=hint) as info:
        call_tool(ToolContext(library=None, hub=hub), "skill_discover_github", {"query": "pdf"})
    assert isinstance(info.value, EpMcpError)
