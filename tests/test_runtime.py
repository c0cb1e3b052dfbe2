from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config import PackSettings, Settings
from ep_mcp.errors import NotFoundError
from ep_mcp.opening import open_library
from ep_mcp.reading import find_document


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
