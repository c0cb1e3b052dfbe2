"""An artifact says whose it is: a version of another pack is not served or called sound; a
manifest is read under size and depth bounds; every artifact problem is logged once."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings
from ep_mcp.index import artifact
from ep_mcp.index.artifact import ArtifactError
from ep_mcp.library.artifacts import ArtifactWatcher
from ep_mcp.library.opening import open_library
from ep_mcp.library.publish import Published, check_location
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.types import SearchRequest

ORCHARD = {
    "manifest.yaml": "slug: orchard\nname: Orchard\ntype: product\n",
    "pears.md": "# Pears\n\nPrune the pear trees in winter; keyed orchardcanary notes.\n",
}
DEEP = "[" * 100_000 + "]" * 100_000


def _cli(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _point(folder: Path, name: str) -> None:
    tmp = folder / ".current-test"
    os.symlink(name, tmp)
    os.replace(tmp, folder / artifact.CURRENT)


@pytest.fixture
def two(
    garden: Path,
    make_pack: Callable[..., Path],
    tmp_path: Path,
    publish_to: Callable[..., Published],
) -> tuple[Path, Path]:
    """garden's and orchard's current versions, both published to out/."""
    orchard = make_pack(ORCHARD, name="orchard")
    return (
        publish_to(garden, tmp_path / "out").version_dir,
        publish_to(orchard, tmp_path / "out").version_dir,
    )


def _misplace(orchard: Path, garden_folder: Path) -> Path:
    """The wrong rsync: orchard's version copied into garden's folder, current moved to it."""
    copy = garden_folder / orchard.name
    shutil.copytree(orchard, copy)
    _point(garden_folder, orchard.name)
    return copy


@pytest.fixture
def served(two: tuple[Path, Path], tmp_path: Path) -> Iterator[Library]:
    settings = load_settings(
        data={
            "packs": [{"artifact": str(tmp_path / "out" / "garden")}],
            "embedding": {"provider": "hashing"},
            "home": str(tmp_path / "home"),
        }
    )
    lib = open_library(settings, tmp_path / "home")
    yield lib
    lib.close()


def test_check_reports_a_version_of_another_pack_in_a_packs_folder(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    garden, orchard = two
    _misplace(orchard, garden.parent)
    for location in (garden.parent, tmp_path / "out", garden.parent / orchard.name):
        with pytest.raises(ArtifactError, match="is a version of pack 'orchard', not of 'garden'"):
            check_location(location)
        code, out, err = _cli("index", "--check", location)
        assert code == 1 and out == "" and err.count("\n") == 1, err


def test_serve_keeps_the_previous_version_when_current_moves_to_another_packs(
    served: Library, two: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    garden, orchard = two
    watcher = ArtifactWatcher(served, poll_s=0)
    _misplace(orchard, garden.parent)
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            assert watcher.poll() == []
    rt = served.get("garden")
    assert artifact.served_version(rt.config) == garden.name
    hits = rt.search(SearchRequest("prune pear trees orchardcanary", k=5)).hits
    assert "orchardcanary" not in " ".join(h.text for h in hits)
    lines = [r.getMessage() for r in caplog.records if "not served" in r.getMessage()]
    assert len(lines) == 1 and "orchard" in lines[0] and garden.name in lines[0], lines


def test_serve_refuses_another_packs_version_at_start_with_one_line(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    garden, orchard = two
    _misplace(orchard, garden.parent)
    settings = load_settings(
        data={
            "packs": [{"artifact": str(garden.parent), "slug": "garden"}],
            "embedding": {"provider": "hashing"},
        }
    )
    with pytest.raises(ArtifactError, match="version of pack 'orchard'") as err:
        open_library(settings, tmp_path / "home")
    assert "\n" not in str(err.value)


def _deep(version: Path) -> None:
    (version / artifact.MANIFEST).write_text(DEEP, encoding="utf-8")


def _huge(version: Path) -> None:
    """A sound manifest padded to 2 MiB: over the size bound."""
    text = (version / artifact.MANIFEST).read_text(encoding="utf-8")
    (version / artifact.MANIFEST).write_text(text + " " * (2 << 20), encoding="utf-8")


def _linked(version: Path) -> None:
    real = version.parent / "elsewhere.json"
    (version / artifact.MANIFEST).rename(real)
    os.symlink(real, version / artifact.MANIFEST)


@pytest.mark.parametrize(
    ("spoil", "expected"),
    [(_deep, "nested over"), (_huge, "byte limit"), (_linked, "symbolic link")],
)
def test_a_manifest_out_of_bounds_is_one_line_from_check_and_at_start(
    garden: Path,
    tmp_path: Path,
    publish_to: Callable[..., Published],
    spoil: Callable[[Path], None],
    expected: str,
) -> None:
    done = publish_to(garden, tmp_path / "out")
    spoil(done.version_dir)
    code, _, err = _cli("index", "--check", done.version_dir)
    assert code == 1 and err.count("\n") == 1 and expected in err, err
    settings = load_settings(
        data={
            "packs": [{"artifact": str(done.version_dir.parent)}],
            "embedding": {"provider": "hashing"},
        }
    )
    with pytest.raises(ArtifactError, match=expected):
        open_library(settings, tmp_path / "home")


def test_a_running_server_logs_each_artifact_problem_once_not_per_poll(
    served: Library,
    two: tuple[Path, Path],
    tmp_path: Path,
    garden: Path,
    publish_to: Callable[..., Published],
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = two[0].parent
    watcher = ArtifactWatcher(served, poll_s=0)
    with caplog.at_level(logging.INFO):
        (garden / "new.md").write_text("# New\n\nA new note about mulch.\n")
        deep = publish_to(garden, tmp_path / "out").version_dir
        _deep(deep)
        for _ in range(4):
            watcher.poll()
        _point(folder, "../outside")  # a pointer that names no version folder
        for _ in range(4):
            watcher.poll()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("points at" in m for m in messages) == 1, messages
    assert sum("nested over" in m for m in messages) == 1, messages
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
    assert artifact.served_version(served.get("garden").config) == two[0].name
