"""The auth battery's link dimension: what a pack folder or an artifact folder brings as a link
(``.ep-mcp``, ``index.db``, an ``index_dir``, a version folder, its snapshot) never lets the
open pack answer with the keyed pack's content. Each setup is either refused at start with one
line, or served — and then the battery's probes find 0 leaks."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.config.env import resolve_environment
from ep_mcp.config.load import load_settings
from ep_mcp.config.model import PackSettings, ServerSettings, Settings
from ep_mcp.errors import EpMcpError
from ep_mcp.index import artifact
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.library.publish import publish

from .test_auth_matrix import (
    ALPHA_MARKERS,
    CREDENTIALS,
    asgi_request,
    calls,
    leaks,
    rpc,
    run_app,
)


def _settings(packs: list[dict[str, Any]], home: Path) -> Settings:
    data = {"packs": packs, "embedding": {"provider": "hashing"}, "server": {"watch": False}}
    return dataclasses.replace(load_settings(data=data), home=home)


def _open(settings: Settings) -> tuple[Any, Any]:
    from ep_mcp.serve.app import open_context

    return open_context(resolve_environment(settings, {}))


def _index_alpha(packs: dict[str, Path]) -> Path:
    """alpha indexed alone first: its index sits in alpha/.ep-mcp."""
    serve, _ = _open(_settings([{"path": str(packs["alpha"])}], packs["root"] / "home"))
    serve.library.close()
    return packs["alpha"] / ".ep-mcp"


def _plain(packs: dict[str, Path], beta: dict[str, Any]) -> Settings:
    """beta (open) first, as in the report, then alpha (keyed)."""
    return _settings(
        [
            {"path": str(packs["beta"]), "slug": "beta", **beta},
            {"path": str(packs["alpha"]), "api_keys": ["sk-alpha"]},
        ],
        packs["root"] / "home",
    )


def ep_mcp_link(packs: dict[str, Path]) -> Settings:
    os.symlink(_index_alpha(packs), packs["beta"] / ".ep-mcp")
    return _plain(packs, {})


def index_db_link(packs: dict[str, Path]) -> Settings:
    alpha_index = _index_alpha(packs) / "index.db"
    (packs["beta"] / ".ep-mcp").mkdir()
    os.symlink(alpha_index, packs["beta"] / ".ep-mcp" / "index.db")
    return _plain(packs, {})


def index_dir_link(packs: dict[str, Path]) -> Settings:
    link = packs["root"] / "beta-index"
    os.symlink(_index_alpha(packs), link)
    return _plain(packs, {"index_dir": str(link)})


def index_dir_holding_a_link(packs: dict[str, Path]) -> Settings:
    folder = packs["root"] / "beta-index"
    folder.mkdir()
    os.symlink(_index_alpha(packs) / "index.db", folder / "index.db")
    return _plain(packs, {"index_dir": str(folder)})


def _published(packs: dict[str, Path]) -> tuple[Path, Path]:
    """alpha and beta published as artifacts; their current version folders."""
    out = packs["root"] / "out"
    done = {}
    for name in ("alpha", "beta"):
        settings = Settings(
            server=ServerSettings(),
            packs=(PackSettings(path=packs[name], slug=name),),
            embedding=EmbeddingSpec(provider="hashing"),
            home=packs["root"] / "home",
        )
        done[name] = publish(settings, os.environ, out).version_dir
    return done["alpha"], done["beta"]


def _artifacts(packs: dict[str, Path]) -> Settings:
    out = packs["root"] / "out"
    return _settings(
        [
            {"artifact": str(out / "beta"), "slug": "beta"},
            {"artifact": str(out / "alpha"), "api_keys": ["sk-alpha"]},
        ],
        packs["root"] / "home",
    )


def _point(folder: Path, name: str) -> None:
    (folder / artifact.CURRENT).unlink()
    os.symlink(name, folder / artifact.CURRENT)


def artifact_version_copied(packs: dict[str, Path]) -> Settings:
    """The wrong rsync: alpha's version folder copied into beta's, current moved to it."""
    alpha, beta = _published(packs)
    shutil.copytree(alpha, beta.parent / alpha.name, symlinks=True)
    _point(beta.parent, alpha.name)
    return _artifacts(packs)


def artifact_version_link(packs: dict[str, Path]) -> Settings:
    alpha, beta = _published(packs)
    os.symlink(alpha, beta.parent / alpha.name)
    _point(beta.parent, alpha.name)
    return _artifacts(packs)


def artifact_dir_link(packs: dict[str, Path]) -> Settings:
    """beta's artifact folder itself a link to alpha's (configured by path, slug beta)."""
    alpha, beta = _published(packs)
    shutil.rmtree(beta.parent)
    os.symlink(alpha.parent, beta.parent)
    return _artifacts(packs)


def artifact_parts_linked(packs: dict[str, Path]) -> Settings:
    """beta's version keeps its own manifest, but its snapshot and index lead to alpha's
    (a manifest rewritten to match them: the manifest is data the folder brings)."""
    alpha, beta = _published(packs)
    for part in (artifact.SNAPSHOT, artifact.INDEX):
        target = beta / part
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        os.symlink(alpha / part, target)
    forged = artifact.read_manifest(alpha)
    artifact.write_manifest(beta, dataclasses.replace(forged, slug="beta", version=beta.name))
    return _artifacts(packs)


SETUPS: dict[str, Callable[[dict[str, Path]], Settings]] = {
    f.__name__: f
    for f in (
        ep_mcp_link,
        index_db_link,
        index_dir_link,
        index_dir_holding_a_link,
        artifact_version_copied,
        artifact_version_link,
        artifact_dir_link,
        artifact_parts_linked,
    )
}
SERVED = {"ep_mcp_link", "index_db_link"}  # the pack's own folder: a fresh index elsewhere

BETA_CALLS: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "tools/call",
        {"name": "ep_search", "arguments": {"query": "routing moves packets"}},
        "ep_search",
    ),
    (
        "tools/call",
        {"name": "ep_search", "arguments": {"query": "router port admin", "pack": "beta"}},
        "ep_search",
    ),
    ("tools/call", {"name": "ep_list_topics", "arguments": {"pack": "beta"}}, "ep_list_topics"),
    (
        "tools/call",
        {"name": "ep_read", "arguments": {"path": "concepts/routing.md", "pack": "beta"}},
        "ep_read",
    ),
    ("resources/list", {}, None),
    ("resources/read", {"uri": "ep://beta/manifest"}, "ep://beta/manifest"),
]
SEARCHES = [
    "/search?q=routing+moves+packets&pack=beta",
    "/search?q=routing+moves+packets",
    "/search?q=admin+console+port+8080&pack=beta",
    "/packs",
]


def _leaked(out: bytes, asked: str) -> list[str]:
    """Alpha's markers in a response, but for those the request itself carried (an echo)."""
    asked = asked.replace("+", " ")
    return [m for m in leaks(out, ALPHA_MARKERS) if m not in asked]


async def _probe(app: Any) -> tuple[int, list[Any]]:
    found: list[Any] = []
    count = 0
    for cred_name in ("none", "wrong", "malformed"):
        cred = CREDENTIALS[cred_name]
        for target in SEARCHES:
            status, out = await asgi_request(app, "GET", target, cred)
            count += 1
            assert status < 500, (target, out[:300])
            if _leaked(out, target):
                found.append((cred_name, target, _leaked(out, target)))
        probes = [(m, p, n, mo) for m, p, n in BETA_CALLS for mo in (False, True)] + calls()
        for path in ("/mcp", "/packs/beta/mcp"):
            for method, params, name, modern in probes:
                headers, body = rpc(method, params, name, modern)
                status, out = await asgi_request(app, "POST", path, headers + cred, body)
                count += 1
                assert status < 500, (path, method, out[:300])
                if _leaked(out, json.dumps(params)):
                    found.append((cred_name, path, method, _leaked(out, json.dumps(params))))
    return count, found


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_a_linked_index_or_artifact_never_shows_the_keyed_pack_through_the_open_one(
    fresh_packs: dict[str, Path], setup: str
) -> None:
    settings = SETUPS[setup](fresh_packs)
    try:
        serve, ring = _open(settings)
    except EpMcpError as exc:  # refused at start: one line, naming what was refused
        assert setup not in SERVED, exc
        assert "\n" not in str(exc) and str(exc)
        return
    try:
        count, found = run_app(serve, ring, _probe)
        assert count > 250
        assert not found, found[:5]
        assert setup in SERVED, f"{setup}: served, expected a refusal"
        assert "alpha" in serve.library.runtimes  # the keyed pack is served beside it
    finally:
        serve.library.close()


def test_the_battery_sees_a_leak_when_the_open_pack_serves_the_keyed_index(
    fresh_packs: dict[str, Path],
) -> None:
    """The positive control: beta configured (by the operator) onto alpha's own index, read
    only and with the owner check out of the way, does answer with alpha's text."""
    from ep_mcp.index.placement import OWNER_KEY
    from ep_mcp.index.store import Store

    index = _index_alpha(fresh_packs) / "index.db"
    store = Store(index)
    with store.transaction():
        store.set_meta(OWNER_KEY, "")
    store.close()
    settings = _plain(fresh_packs, {"index_dir": str(index.parent), "read_only": True})
    settings = dataclasses.replace(settings, packs=settings.packs[:1])
    serve, ring = _open(settings)
    try:
        _, found = run_app(serve, ring, _probe)
        assert found
    finally:
        serve.library.close()
