"""Nothing a pack's or a tap's `.git` configures is executed by any ep-mcp command.

Each planted setting writes a marker file when git runs it: fsmonitor, clean/smudge/process
filters (with `.gitattributes`), hooks (in `.git/hooks` and in a `core.hooksPath`), a pager,
an external diff and textconv, settings reached through `include` and `includeIf`, an ssh
command, askpass, a credential helper, an upload-pack command, an `ext::` rewrite and a pack
objects hook — in the repository, in the user's global config and in a system config. Plain
git, run on the same folders, creates markers (the plants are live); ep-mcp creates none.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ep_mcp.cli import main
from ep_mcp.hub.git import Git

from .helpers import SMALL_REPO, commit, skill_md

HOOKS = (
    "post-checkout", "post-merge", "reference-transaction", "pre-auto-gc", "post-index-change",
    "fsmonitor-watchman", "post-rewrite", "pre-commit", "post-commit", "post-update",
    "pre-receive", "update", "push-to-checkout",
)  # fmt: skip
ATTRIBUTES = "*.md filter=evil diff=evil\n*.yaml filter=evilproc\n*.txt filter=inc\n"


def _run(markers: Path, what: str) -> str:
    """A git config value that, run by a shell, creates the marker ``what`` (args ignored)."""
    return f'"touch {markers}/{what} #"'


def _hostile_config(markers: Path, where: str) -> str:
    m = lambda what: _run(markers, f"{where}-{what}")  # noqa: E731
    include = markers.parent / f"{where}-include.cfg"
    include.write_text(
        f"[core]\n\tfsmonitor = {m('include-fsmonitor')}\n"
        f'[filter "inc"]\n\tclean = {m("include-clean")}\n\tsmudge = {m("include-smudge")}\n',
        encoding="utf-8",
    )
    include_if = markers.parent / f"{where}-includeif.cfg"
    include_if.write_text(
        f"[diff]\n\texternal = {m('includeif-diff')}\n[core]\n\tpager = {m('includeif-pager')}\n",
        encoding="utf-8",
    )
    hooks = markers.parent / f"{where}-hooks"
    _write_hooks(hooks, markers, f"{where}-hookspath")
    return (
        f"[include]\n\tpath = {include}\n"
        f'[includeIf "gitdir:/"]\n\tpath = {include_if}\n'
        f"[core]\n\tfsmonitor = {m('fsmonitor')}\n\thooksPath = {hooks}\n"
        f"\tpager = {m('pager')}\n\taskPass = {m('askpass')}\n\tsshCommand = {m('ssh')}\n"
        f"\talternateRefsCommand = {m('altrefs')}\n"
        f"[pager]\n\tstatus = true\n\tdiff = true\n"
        f"[diff]\n\texternal = {m('diff-external')}\n"
        f'[diff "evil"]\n\ttextconv = {m("textconv")}\n'
        f'[filter "evil"]\n\tclean = {m("clean")}\n\tsmudge = {m("smudge")}\n'
        f'[filter "evilproc"]\n\tprocess = {m("process")}\n'
        f'[credential]\n\thelper = "!touch {markers}/{where}-credential #"\n'
        f"[uploadpack]\n\tpackObjectsHook = {m('packobjectshook')}\n"
        f'[remote "origin"]\n\tuploadpack = {m("uploadpack")}\n'
        f'[url "ext::sh -c touch% {markers}/{where}-ext"]\n\tinsteadOf = file://\n'
    )


def _write_hooks(folder: Path, markers: Path, where: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        path = folder / hook
        path.write_text(f"#!/bin/sh\ntouch {markers}/{where}-{hook}\n", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _plant(repo: Path, markers: Path, where: str) -> None:
    """Append the hostile settings to ``repo/.git/config`` and fill its hooks folder."""
    with (repo / ".git" / "config").open("a", encoding="utf-8") as fh:
        fh.write(_hostile_config(markers, where))
    _write_hooks(repo / ".git" / "hooks", markers, f"{where}-hook")


def _hostile_user(tmp_path: Path, markers: Path) -> dict[str, str]:
    """A HOME whose global config, and a system config, plant the same settings."""
    home = tmp_path / "user"
    (home / ".config" / "git").mkdir(parents=True)
    text = _hostile_config(markers, "global").replace("[credential]", "[credential-off]")
    text = text.replace("[url ", "[url-off ")  # the user's own rewrites would only refuse
    (home / ".gitconfig").write_text(text, encoding="utf-8")
    (home / ".config" / "git" / "config").write_text(text, encoding="utf-8")
    system = tmp_path / "system.gitconfig"
    system.write_text(_hostile_config(markers, "system"), encoding="utf-8")
    return {
        "HOME": str(home),
        "GIT_CONFIG_SYSTEM": str(system),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor=touch {markers}/env-fsmonitor #'",
        "GIT_EXTERNAL_DIFF": f"touch {markers}/env-diff",
        "GIT_PAGER": f"touch {markers}/env-pager #",
    }


def _assert_live(repo: Path, markers: Path) -> None:
    """Plain git on ``repo`` runs the plants (so a quiet ep-mcp is not a dead plant)."""
    (repo / "touched.md").write_text("# touched\n", encoding="utf-8")
    env = {"PATH": os.environ["PATH"], "HOME": str(markers.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["status"], ["add", "touched.md"], ["checkout", "--", "."]):
        subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=False)
    (repo / "touched.md").unlink()
    fired = {p.name for p in markers.iterdir()}
    assert {n for n in fired if n.endswith("fsmonitor")}, fired
    assert {n for n in fired if n.endswith(("clean", "process"))}, fired
    for p in markers.iterdir():
        p.unlink()


def _ep(args: list[str], env: dict[str, str], markers: Path) -> Result:
    """Run ep-mcp; no marker may appear, and the command must succeed."""
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert _fired(markers) == [], args
    assert result.exit_code == 0, (args, result.output, result.stderr)
    return result


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "plants" / "markers"
    folder.mkdir(parents=True)
    return folder


def _fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


PACK = {
    "manifest.yaml": "slug: orchard\nname: Orchard notes\ntype: product\n",
    "apples.md": "---\ntitle: Apples\ntype: howto\n---\n# Apples\n\nPrune apple trees in winter.\n",
    "pears.md": "---\ntitle: Pears\ntype: concept\n---\n# Pears\n\nPears ripen off the tree.\n",
    "notes.txt": "plain text\n",
    ".gitignore": ".ep-mcp/\n",
    ".gitattributes": ATTRIBUTES,
}


def test_no_command_on_a_pack_runs_what_its_git_config_names(
    tmp_path: Path, markers: Path, make_pack: Callable[..., Path]
) -> None:
    pack = make_pack(PACK, name="orchard")
    head = Git(os.environ).init_commit(pack, "pack")
    _plant(pack, markers, "pack")
    env = {**_hostile_user(tmp_path, markers), "EP_MCP_HOME": str(tmp_path / "ep-home")}
    out = tmp_path / "artifacts"
    for args in (
        ["index", str(pack), "--provider", "hashing"],
        ["validate", str(pack)],
        ["search", str(pack), "prune apple trees", "--provider", "hashing"],
        ["index", str(pack), "--provider", "hashing", "--out", str(out), "--json"],
        ["index", "--check", str(out)],
    ):
        _ep(args, env, markers)
        assert _fired(markers) == [], args
    published = json.loads(_ep(["index", "--check", str(out), "--json"], env, markers).stdout)
    assert published["artifacts"][0]["git_commit"] == head  # read as files, checked clean
    (pack / "apples.md").write_text("# Apples\n\nChanged.\n", encoding="utf-8")
    dirty = _ep(
        ["index", str(pack), "--provider", "hashing", "--out", str(out), "--json"], env, markers
    )
    assert json.loads(dirty.stdout)["manifest"]["git_commit"] is None  # dirty: no commit
    assert _fired(markers) == []
    _assert_live(pack, markers)


def test_a_pack_whose_git_folder_is_a_link_or_a_file_has_no_commit(
    tmp_path: Path, markers: Path, make_pack: Callable[..., Path]
) -> None:
    from ep_mcp.library.publish import git_commit

    real = make_pack(PACK, name="real")
    Git(os.environ).init_commit(real, "pack")
    _plant(real, markers, "pack")
    linked = make_pack(PACK, name="linked")
    (linked / ".git").symlink_to(real / ".git")
    worktree = make_pack(PACK, name="worktree")
    (worktree / ".git").write_text(f"gitdir: {real / '.git'}\n", encoding="utf-8")
    assert git_commit(real, os.environ) is not None
    assert git_commit(linked, os.environ) is None
    assert git_commit(worktree, os.environ) is None
    assert _fired(markers) == []


def test_no_tap_command_runs_what_a_tap_or_its_source_configures(
    tmp_path: Path, markers: Path, make_repo: Callable[..., Path], home: Path
) -> None:
    files = {**SMALL_REPO, ".gitattributes": ATTRIBUTES, "skills/pdf-forms/notes.txt": "x\n"}
    source = make_repo(files)
    clean_config = (source / ".git" / "config").read_text(encoding="utf-8")
    _plant(source, markers, "source")
    env = {**_hostile_user(tmp_path, markers), "EP_MCP_HOME": str(home)}
    clone = home / "taps" / "acme__skills"

    _ep(["tap", str(source), "--allow-file"], env, markers)
    assert _fired(markers) == []
    _plant(clone, markers, "tap")
    for args in (
        ["taps"],
        ["taps", "--json"],
        ["reindex", "--force"],
        ["skills", "search", "fill a pdf form"],
        ["update"],
    ):
        _ep(args, env, markers)
        assert _fired(markers) == [], args

    (source / ".git" / "config").write_text(clean_config, encoding="utf-8")
    extra = {"skills/tax/SKILL.md": skill_md("tax", "Use when filing a tax return.")}
    new_head = commit(source, extra, "more")
    _plant(source, markers, "source")
    _plant(clone, markers, "tap")
    report = json.loads(_ep(["update", "--json"], env, markers).stdout)
    assert [u["new"] for u in report["updated"]] == [new_head]
    assert _fired(markers) == []
    found = _ep(["skills", "search", "file my tax return", "--json"], env, markers).stdout
    assert "acme__skills:skills/tax" in found
    _plant(clone, markers, "tap")
    _assert_live(clone, markers)
    _ep(["untap", "acme__skills"], env, markers)
    assert _fired(markers) == [] and not clone.exists()


def test_update_refuses_an_origin_rewritten_to_a_transport_helper(
    markers: Path, make_repo: Callable[..., Path], home: Path
) -> None:
    source = make_repo()
    env = {"EP_MCP_HOME": str(home)}
    _ep(["tap", str(source), "--allow-file"], env, markers)
    clone = home / "taps" / "acme__skills"
    Git(os.environ).run(
        ["config", "remote.origin.url", f"ext::sh -c touch% {markers}/ext"], cwd=clone
    )
    report = json.loads(_ep(["update", "--json"], env, markers).stdout)
    assert "transport helpers" in report["updated"][0]["error"]
    assert _fired(markers) == []


def test_a_folder_tap_listed_in_config_runs_nothing_its_git_config_names(
    tmp_path: Path, markers: Path, make_repo: Callable[..., Path], home: Path
) -> None:
    folder = make_repo({**SMALL_REPO, ".gitattributes": ATTRIBUTES})
    _plant(folder, markers, "folder")
    config = tmp_path / "config.yaml"
    config.write_text(f"hub:\n  taps:\n    - url: {folder}\n      name: mine\n", "utf-8")
    env = {**_hostile_user(tmp_path, markers), "EP_MCP_HOME": str(home)}
    for args in (["reindex"], ["taps", "--json"], ["update"], ["skills", "search", "pdf form"]):
        _ep([*args, "--config", str(config)], env, markers)
    assert not (home / "taps").exists()  # indexed in place, never cloned
    _assert_live(folder, markers)


def test_a_pack_inside_a_repository_is_clean_when_its_own_folder_is(tmp_path: Path) -> None:
    from ep_mcp.library.publish import git_commit

    repo = tmp_path / "repo"
    pack = repo / "packs" / "orchard"
    for rel, text in PACK.items():
        (pack / rel).parent.mkdir(parents=True, exist_ok=True)
        (pack / rel).write_text(text, encoding="utf-8")
    (repo / "README.md").write_text("# Repo\n", encoding="utf-8")
    head = Git(os.environ).init_commit(repo, "all")
    assert git_commit(pack, os.environ) == head
    (repo / "README.md").write_text("# Repo, edited\n", encoding="utf-8")  # outside the pack
    assert git_commit(pack, os.environ) == head
    (pack / "plums.md").write_text("# Plums\n", encoding="utf-8")  # untracked, inside
    assert git_commit(pack, os.environ) is None
    (pack / "plums.md").unlink()
    (pack / "pears.md").write_text("# Pears\n\nEdited.\n", encoding="utf-8")
    assert git_commit(pack, os.environ) is None


def test_a_commit_is_named_only_when_every_file_the_pack_could_serve_is_the_commits(
    tmp_path: Path,
) -> None:
    """An ignored file, or an edit hidden by skip-worktree, makes the pack not the commit;
    ep-mcp's own hidden folders (``.ep-mcp/``) do not count (they are never served)."""
    import subprocess

    from ep_mcp.library.publish import git_commit

    pack = tmp_path / "pack"
    for rel, text in PACK.items():
        (pack / rel).parent.mkdir(parents=True, exist_ok=True)
        (pack / rel).write_text(text, encoding="utf-8")
    (pack / ".gitignore").write_text("extra.md\n.ep-mcp/\n", encoding="utf-8")
    head = Git(os.environ).init_commit(pack, "all")
    (pack / ".ep-mcp").mkdir()
    (pack / ".ep-mcp" / "index.db").write_bytes(b"not served")
    assert git_commit(pack, os.environ) == head
    (pack / "extra.md").write_text("# Extra\n\nIgnored by git, served by the pack.\n", "utf-8")
    assert git_commit(pack, os.environ) is None
    (pack / "extra.md").unlink()
    first = "apples.md"
    subprocess.run(
        ["git", "update-index", "--skip-worktree", first],
        cwd=pack,
        check=True,
        capture_output=True,
    )
    (pack / first).write_text("# Edited behind skip-worktree\n", encoding="utf-8")
    assert git_commit(pack, os.environ) is None
