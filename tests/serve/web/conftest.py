"""Packs for the workbench: the example pack, a hostile pack and a keyed copy of it; a saved
evaluation report; a real uvicorn on 127.0.0.1 for the browser and schemathesis."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.config.model import Settings
from workbench_support import (
    GOLDEN_QUERY,
    GOLDEN_TOP,
    HOSTILE,
    LOCKED_KEY,
    copy_example,
    serving,
    settings_for,
    write,
)


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

    from ep_mcp.config.env import resolve_environment
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
    lexical = dataclasses.replace(
        settings, embedding=dataclasses.replace(settings.embedding, provider="none")
    )
    folder = root / "home" / "reports"
    for label, created, run_with in (
        ("before: lexical only", "2026-11-30T10:00:00Z", lexical),
        ("after: hybrid", "2026-12-01T10:00:00Z", settings),
    ):
        work = root / "eval-work" / label.split(":")[0]
        reports = evaluate_golden([golden], [root], resolve_environment(run_with, os.environ), work)
        save_report(build_report(reports, k=10, created=created, label=label), folder)


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

    serve, ring = open_context(wb_settings)
    yield serve, ring
    serve.library.close()


def make_app(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Any:
    from ep_mcp.serve.http.app import create_app

    serve, ring = wb_ctx
    return create_app(serve, wb_settings.server, ring)


@pytest.fixture
def wb_app(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Any:
    """A fresh app (an app's lifespan runs once) over the shared packs."""
    return make_app(wb_ctx, wb_settings)


@pytest.fixture(scope="package")
def live_url(wb_ctx: tuple[Any, Any], wb_settings: Settings) -> Iterator[str]:
    with serving(make_app(wb_ctx, wb_settings)) as url:
        yield url
