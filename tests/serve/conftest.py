"""Two small packs (one keyed), a secret outside them, and a ServeContext over them."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ep_mcp.config.env import resolve_environment
from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings
from ep_mcp.serve.auth import KeyRing

SECRET = "TOP-SECRET-CANARY-7f3a"

ALPHA = {
    "manifest.yaml": """\
slug: alpha
name: Alpha Pack
type: product
description: Alpha documents routers and ports.
context:
  always: [overview.md]
  on_demand: [private/notes.md]
mcp:
  instructions: Search alpha before answering router questions.
  prompts:
    - name: diagnose
      description: Diagnose a router problem.
      source: howto/diagnose.md
  skills:
    enabled: true
authority_boundary:
  in_scope: Routers and ports.
  out_of_scope: [Cooking]
  no_source_no_claim: true
""",
    "overview.md": "---\ntitle: Overview\ntype: concept\nid: alpha/overview\n---\n"
    "# Overview\n\nAlpha explains routers. See [[concepts/routing]].\n",
    "concepts/routing.md": """\
---
title: Routing
type: concept
id: alpha/concepts/routing
tags: [network]
requires: [concepts/ports.md]
---
# Routing

Routing moves packets between networks.

## Setup

Configure the routing table first.

### Ports

Open port 8080 for the admin console.

## Troubleshooting

Check the cable, then the routing table.
""",
    "concepts/ports.md": "---\ntitle: Ports\ntype: concept\nid: alpha/concepts/ports\n"
    "related: [concepts/routing.md]\n---\n# Ports\n\n"
    "A port number identifies a service; 8080 is the admin port.\n",
    "howto/diagnose.md": "---\ntitle: Diagnose\ntype: workflow\n---\n# Diagnose\n\n"
    "1. Search for the symptom.\n2. Read the atom.\n",
    "_index.md": "# Index\n\n- overview.md\n",
    "private/notes.md": "# Notes\n\nOn-demand notes about the quarterly router audit.\n",
}

BETA = {
    "gardening.md": "# Gardening\n\nWater tomatoes every morning in summer.\n",
    "compost.md": "# Compost\n\nCompost needs greens, browns, air and water.\n",
}


def write_pack(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def create_packs(tmp_path: Path) -> dict[str, Path]:
    """alpha (ExpertPack, skills on), beta (plain markdown), and secrets beside them."""
    alpha = write_pack(tmp_path / "alpha", ALPHA)
    beta = write_pack(tmp_path / "beta", BETA)
    (tmp_path / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    write_pack(tmp_path / "alpha-private", {"s.md": f"# S\n\n{SECRET}\n"})
    (alpha / "escape.md").symlink_to(tmp_path / "secret.md")
    return {"alpha": alpha, "beta": beta, "root": tmp_path}


@pytest.fixture(scope="module")
def packs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Shared by a module's tests: never modify these (use `fresh_packs`)."""
    return create_packs(tmp_path_factory.mktemp("packs"))


@pytest.fixture
def fresh_packs(tmp_path: Path) -> dict[str, Path]:
    return create_packs(tmp_path)


def make_settings(
    packs: dict[str, Path], *, alpha_keys: tuple[str, ...] = (), **server: object
) -> Settings:
    data = {
        "packs": [
            {"path": str(packs["alpha"]), "api_keys": list(alpha_keys)},
            {"path": str(packs["beta"]), "slug": "beta"},
        ],
        "embedding": {"provider": "hashing"},
        "server": {"watch": False, **server},
    }
    settings = load_settings(data=data)
    home = packs["root"] / "home" if "root" in packs else Path(os.environ["EP_MCP_HOME"])
    return dataclasses.replace(settings, home=home)


@pytest.fixture
def settings_for() -> object:
    """`make_settings` as a fixture (test modules cannot import conftest)."""
    return make_settings


@pytest.fixture(scope="module")
def serve_ctx(packs: dict[str, Path]) -> Iterator[tuple[object, KeyRing]]:
    """A ServeContext over both packs; alpha needs key `sk-alpha`, beta `sk-beta` (env)."""
    from ep_mcp.serve.app import open_context

    settings = make_settings(packs, alpha_keys=("sk-alpha",))
    serve, ring = open_context(resolve_environment(settings, {"EP_MCP_KEY_BETA": "sk-beta"}))
    yield serve, ring
    serve.library.close()


@pytest.fixture(scope="module")
def open_ctx(packs: dict[str, Path]) -> Iterator[object]:
    """A ServeContext over both packs with no keys."""
    from ep_mcp.serve.app import open_context

    serve, _ = open_context(make_settings(packs))
    yield serve
    serve.library.close()
