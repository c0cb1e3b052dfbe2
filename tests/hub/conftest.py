"""Real git repositories on disk, a hub over a temp home, and fake outside tools on PATH."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import shared_path
from ep_mcp.config.model import HubSettings, Settings
from ep_mcp.hub.git import Git
from ep_mcp.hub.hub import SkillHub
from ep_mcp.index.embed import HashingEmbedder

from .helpers import SMALL_REPO, write_tree


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """A real git repository at tmp/src/<owner>/<repo> holding ``files`` (one commit)."""

    def make(
        files: dict[str, str] | None = None,
        owner: str = "acme",
        repo: str = "skills",
        copy_from: Path | None = None,
    ) -> Path:
        root = tmp_path / "src" / owner / repo
        if copy_from is not None:
            shutil.copytree(copy_from, root)
        write_tree(root, files if files is not None else ({} if copy_from else SMALL_REPO))
        Git(os.environ).init_commit(root, "initial")
        return root

    return make


@pytest.fixture
def obra_repo(make_repo: Callable[..., Path]) -> Path:
    src = shared_path("skills", "obra-superpowers")
    return make_repo(owner="obra", repo="superpowers", copy_from=src)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def make_hub(home: Path) -> Iterator[Callable[..., SkillHub]]:
    hubs: list[SkillHub] = []

    def make(
        env: dict[str, str] | None = None,
        embedder: object = None,
        llm: object = None,
        **skills: object,
    ) -> SkillHub:
        settings = dataclasses.replace(
            Settings(), home=home, hub=dataclasses.replace(HubSettings(), **skills)
        )
        hub = SkillHub(
            settings, env if env is not None else dict(os.environ), embedder=embedder, llm=llm
        )  # type: ignore[arg-type]
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        hub.close()


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(64)


@pytest.fixture
def fake_bin(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write an executable shell script into a temp bin folder; returns the folder."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)

    def add(name: str, script: str) -> Path:
        path = folder / name
        path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return folder

    return add
