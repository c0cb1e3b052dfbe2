"""`EP_MCP_KEY_{SLUG}_FILE` and `EP_MCP_HUB_KEY_FILE` add their keys to the plain variable's:
with both set, every key of both opens (a rotation keeps the old key working beside the new)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config.env import resolve_environment
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.serve.auth import KeyRing


@pytest.mark.parametrize("file_first", [False, True], ids=["plain first", "file first"])
def test_a_key_file_adds_to_the_plain_variables_keys(tmp_path: Path, file_first: bool) -> None:
    pack_keys = tmp_path / "alpha-keys"
    pack_keys.write_text("sk-file-1\nsk-file-2, sk-file-3\n", encoding="utf-8")
    hub_keys = tmp_path / "hub-keys"
    hub_keys.write_text("sk-hub-file\n", encoding="utf-8")
    plain = {"EP_MCP_KEY_ALPHA": "sk-plain-1,sk-plain-2", "EP_MCP_HUB_KEY": "sk-hub-plain"}
    files = {"EP_MCP_KEY_ALPHA_FILE": str(pack_keys), "EP_MCP_HUB_KEY_FILE": str(hub_keys)}
    env = {**files, **plain} if file_first else {**plain, **files}
    settings = resolve_environment(Settings(packs=(PackSettings(path=tmp_path),)), env)
    ring = KeyRing.build({"alpha": ["sk-config"]}, (), settings.env_keys)
    for key in ("sk-config", "sk-plain-1", "sk-plain-2", "sk-file-1", "sk-file-2", "sk-file-3"):
        assert ring.opens(key.encode()) == {"alpha"}, key
    for key in ("sk-hub-plain", "sk-hub-file"):
        assert ring.access(key.encode(), ["alpha"], hub=True).hub, key
    assert ring.opens(b"sk-hub-file") == frozenset()
