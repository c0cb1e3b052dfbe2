from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config import PackSettings, Settings
from ep_mcp.errors import NotFoundError
from ep_mcp.runtime import open_library


@pytest.mark.parametrize("path", ["./a.md", "./.a.md"])
def test_read_raw_takes_a_leading_dot_slash_but_never_strips_dots_off_a_name(
    make_pack, tmp_path: Path, path: str
) -> None:
    root = make_pack({"a.md": "# A\n\nAlpha.\n"})
    settings = Settings(packs=(PackSettings(path=root),), home=tmp_path)
    lib = open_library(settings, tmp_path, build=False, embedder=None)
    try:
        rt = lib.get()
        if path == "./.a.md":
            with pytest.raises(NotFoundError, match="not a file of pack"):
                rt.read_raw(path)
        else:
            assert rt.read_raw(path) == "# A\n\nAlpha.\n"
    finally:
        lib.close()
