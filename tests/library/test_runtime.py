from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import ConfigError, NotFoundError, ReadOnlyIndexError
from ep_mcp.library.opening import open_library
from ep_mcp.packs.reading import find_document


@pytest.mark.parametrize("path", ["./a.md", "./.a.md"])
def test_a_read_takes_a_leading_dot_slash_but_never_strips_dots_off_a_name(
    make_pack, tmp_path: Path, path: str
) -> None:
    root = make_pack({"a.md": "# A\n\nAlpha.\n"})
    settings = Settings(packs=(PackSettings(path=root),), home=tmp_path)
    lib = open_library(settings, tmp_path, build=False, embedder=None)
    try:
        pack = lib.get().pack
        if path == "./.a.md":
            with pytest.raises(NotFoundError, match="is not in pack"):
                find_document(pack, path)
        else:
            assert find_document(pack, path).text == "# A\n\nAlpha.\n"
    finally:
        lib.close()


def test_two_packs_with_one_slug_are_a_config_error_not_a_missing_pack(
    make_pack, tmp_path: Path
) -> None:
    one = make_pack({"a.md": "# A\n\nAlpha.\n"}, "one")
    two = make_pack({"b.md": "# B\n\nBeta.\n"}, "two")
    packs = (PackSettings(path=one, slug="notes"), PackSettings(path=two, slug="notes"))
    settings = Settings(packs=packs, home=tmp_path)
    with pytest.raises(ConfigError, match="two packs share the slug 'notes'") as raised:
        open_library(settings, tmp_path, build=False, embedder=None)
    assert not isinstance(raised.value, NotFoundError) and raised.value.status == 500


def test_indexing_a_pack_served_read_only_is_refused_as_a_conflict(
    make_pack, tmp_path: Path
) -> None:
    root = make_pack({"a.md": "# A\n\nAlpha.\n"})
    built = Settings(packs=(PackSettings(path=root, index_dir=tmp_path / "idx"),), home=tmp_path)
    open_library(built, tmp_path, embedder=None).close()
    kept = PackSettings(path=root, index_dir=tmp_path / "idx", read_only=True)
    lib = open_library(Settings(packs=(kept,), home=tmp_path), tmp_path, build=False, embedder=None)
    try:
        with pytest.raises(ReadOnlyIndexError, match="served read-only") as raised:
            lib.get().index()
        assert not isinstance(raised.value, NotFoundError) and raised.value.status == 409
    finally:
        lib.close()
