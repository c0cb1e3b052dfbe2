"""Every git call runs hermetically; the user's credential helper is the one value passed on."""

from __future__ import annotations

import os
from pathlib import Path

from ep_mcp.hub.git import Git
from ep_mcp.hub.gitenv import git_env, git_options


def test_the_callers_git_variables_and_config_files_are_dropped() -> None:
    env = git_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/home/u",
            "GIT_DIR": "/elsewhere",
            "GIT_CONFIG_PARAMETERS": "'core.fsmonitor=evil'",
            "GIT_CONFIG_SYSTEM": "/tmp/evil",
            "GIT_EXTERNAL_DIFF": "evil",
            "GIT_SSH_COMMAND": "evil",
            "GIT_ASKPASS": "evil",
        }
    )
    assert {k for k in env if k.startswith("GIT_")} == {
        "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_ATTR_NOSYSTEM", "GIT_TERMINAL_PROMPT",
        "GIT_ASKPASS", "GIT_SSH_COMMAND", "GIT_PAGER", "GIT_NO_REPLACE_OBJECTS",
        "GIT_PROTOCOL_FROM_USER",
    }  # fmt: skip
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull and env["GIT_ASKPASS"] == ""
    assert env["GIT_SSH_COMMAND"] == "ssh -oBatchMode=yes"


def test_credential_helpers_are_reset_then_only_the_users_are_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[credential]\n\thelper = store\n\thelper = cache --timeout=60\n", encoding="utf-8"
    )
    git = Git({"PATH": os.environ["PATH"], "HOME": str(home)})
    helpers = git.user_credential_helpers()
    assert helpers == ("store", "cache --timeout=60")
    options = git_options(credential_helpers=helpers)
    values = options[1::2]
    reset = values.index("credential.helper=")
    assert values[reset + 1 :] == [
        "credential.helper=store",
        "credential.helper=cache --timeout=60",
    ]
    assert not Git({"PATH": os.environ["PATH"], "HOME": str(tmp_path)}).user_credential_helpers()


def test_dash_c_beats_an_included_fsmonitor_but_cannot_disarm_a_repository_filter(
    tmp_path: Path,
) -> None:
    """Why git never runs inside a pack or tap: `-c` cannot name the repository's filters."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    (repo / "a.md").write_text("# A\n", encoding="utf-8")
    (repo / ".gitattributes").write_text("*.md filter=evil\n", encoding="utf-8")
    git = Git(os.environ)
    git.init_commit(repo, "one")
    included = tmp_path / "included.cfg"
    included.write_text(f'[core]\n\tfsmonitor = "touch {markers}/fsmonitor #"\n', "utf-8")
    with (repo / ".git" / "config").open("a", encoding="utf-8") as fh:
        fh.write(f"[include]\n\tpath = {included}\n")
        fh.write(f'[filter "evil"]\n\tclean = "touch {markers}/clean #"\n')
    os.utime(repo / "a.md", ns=(1, 1))  # same size, new mtime: git re-reads it through the filter
    git.run(["status", "--porcelain"], cwd=repo)  # the hermetic options, inside the repository
    assert sorted(p.name for p in markers.iterdir()) == ["clean"]
