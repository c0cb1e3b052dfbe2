"""Fixtures for deployment tests: a small pack and a publisher of artifacts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.library.publish import Published, publish

GARDEN = {
    "manifest.yaml": "slug: garden\nname: Garden notes\ntype: product\n",
    "tomatoes.md": "---\ntitle: Growing tomatoes\ntype: howto\ntags: [vegetables]\n---\n"
    "# Growing tomatoes\n\nTomatoes need full sun, deep watering and a sturdy stake.\n",
    "compost.md": "---\ntitle: Making compost\ntype: concept\n---\n# Making compost\n\n"
    "Mix green and brown material; turn the heap monthly so it stays aerobic.\n",
}


def hashing_settings(pack: Path, home: Path, **server: object) -> Settings:
    from ep_mcp.config.model import ServerSettings

    return Settings(
        server=ServerSettings(**server),  # type: ignore[arg-type]
        packs=(PackSettings(path=pack),),
        embedding=EmbeddingSpec(provider="hashing"),
        home=home,
    )


@pytest.fixture
def garden(make_pack: Callable[..., Path]) -> Path:
    root: Path = make_pack(GARDEN, name="garden")
    return root


@pytest.fixture
def publish_to(tmp_path: Path) -> Callable[..., Published]:
    """publish_to(pack, out, force=False): the pack published with the hashing embedder."""

    def run(pack: Path, out: Path, **kwargs: object) -> Published:
        settings = hashing_settings(pack, tmp_path / "home")
        return publish(settings, os.environ, out, **kwargs)  # type: ignore[arg-type]

    return run
