"""`ep-mcp index` on an unchanged pack answers from file stats alone — and never misses an edit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import ep_mcp.library.opening
from ep_mcp.cli import main

FILES = {
    "a.md": "---\ntitle: A\n---\n# A\n\nApples and pears.\n",
    "b.md": "# B\n\nBananas and cherries.\n",
}


@pytest.fixture
def pack(make_pack: Callable[[dict[str, str]], Path]) -> Path:
    root = make_pack(FILES)
    age(root)
    return root


def age(root: Path, seconds: float = 600) -> None:
    """Make every file look untouched for a while (a fresh edit is never trusted)."""
    old = time.time_ns() - int(seconds * 1e9)
    for path in root.rglob("*.md"):
        os.utime(path, ns=(old, old))


def index(pack: Path, *extra: str) -> dict[str, object]:
    result = CliRunner().invoke(
        main, ["index", str(pack), "--provider", "hashing", "--json", *extra]
    )
    assert result.exit_code == 0, result.output + result.stderr
    return dict(json.loads(result.stdout))


def forbid_opening(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the pack was opened and parsed")

    monkeypatch.setattr(ep_mcp.library.opening, "open_library", refuse)


def test_an_unchanged_pack_is_reported_current_without_parsing_it(
    pack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = index(pack)
    forbid_opening(monkeypatch)
    second = index(pack)
    assert (first["changed"], first["chunks"]) == (2, 2)
    assert (second["changed"], second["embedded"], second["chunks"]) == (0, 0, 2)
    assert second["pack"] == first["pack"] and second["index"] == first["index"]


def test_warnings_are_repeated_on_a_no_change_run(pack: Path) -> None:
    (pack / "bad.md").write_bytes(b"# Bad\n\xff\xfe\n")
    age(pack)
    first = index(pack)
    second = index(pack)
    assert first["warnings"] == second["warnings"] and len(first["warnings"]) == 1  # type: ignore[arg-type]


def test_an_edit_right_after_a_build_is_never_missed(pack: Path) -> None:
    index(pack)
    path = pack / "b.md"
    path.write_text(path.read_text().replace("Bananas", "Bananaz"), encoding="utf-8")  # same size
    assert index(pack)["changed"] == 1


def test_a_same_size_edit_that_keeps_the_old_mtime_is_seen(pack: Path) -> None:
    index(pack)
    path = pack / "b.md"
    stat = path.stat()
    path.write_text(path.read_text().replace("Bananas", "Bananaz"), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert index(pack)["changed"] == 1


def test_new_and_deleted_files_are_seen(pack: Path) -> None:
    index(pack)
    (pack / "c.md").write_text("# C\n\nCarrots.\n", encoding="utf-8")
    age(pack)
    assert index(pack)["changed"] == 1
    (pack / "a.md").unlink()
    assert index(pack)["removed"] == 1


def test_other_settings_take_the_normal_path(pack: Path) -> None:
    index(pack)
    result = CliRunner().invoke(main, ["index", str(pack), "--provider", "none", "--json"])
    assert json.loads(result.stdout)["rebuilt"] is True


@pytest.fixture
def probe() -> str:
    return (
        "import atexit, sys\n"
        "atexit.register(lambda: print('MODULES', sorted(sys.modules), file=sys.stderr))\n"
        "from ep_mcp.cli import main\n"
        "main()\n"
    )


def test_a_no_change_process_skips_parsing_and_the_model(pack: Path, probe: str) -> None:
    index(pack)
    proc = subprocess.run(
        [sys.executable, "-c", probe, "index", str(pack), "--provider", "hashing"],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "0 changed" in proc.stdout
    modules = proc.stderr.split("MODULES", 1)[1]
    for heavy in ("'onnxruntime'", "'tokenizers'", "'ep_mcp.library.runtime'"):
        assert heavy not in modules


@pytest.mark.parametrize("record", ["not json", "[1, 2]", '{"digest": 5}', "{}"])
def test_a_damaged_fast_path_record_falls_back_to_the_normal_check(pack: Path, record: str) -> None:
    from ep_mcp.index.fastcheck import META_KEY
    from ep_mcp.index.store import Store

    first = index(pack)
    store = Store(Path(str(first["index"])))
    try:
        with store.transaction():
            store.set_meta(META_KEY, record)
    finally:
        store.close()
    second = index(pack)
    assert (second["changed"], second["chunks"]) == (0, 2)


def test_the_snapshot_walk_names_every_file_by_its_pack_relative_path(tmp_path: Path) -> None:
    from ep_mcp.index.fastcheck import _walk

    root = tmp_path / "pack"
    for rel in ("a.md", "sub/b.md", "sub/deeper/c.md", "z/d.txt", ".git/x", "node_modules/y"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel, encoding="utf-8")
    (root / "link.md").symlink_to("a.md")
    (root / "broken.md").symlink_to("missing.md")
    found = dict(_walk(root))
    assert sorted(found) == [
        "a.md",
        "broken.md",
        "link.md",
        "sub/b.md",
        "sub/deeper/c.md",
        "z/d.txt",
    ]
    assert found["broken.md"] is None
    assert found["link.md"] is not None and found["link.md"].st_size == len("a.md")
    for rel, st in found.items():
        if st is not None:
            assert os.stat(root / rel).st_ino == st.st_ino
