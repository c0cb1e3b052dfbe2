"""A pack full of bad files still loads its good ones, with one warning per bad file."""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path

import pytest

from ep_mcp.packs import files
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.safeopen import FileBytes

from .conftest import Writer
from .test_yamlsafe import BOMB

GOOD = "---\ntitle: Good\ntype: concept\n---\n# Good\ntext\n"
EXPECTED = {
    "bomb.md": "expand",
    "deep.md": "nested deeper",
    "bad-utf8.md": "not valid UTF-8",
    "binary.md": "binary",
    "huge.md": "limit",
    "escape.md": "outside the pack",
    "escape-dir": "outside the pack",
    "dangling.md": "outside the pack (or is broken)",
    "bad\ufffd.md": "not valid UTF-8",
    "fifo.md": "not a regular file",
    "bad-yaml.md": "indexed without frontmatter",
}


@pytest.fixture
def hostile(write: Writer, tmp_path: Path) -> Path:
    root = write("good.md", GOOD)
    write("sub/good2.md", "# Second\n")
    write("bomb.md", f"---\n{BOMB}---\n# Bomb\n")
    write("deep.md", "---\nx: " + "[" * 30_000 + "]" * 30_000 + "\n---\n# Deep\n")
    write("bad-yaml.md", "---\ntitle: [oops\n---\n# Still Here\nbody\n")
    write("bad-utf8.md", b"# Bad\n\xff\xfe text\n")
    write("binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write("huge.md", "# Huge\n" + "x" * 200_000)
    write(".git/ignored.md", "# hidden\n")
    write("node_modules/pkg/README.md", "# vendored\n")
    write(".ep-mcp/cache.md", "# ours\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n", encoding="utf-8")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "escape-dir").symlink_to(outside, target_is_directory=True)
    (root / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (root / "inside-link.md").symlink_to(root / "good.md")
    fd = os.open(os.fsencode(root) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    os.mkfifo(root / "fifo.md")
    return root


def test_a_hostile_pack_loads_its_good_files(hostile: Path) -> None:
    pack = load_pack(hostile, max_file_bytes=100_000)
    paths = {doc.path for doc in pack.documents}
    assert paths == {"good.md", "sub/good2.md", "bad-yaml.md", "inside-link.md"}


def test_a_hostile_pack_warns_once_per_bad_file_with_the_reason(hostile: Path) -> None:
    pack = load_pack(hostile, max_file_bytes=100_000)
    counts = Counter(w.path for w in pack.warnings)
    assert counts == Counter(EXPECTED.keys())
    for warning in pack.warnings:
        assert EXPECTED[warning.path] in warning.message
        warning.path.encode("utf-8")  # safe to store in SQLite


def test_each_warning_is_logged(hostile: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ep_mcp.packs"):
        pack = load_pack(hostile, max_file_bytes=100_000)
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert logged == [str(w) for w in pack.warnings]


def test_bad_frontmatter_yaml_keeps_the_body_with_empty_metadata(hostile: Path) -> None:
    doc = load_pack(hostile, max_file_bytes=100_000).document("bad-yaml.md")
    assert doc is not None
    assert doc.meta == {}
    assert doc.title == "Still Here"
    assert doc.body.startswith("# Still Here")


def test_an_unreadable_file_is_skipped_with_a_warning(
    write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write("ok.md", "# Ok\n")
    write("locked.md", "# Locked\n")
    real_read = files.read_contained

    def fake_read(root: Path, rel: str, limit: int, **options: bool) -> FileBytes:
        if rel == "locked.md":
            raise PermissionError(13, "Permission denied", rel)
        return real_read(root, rel, limit, **options)

    monkeypatch.setattr(files, "read_contained", fake_read)
    pack = load_pack(root)
    assert [d.path for d in pack.documents] == ["ok.md"]
    assert [str(w) for w in pack.warnings] == [
        "locked.md: cannot read file: Permission denied — skipped; check permissions"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_a_chmod_000_file_is_skipped(write: Writer) -> None:
    root = write("ok.md", "# Ok\n")
    write("locked.md", "# Locked\n")
    (root / "locked.md").chmod(0)
    try:
        pack = load_pack(root)
    finally:
        (root / "locked.md").chmod(0o644)
    assert [d.path for d in pack.documents] == ["ok.md"]
    assert "Permission denied" in pack.warnings[0].message


def test_a_bom_is_dropped_and_frontmatter_still_found(write: Writer) -> None:
    root = write("a.md", "\ufeff---\ntitle: Bom\n---\nbody\n".encode())
    doc = load_pack(root).document("a.md")
    assert doc is not None and doc.title == "Bom"
