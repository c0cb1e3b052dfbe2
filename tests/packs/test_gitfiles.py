"""A checkout's commit is read from `.git` as files: branches, packed refs, detached HEADs."""

from __future__ import annotations

import os
from pathlib import Path

from ep_mcp.hub.git import Git
from ep_mcp.packs import gitfiles

OID = "0123456789abcdef0123456789abcdef01234567"


def _gitdir(root: Path, head: str, files: dict[str, str] | None = None) -> Path:
    gitdir = root / ".git"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text(head, encoding="ascii")
    for rel, text in (files or {}).items():
        (gitdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (gitdir / rel).write_text(text, encoding="ascii")
    return gitdir


def test_a_branch_head_is_read_from_its_loose_ref_then_from_packed_refs(tmp_path: Path) -> None:
    loose = _gitdir(tmp_path / "a", "ref: refs/heads/main\n", {"refs/heads/main": OID + "\n"})
    refs = f"# pack-refs with: peeled\n{'f' * 40} refs/heads/x\n{OID} refs/heads/main\n"
    packed = _gitdir(tmp_path / "b", "ref: refs/heads/main\n", {"packed-refs": refs})
    detached = _gitdir(tmp_path / "c", OID + "\n")
    assert gitfiles.head_commit(loose) == gitfiles.head_commit(packed) == OID
    assert gitfiles.head_commit(detached) == OID


def test_a_real_repository_head_matches_git(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    git = Git(os.environ)
    git.init_commit(tmp_path, "one")
    expected = git.run(["rev-parse", "HEAD"], cwd=tmp_path).strip()
    assert gitfiles.head_commit(tmp_path / ".git") == expected
    git.run(["pack-refs", "--all"], cwd=tmp_path)
    assert not (tmp_path / ".git" / "refs" / "heads" / "main").exists()
    assert gitfiles.head_commit(tmp_path / ".git") == expected


def test_links_odd_refs_and_odd_heads_give_no_commit(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "main").write_text(OID + "\n", encoding="ascii")
    linked = _gitdir(tmp_path / "a", "ref: refs/heads/main\n")
    (linked / "refs" / "heads").mkdir(parents=True)
    (linked / "refs" / "heads" / "main").symlink_to(outside / "main")
    assert gitfiles.head_commit(linked) is None  # the ref is a link: not followed
    folder_link = _gitdir(tmp_path / "b", "ref: refs/heads/main\n")
    (folder_link / "refs").symlink_to(outside)
    assert gitfiles.head_commit(folder_link) is None
    odd = ("ref: refs/../../outside/main\n", "ref: HEAD\n", "nonsense\n", "ref: refs/.x\n")
    for i, head in enumerate(odd):
        assert gitfiles.head_commit(_gitdir(tmp_path / f"odd{i}", head)) is None
    fifo = _gitdir(tmp_path / "d", "ref: refs/heads/main\n")
    (fifo / "refs" / "heads").mkdir(parents=True)
    os.mkfifo(fifo / "refs" / "heads" / "main")
    assert gitfiles.head_commit(fifo) is None  # never blocks on a FIFO


def test_the_nearest_git_folder_counts_and_a_link_or_file_there_means_none(
    tmp_path: Path,
) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "packs" / "x").mkdir(parents=True)
    top = (tmp_path / "repo").resolve()
    assert gitfiles.git_dir(tmp_path / "repo" / "packs" / "x") == (top, top / ".git")
    (tmp_path / "repo" / "packs" / "x" / ".git").write_text("gitdir: /elsewhere\n")
    assert gitfiles.git_dir(tmp_path / "repo" / "packs" / "x") is None
