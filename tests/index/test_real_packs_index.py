"""`ep-mcp index` on every shared pack and skills repository (read-only folders)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import shared_path
from ep_mcp.cli import main
from ep_mcp.config.model import PackSettings, Settings, default_home
from ep_mcp.library.opening import open_library
from ep_mcp.retrieval.types import SearchRequest

TARGETS = [
    ("packs", "blender-3d"),
    ("packs", "solar-diy"),
    ("packs", "home-assistant"),
    ("skills", "anthropics-skills"),
    ("skills", "obra-superpowers"),
]


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """copy(folder) → a copy of it with no write bit anywhere, as ../shared is meant to be.
    The shared folder itself is never indexed in place: where it happens to be writable the
    index would land inside it (``.ep-mcp/``)."""
    copies: list[Path] = []

    def copy(folder: Path) -> Path:
        root = tmp_path / folder.name
        shutil.copytree(folder, root, symlinks=True)
        for path in sorted(root.rglob("*"), reverse=True):
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~0o222)
        root.chmod(root.stat().st_mode & ~0o222)
        copies.append(root)
        return root

    yield copy
    for root in copies:  # writable again, so the temp folder can be removed
        for path in [root, *root.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.parametrize(("group", "name"), TARGETS, ids=[n for _, n in TARGETS])
def test_a_shared_folder_indexes_into_the_user_data_dir_with_clean_hits(
    group: str, name: str, read_only_copy: Callable[[Path], Path]
) -> None:
    root = read_only_copy(shared_path(group, name))
    result = CliRunner().invoke(main, ["index", str(root), "--provider", "hashing", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    home = default_home(os.environ)
    assert Path(report["index"]).is_relative_to(home / "indexes")
    assert report["chunks"] > 0

    settings = Settings(packs=(PackSettings(path=root, read_only=True),), home=home)
    lib = open_library(settings, home, build=False, embedder=None)
    try:
        rt = lib.get()
        indexed = {f.path for f in rt.store.files()}
        navigation = {d.path for d in rt.pack.documents if d.navigation}
        assert indexed and not indexed & navigation
        for doc in rt.pack.documents:
            if doc.sidecar is None or doc.navigation:
                continue
            stored = [c.chunk.line_range for c in rt.store.chunks_for_path(doc.path)]
            declared = [c.line_range for c in sorted(doc.sidecar.chunks, key=lambda c: c.order)]
            assert stored and set(stored) <= set(declared), doc.path
        title = rt.pack.documents[0].title
        hits = rt.search(SearchRequest(query=title or name, k=10)).hits
        assert hits and not {h.source_file for h in hits} & navigation
    finally:
        lib.close()
