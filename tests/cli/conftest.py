"""Fixtures for the command line: a small pack and a runner for `ep-mcp`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ep_mcp.cli import main

SMALL_PACK = {
    "manifest.yaml": "slug: garden\nname: Garden notes\ntype: product\n",
    "_index.md": "---\ntitle: Index\ntype: index\n---\n# Index\n\n"
    "- [Tomatoes](tomatoes.md)\n- [Compost](compost.md)\n",
    "tomatoes.md": "---\ntitle: Growing tomatoes\ntype: howto\ntags: [vegetables]\n---\n"
    "# Growing tomatoes\n\nTomatoes need full sun, deep watering and a sturdy stake.\n\n"
    "## Pruning\n\nPinch out the side shoots of cordon tomatoes every week.\n",
    "compost.md": "---\ntitle: Making compost\ntype: concept\n---\n# Making compost\n\n"
    "Mix green and brown material; turn the heap monthly so it stays aerobic.\n",
    "bees.md": "---\ntitle: Bees\ntype: concept\n---\n# Bees\n\n"
    "Pollinators such as bumblebees visit lavender and borage.\n",
}


@pytest.fixture
def small_pack(make_pack: Callable[..., Path]) -> Path:
    root: Path = make_pack(SMALL_PACK, name="garden")
    return root


@pytest.fixture
def ep() -> Callable[..., Result]:
    """ep("search", pack, "query", ...) through click's runner (stdout and stderr apart)."""

    def run(*args: Any) -> Result:
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    return run


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)
