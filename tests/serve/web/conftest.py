"""Packs for the workbench: the example pack, a hostile pack and a keyed copy of it; a saved
evaluation report; a real uvicorn on 127.0.0.1 for the browser and schemathesis."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.config import Settings, load_settings
from workbench_corpus import EXAMPLE, GOLDEN_QUERY, GOLDEN_TOP, HOSTILE, LOCKED_KEY


def copy_example(root: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, root / "example"))


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def settings_for(root: Path, packs: list[dict[str, Any]]) -> Settings:
    data = {
        "packs": packs,
        "embedding": {"provider": "hashing"},
        "server": {"watch": False},
        "retrieval": {"today": "2026-12-01"},
    }
    return dataclasses.replace(load_settings(data=data), home=root / "home")


@pytest.fixture(scope="package")
def wb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workbench")
    copy_example(root)
    write(root / "hostile", HOSTILE)
    write(root / "locked", {"vault.md": "# Vault\n\nThe vault opens with the brass key.\n"})
    return root


def save_reports(root: Path, settings: Settings) -> None:
    """Two evaluation reports of the example pack (a baseline and a later run)."""
    import os

    from ep_mcp.eval.golden import GoldenQuery, GoldenSet
    from ep_mcp.eval.report import build_report, save_report
    from ep_mcp.eval.run import evaluate_golden

    queries = (
        GoldenQuery("ex-1", GOLDEN_QUERY, "natural", (GOLDEN_TOP,)),
        GoldenQuery("ex-2", "fusion weights per intent", "keyword",
                    ("concepts/retrieval-pipeline.md",)),
        GoldenQuery("ex-3", "bake sourdough bread", "negative", ()),
    )  # fmt: skip
    golden = GoldenSet("example", queries)
    reports = evaluate_golden([golden], [root], settings, os.environ, root / "eval-work")
    folder = root / "home" / "reports"
    save_report(build_report(reports, k=10, created="2026-11-30T10:00:00Z", label="before"),
                folder)  # fmt: skip
    save_report(build_report(reports, k=10, created="2026-12-01T10:00:00Z", label="after"),
                folder)  # fmt: skip


@pytest.fixture(scope="package")
def wb_settings(wb_root: Path) -> Settings:
    settings = settings_for(
        wb_root,
        [
            {"path": str(wb_root / "example")},
            {"path": str(wb_root / "hostile"), "slug": "hostile"},
            {"path": str(wb_root / "locked"), "slug": "locked", "api_keys": [LOCKED_KEY]},
        ],
    )
    save_reports(wb_root, settings)
    return settings


@pytest.fixture(scope="package")
def wb_ctx(wb_settings: Settings) -> Iterator[tuple[Any, Any]]:
    from ep_mcp.serve.app import open_context

    serve, ring = open_context(wb_settings, {})
    yield serve, ring
    serve.library.close()


def make_app(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Any:
    from ep_mcp.serve.http_app import create_app

    serve, ring = wb_ctx
    return create_app(serve, wb_settings.server, ring)


@pytest.fixture
def wb_app(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Any:
    """A fresh app (an app's lifespan runs once) over the shared packs."""
    return make_app(wb_ctx, wb_settings)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` on a real uvicorn in a thread; yields its base URL; stops within 10 s."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="package")
def live_url(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Iterator[str]:
    with serving(make_app(wb_ctx, wb_settings)) as url:
        yield url
