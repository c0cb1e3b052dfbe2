"""Containment: only regular files inside the root, outside hidden folders, are ever read."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ep_mcp.packs import safeopen
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.safeopen import (
    ContainmentError,
    FileTooLargeError,
    contained_path,
    read_contained,
    read_live_prefix,
)

GOOD = "---\ntitle: Good\n---\n# Good\n\nplain text about gardens\n"


@pytest.fixture
def corpus(tmp_path: Path, plant_hostile: Callable[..., Any]) -> tuple[Path, Any]:
    root = tmp_path / "pack"
    (root / "docs").mkdir(parents=True)
    (root / "good.md").write_text(GOOD, encoding="utf-8")
    (root / "docs" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    return root, plant_hostile(root, outside, "good.md")


def test_every_hostile_request_is_refused_and_no_canary_is_read(corpus: tuple[Path, Any]) -> None:
    root, hostile = corpus
    for rel in hostile.requests:
        with pytest.raises(ContainmentError) as info:
            read_contained(root, rel, 1_000_000)
        if not rel.startswith("/"):  # the message echoes the request, never the server's path
            assert str(root.parent) not in str(info.value)
        assert "zebracanary" not in str(info.value)


def test_an_in_pack_link_and_a_hard_link_are_served(corpus: tuple[Path, Any]) -> None:
    root, hostile = corpus
    assert read_contained(root, hostile.alias, 1000).data == GOOD.encode()
    # a hard link is the operator's own file: it cannot be told apart, so it is served
    assert b"hardlinked operator file" in read_contained(root, hostile.hard_link, 1000).data


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("fifo.md", "not a regular file"),
        ("zero.md", "outside the pack"),
        ("dotfile.md", "hidden"),
        ("git-config.md", "hidden"),
        ("outside-rel.md", "outside the pack"),
        (".git/config", "hidden"),
        ("docs", "not a regular file"),
        ("missing.md", "no such file"),
        ("a\\b.md", "backslash"),
        ("a\x00.md", "NUL"),
        ("/etc/passwd", "absolute"),
    ],
)
def test_a_refusal_names_its_reason(corpus: tuple[Path, Any], rel: str, reason: str) -> None:
    root, _ = corpus
    with pytest.raises(ContainmentError, match=reason):
        read_contained(root, rel, 1000)


def test_a_file_over_the_cap_is_refused_whole_and_read_as_a_prefix(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 5000)
    with pytest.raises(FileTooLargeError) as info:
        read_contained(tmp_path, "big.md", 100)
    assert (info.value.size, info.value.limit) == (5000, 100)
    assert read_contained(tmp_path, "big.md", 100, prefix=True).data == b"x" * 100


def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "pack"
    (root / "real").mkdir(parents=True)
    (root / "real" / "x.md").write_text("# X\n", encoding="utf-8")
    (root / "docs").symlink_to(root / "real", target_is_directory=True)  # a link: checked
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("zebracanary\n", encoding="utf-8")
    real_check = safeopen.contained_path
    assert read_contained(root, "docs/x.md", 1000).data == b"# X\n"  # inside the pack: read

    def check_then_swap(base: Path, rel: str) -> Path:
        checked = real_check(base, rel)  # the check passes on the real folder …
        (root / "real").rename(root / "real-old")  # … then an attacker swaps in a link
        (root / "real").symlink_to(outside, target_is_directory=True)
        return checked

    monkeypatch.setattr(safeopen, "contained_path", check_then_swap)
    with pytest.raises(OSError):  # openat + O_NOFOLLOW: ELOOP / ENOTDIR, never outside bytes
        read_contained(root, "docs/x.md", 1000)


def test_the_live_read_of_a_fifo_returns_at_once_with_the_reason(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.md")  # nobody ever writes: a blocking open would hang forever
    assert read_live_prefix(tmp_path, "a.md", 10) == (None, "not a regular file")
    assert read_live_prefix(tmp_path, "gone.md", 10) == (None, "no such file")
    assert read_live_prefix(None, "a.md", 10)[0] is None
    (tmp_path / "b.md").write_bytes(b"0123456789abc")
    assert read_live_prefix(tmp_path, "b.md", 4) == (b"0123", None)


def test_the_pack_reader_serves_none_of_the_hostile_files(corpus: tuple[Path, Any]) -> None:
    root, hostile = corpus
    pack = load_pack(root)
    paths = {d.path for d in pack.documents}
    assert paths == {"good.md", "docs/inner.md", hostile.alias, hostile.hard_link}
    everything = "".join(d.text for d in pack.documents) + str(pack.manifest)
    assert "zebracanary" not in everything
    warned = {w.path for w in pack.warnings}
    assert {"git-config.md", "sub/git.md", "dotfile.md", "dotfolder.md"} <= warned
    assert {"outside-abs.md", "outside-rel.md", "zero.md", "fifo.md", "linked-dir"} <= warned


def test_a_manifest_linked_to_a_hidden_file_is_not_served(tmp_path: Path) -> None:
    root = tmp_path / "pack"
    root.mkdir()
    (root / ".env").write_text("slug: zebracanary\nname: zebracanary\n", encoding="utf-8")
    (root / "manifest.yaml").symlink_to(".env")
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    pack = load_pack(root, kind="expertpack")
    assert "zebracanary" not in str(pack.manifest) + pack.name + pack.slug
    assert any("hidden" in w.message for w in pack.warnings if w.path == "manifest.yaml")


def test_a_sub_pack_folder_linked_outside_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "pack"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "manifest.yaml").write_text("context:\n  always: [zebracanary]\n", "utf-8")
    (root / "manifest.yaml").write_text("slug: p\nname: P\ntype: composite\npacks: [sub]\n")
    (root / "sub").symlink_to(outside, target_is_directory=True)
    pack = load_pack(root)
    assert "zebracanary" not in str(pack.manifest) + "".join(str(w) for w in pack.warnings)


SEGMENTS = [
    "..",
    ".",
    "",
    "%2e%2e",
    ".git",
    "config",
    ".hidden",
    "x.md",
    "good.md",
    "docs",
    "inner.md",
    "alias.md",
    "hard.md",
    "linked-dir",
    "secret.md",
    "hidden-dir",
    "git-config.md",
    "fifo.md",
    "zero.md",
    "sub",
    "git.md",
    "\x00",
    "a\\..\\b",
    "\u2025",
    "\uff0e\uff0e",
    "é.md",
    "~",
]
paths = st.one_of(
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map("/".join),
    st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map(lambda s: "/" + "/".join(s)),
    st.text(max_size=40),
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rel=paths)
def test_a_contained_path_is_under_the_root_and_never_hidden(
    corpus: tuple[Path, Any], rel: str
) -> None:
    root, _ = corpus
    base = Path(os.path.realpath(root))
    try:
        real = contained_path(root, rel)
    except ContainmentError:
        return
    inner = real.relative_to(base).parts  # raises if outside the root
    assert inner and not any(p.startswith(".") for p in inner)
    assert real == Path(os.path.realpath(real))


def test_without_openat_the_link_check_comes_before_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where one open would follow links (no openat/O_NOFOLLOW), the real path is checked first."""
    root, outside = tmp_path / "pack", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("zebracanary", encoding="utf-8")
    (root / "docs").symlink_to(outside)
    monkeypatch.setattr(safeopen, "_AT_SUPPORTED", False)
    with pytest.raises(ContainmentError):
        read_contained(root, "docs/secret.md", 1000)


def test_the_walk_skips_a_link_it_cannot_follow_and_says_so(tmp_path: Path) -> None:
    from ep_mcp.packs.files import Warnings, walk_files

    root = tmp_path / "pack"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "loop").symlink_to(root / "loop")
    warnings = Warnings()
    assert walk_files(root.resolve(), warnings) == ["a.md"]
    assert [w.path for w in warnings.items] == ["loop"]


@pytest.mark.parametrize("told", [0, 10, 2_500_000, 3_000_000])
def test_a_file_is_read_whole_whatever_its_size_was_said_to_be(tmp_path: Path, told: int) -> None:
    # the first read is sized by fstat; a file that grew since (told less) is read on
    data = os.urandom(2_500_000)
    (tmp_path / "f.md").write_bytes(data)
    fd = os.open(tmp_path / "f.md", os.O_RDONLY)
    try:
        assert safeopen._read_fd(fd, "f.md", len(data) + 1, None, told) == data
    finally:
        os.close(fd)
    (tmp_path / "empty.md").write_bytes(b"")
    assert read_contained(tmp_path, "empty.md", 100).data == b""
    assert read_contained(tmp_path, "f.md", len(data)).data == data
