"""The hub through the shared registry and the CLI (CliRunner, and once as a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.errors import NotFoundError
from ep_mcp.tools.registry import ToolContext, call_tool, tools

SKILL_TOOLS = {"skill_search", "skill_list", "skill_info", "skill_read", "skill_discover_github"}


def test_the_skill_tools_are_registered_in_the_skills_group() -> None:
    assert {t.name for t in tools("skills")} == SKILL_TOOLS
    assert not SKILL_TOOLS & {t.name for t in tools("pack")}


def test_skill_tools_without_a_hub_say_how_to_enable_it() -> None:
    with pytest.raises(NotFoundError, match="ep-mcp tap"):
        call_tool(ToolContext(library=None), "skill_list", {})


def _run(runner: CliRunner, home: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(main, list(args), env={"EP_MCP_HOME": str(home)})
    return result.exit_code, result.output


def test_tap_search_info_read_and_untap_from_the_command_line(
    make_repo: Callable[..., Path], home: Path
) -> None:
    repo = make_repo()
    runner = CliRunner()
    code, out = _run(runner, home, "tap", str(repo))
    assert code == 1 and "--allow-file" in out
    code, out = _run(runner, home, "tap", str(repo), "--allow-file")
    assert code == 0 and "tapped acme__skills (3 skills)" in out
    code, out = _run(runner, home, "taps", "--json")
    assert code == 0 and json.loads(out)[0]["skills"] == 3
    code, out = _run(runner, home, "skills", "search", "grilled chicken", "--json")
    data = json.loads(out)
    assert data["ranker"] == "lexical" and data["results"][0]["name"] == "marinade"
    code, out = _run(runner, home, "skills", "search", "grilled chicken")
    assert code == 0 and "acme__skills:skills/marinade" in out
    code, out = _run(runner, home, "skills", "info", "pdf-forms")
    assert code == 0 and "skills/pdf-forms/reference.md" in out
    code, out = _run(runner, home, "skills", "read", "marinade")
    assert code == 0 and out.startswith("---\nname: marinade")
    code, out = _run(runner, home, "skills", "list", "--json")
    assert json.loads(out)["count"] == 3
    code, out = _run(runner, home, "reindex", "--json")
    assert json.loads(out)["reused"] == 1
    code, out = _run(runner, home, "skills", "info", "nope")
    assert code == 1 and "no skill named" in out
    code, out = _run(runner, home, "untap", "acme__skills")
    assert code == 0 and "untapped acme__skills" in out


def test_a_hostile_tap_exits_1_with_one_line_and_runs_nothing(tmp_path: Path, home: Path) -> None:
    marker = tmp_path / "pwned"
    code, out = _run(CliRunner(), home, "tap", f"--upload-pack=touch {marker}")
    assert code != 0 and not marker.exists()
    code, out = _run(CliRunner(), home, "tap", "--", f"ext::sh -c touch% {marker}")
    assert code == 1 and "refusing" in out and not marker.exists()


def test_the_real_command_searches_a_tap(make_repo: Callable[..., Path], home: Path) -> None:
    exe = Path(sys.executable).parent / "ep-mcp"
    env = {**os.environ, "EP_MCP_HOME": str(home)}
    subprocess.run(
        [str(exe), "tap", "--allow-file", str(make_repo())],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    done = subprocess.run(
        [str(exe), "skills", "search", "tls certificates", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout)["results"][0]["name"] == "kubernetes-ingress"


def test_a_relative_home_taps_into_that_home(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """git runs in folders of its own: a relative EP_MCP_HOME is made absolute first."""
    exe = Path(sys.executable).parent / "ep-mcp"
    repo = make_repo()
    work = tmp_path / "cwd"
    work.mkdir()
    env = {**os.environ, "EP_MCP_HOME": "relative-home"}
    done = subprocess.run(
        [str(exe), "tap", "--allow-file", str(repo)],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (work / "relative-home" / "taps" / "acme__skills" / ".git").is_dir()


def test_the_mcp_server_lists_the_hub_tools_and_renders_failures_as_is_error(
    make_repo: Callable[..., Path], make_hub: Callable[..., object], tmp_path: Path
) -> None:
    from ep_mcp.config.model import Settings
    from ep_mcp.library.runtime import Library
    from ep_mcp.serve.context import PackScope, ServeContext, full_access
    from ep_mcp.serve.mcp.server import run_tool, tool_specs

    from .helpers import env_with_path

    hub = make_hub(env=env_with_path(tmp_path / "no-gh"))
    hub.tap(str(make_repo()), allow_file=True).to_dict()  # type: ignore[attr-defined]
    serve = ServeContext(library=Library(Settings(), {}, None), hub=hub)
    view = PackScope(serve, full_access(serve))
    assert {t.name for t in tool_specs(view)} >= SKILL_TOOLS
    ok = run_tool(view, "skill_search", {"query": "tls certificates", "limit": 2})
    assert not ok.is_error and ok.structured_content is not None
    assert ok.structured_content["results"][0]["name"] == "kubernetes-ingress"
    failed = run_tool(view, "skill_discover_github", {"query": "pdf"})
    assert failed.is_error and "gh" in failed.content[0].text  # type: ignore[union-attr]
