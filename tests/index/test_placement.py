"""The index location is ep-mcp's: no link a pack brings is followed to an index, only regular
files are indexes, and an index opens only for the pack it records as its owner."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError
from ep_mcp.index import integrity
from ep_mcp.index.owned import owner_in
from ep_mcp.index.placement import OWNER_KEY, IndexPlacementError, beneath
from ep_mcp.index.store import Store
from ep_mcp.library.opening import open_library
from ep_mcp.retrieval.types import SearchRequest

KEYED = {"secret.md": "# Secret\n\nThe vault code is zebracanary nine.\n"}
CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
OPEN = {"garden.md": "# Garden\n\nWater the tomatoes every morning.\n"}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _settings(tmp_path: Path, *packs: dict[str, object]) -> object:
    data = {"packs": list(packs), "embedding": {"provider": "hashing"}}
    return dataclasses.replace(load_settings(data=data), home=tmp_path / "home")


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    """keyed (indexed, its index in keyed/.ep-mcp) and open (not indexed yet)."""
    keyed = _write(tmp_path / "keyed", KEYED)
    open_ = _write(tmp_path / "open", OPEN)
    lib = open_library(_settings(tmp_path, {"path": str(keyed)}), tmp_path / "home")  # type: ignore[arg-type]
    lib.close()
    assert (keyed / ".ep-mcp" / "index.db").is_file()
    return keyed, open_


def _keyed_files(keyed: Path) -> set[str]:
    store = Store(keyed / ".ep-mcp" / "index.db", read_only=True)
    try:
        return set(store.file_states())
    finally:
        store.close()


def _serve_both(tmp_path: Path, keyed: Path, open_: Path, **open_cfg: object) -> object:
    """open first (as in the report), then keyed; both built."""
    settings = _settings(
        tmp_path, {"path": str(open_), "slug": "open", **open_cfg}, {"path": str(keyed)}
    )
    return open_library(settings, tmp_path / "home")  # type: ignore[arg-type]


def _no_keyed_text(lib: object) -> None:
    rt = lib.get("open")  # type: ignore[attr-defined]
    hits = rt.search(SearchRequest("vault code zebracanary", k=5)).hits
    assert not [h for h in hits if "zebracanary" in h.text], hits
    assert "zebracanary" not in " ".join(h.text for h in hits)


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(
            lambda keyed, open_: os.symlink(keyed / ".ep-mcp", open_ / ".ep-mcp"), id="dir"
        ),
        pytest.param(
            lambda keyed, open_: (
                (open_ / ".ep-mcp").mkdir(),
                os.symlink(keyed / ".ep-mcp" / "index.db", open_ / ".ep-mcp" / "index.db"),
            ),
            id="file",
        ),
    ],
)
def test_a_pack_linking_its_index_to_another_packs_never_opens_or_writes_it(
    two: tuple[Path, Path], tmp_path: Path, plant: object, caplog: pytest.LogCaptureFixture
) -> None:
    keyed, open_ = two
    plant(keyed, open_)  # type: ignore[operator]
    with caplog.at_level(logging.WARNING):
        lib = _serve_both(tmp_path, keyed, open_)
    try:
        rt = lib.get("open")  # type: ignore[attr-defined]
        assert (tmp_path / "home") in rt.store.path.parents  # a fresh index in a safe place
        _no_keyed_text(lib)
        assert set(rt.store.file_states()) == {"garden.md"}
    finally:
        lib.close()  # type: ignore[attr-defined]
    assert _keyed_files(keyed) == {"secret.md"}
    warned = [r.getMessage() for r in caplog.records if "symbolic link" in r.getMessage()]
    assert len(warned) == 1 and "open" in warned[0], warned


def test_a_copied_index_of_another_pack_is_left_alone_and_named(
    two: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`cp -r keyed/.ep-mcp open/`: the copy records keyed as its owner."""
    keyed, open_ = two
    shutil.copytree(keyed / ".ep-mcp", open_ / ".ep-mcp")
    with caplog.at_level(logging.WARNING):
        lib = _serve_both(tmp_path, keyed, open_)
    try:
        rt = lib.get("open")  # type: ignore[attr-defined]
        assert (tmp_path / "home") in rt.store.path.parents
        _no_keyed_text(lib)
    finally:
        lib.close()  # type: ignore[attr-defined]
    lines = [r.getMessage() for r in caplog.records if "belongs to pack" in r.getMessage()]
    assert len(lines) == 1, lines
    assert str(keyed) in lines[0] and str(open_) in lines[0]


def test_an_index_dir_holding_another_packs_index_is_refused_naming_both(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    keyed, open_ = two
    with pytest.raises(IndexPlacementError) as err:
        _serve_both(tmp_path, keyed, open_, index_dir=str(keyed / ".ep-mcp"))
    line = str(err.value)
    assert "\n" not in line and str(keyed) in line and str(open_) in line
    assert _keyed_files(keyed) == {"secret.md"}


def test_an_index_dir_holding_another_packs_index_marked_damaged_is_never_rebuilt_by_it(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    """The owner is read before anything may rebuild the index: a damage marker beside
    another pack's index (a crash of its own build, or a plant) does not hand it over."""
    keyed, open_ = two
    index = keyed / ".ep-mcp" / "index.db"
    before = index.read_bytes()
    integrity.mark_damaged(index, "a build was killed")
    with pytest.raises(IndexPlacementError) as err:
        _serve_both(tmp_path, keyed, open_, index_dir=str(keyed / ".ep-mcp"))
    assert str(keyed) in str(err.value) and str(open_) in str(err.value)
    assert integrity.marker(index).is_file()  # left for its owner to act on
    assert index.read_bytes() == before  # not rebuilt, not claimed
    found = owner_in(index)
    assert found is not None and found.slug == "keyed"


def test_two_packs_with_one_index_dir_are_a_config_error_naming_both(tmp_path: Path) -> None:
    a, b = _write(tmp_path / "a", OPEN), _write(tmp_path / "b", KEYED)
    shared = str(tmp_path / "idx")
    settings = _settings(
        tmp_path, {"path": str(a), "index_dir": shared}, {"path": str(b), "index_dir": shared}
    )
    with pytest.raises(ConfigError) as err:
        open_library(settings, tmp_path / "home")  # type: ignore[arg-type]
    assert str(a) in str(err.value) and str(b) in str(err.value)


def test_one_folder_configured_as_two_packs_is_a_config_error(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", OPEN)
    settings = _settings(tmp_path, {"path": str(a), "slug": "one"}, {"path": str(a), "slug": "two"})
    with pytest.raises(ConfigError, match="one index file") as err:
        open_library(settings, tmp_path / "home")  # type: ignore[arg-type]
    assert "'one'" in str(err.value) and "'two'" in str(err.value)


def test_an_index_records_its_owner_and_a_moved_pack_keeps_it(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", OPEN)
    lib = open_library(_settings(tmp_path, {"path": str(a)}), tmp_path / "home")  # type: ignore[arg-type]
    lib.close()
    moved = tmp_path / "renamed"
    a.rename(moved)  # same inode: its .ep-mcp is still its own
    lib = open_library(_settings(tmp_path, {"path": str(moved)}), tmp_path / "home")  # type: ignore[arg-type]
    try:
        store = next(iter(lib)).store
        assert store.path.parent == moved / ".ep-mcp"
        assert str(moved) in (store.get_meta(OWNER_KEY) or "")
    finally:
        lib.close()


# -- only regular files are indexes (problem 6) --------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("creating a device needs root")


PLANTS = {
    "fifo": ("index.db", _fifo),
    "directory": ("index.db", lambda p: p.mkdir()),
    "device": ("index.db", _device),
    "fifo-wal": ("index.db-wal", _fifo),
    "fifo-marker": ("index.db.damaged", _fifo),
}


@pytest.mark.parametrize("command", ["index", "search", "serve"])
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_fifo_device_or_folder_at_the_index_is_refused_at_once(
    tmp_path: Path, plant: str, command: str
) -> None:
    """Each command ends at once with one line; a FIFO used to block it for good (the
    timeout only turns such a hang into a failure: the refusal needs no time)."""
    root = _write(tmp_path / "pack", OPEN)
    (root / ".ep-mcp").mkdir()
    name, make = PLANTS[plant]
    if name != "index.db":  # a sound index first, then the odd file beside it
        subprocess.run(
            [*CLI, "index", str(root), "--provider", "hashing"],
            check=True,
            capture_output=True,
            env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
        )
        for suffix in ("-wal", "-shm"):
            Path(str(root / ".ep-mcp" / "index.db") + suffix).unlink(missing_ok=True)
    make(root / ".ep-mcp" / name)
    args = {
        "index": ["index", str(root), "--provider", "hashing"],
        "search": ["search", str(root), "tomatoes", "--provider", "hashing"],
        "serve": ["serve", str(root), "--provider", "hashing"],
    }[command]
    proc = subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "EP_MCP_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if "not an index file" in line]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_beneath_follows_no_link_below_its_base(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(tmp_path / "elsewhere", base / "sub")
    with pytest.raises(IndexPlacementError, match="symbolic link"):
        beneath(base, ("sub", "index.db"), create=True)
    assert not (tmp_path / "elsewhere" / "index.db").exists()
    linked_base = tmp_path / "linked-base"
    os.symlink(base, linked_base)  # the base itself is the operator's: resolved once
    assert beneath(linked_base, ("new", "index.db"), create=True) == base / "new" / "index.db"


def test_a_damage_marker_is_never_written_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    index = tmp_path / "index.db"
    os.symlink(outside, integrity.marker(index))
    integrity.mark_damaged(index, "corrupt: test")
    assert outside.read_text() == "keep me\n"
