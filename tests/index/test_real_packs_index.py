"""`ep-mcp index` on every shared pack and skills repository (read-only folders)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import shared_path
from ep_mcp.cli import main
from ep_mcp.config import PackSettings, Settings, default_home
from ep_mcp.opening import open_library
from ep_mcp.retrieval.types import SearchRequest

TARGETS = [
    ("packs", "blender-3d"),
    ("packs", "solar-diy"),
    ("packs", "home-assistant"),
    ("skills", "anthropics-skills"),
    ("skills", "obra-superpowers"),
]


@pytest.mark.parametrize(("group", "name"), TARGETS, ids=[n for _, n in TARGETS])
def test_a_shared_folder_indexes_into_the_user_data_dir_with_clean_hits(
    group: str, name: str
) -> None:
    root = shared_path(group, name)
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
