"""Running evaluations through the real runtime: open (and cache) each pack's index, ask, score."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from ep_mcp.config.model import IndexEngine, PackSettings, Settings
from ep_mcp.eval.golden import (
    GoldenSet,
    PackReport,
    find_pack,
    run_set,
    select_split,
    with_refusals,
)
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.index.pgload import load_into_postgres
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.types import SearchRequest

logger = logging.getLogger(__name__)


def open_runtime(
    folder: Path,
    settings: Settings,
    embedder: Embedder | None,
    work: Path,
    *,
    kind: str | None = None,
    slug: str | None = None,
    build: bool = True,
    index_dir: Path | None = None,
) -> PackRuntime:
    """A runtime for ``folder`` whose index lives in ``work/<folder name>`` (reused next time)."""
    cfg = PackSettings(
        path=folder.resolve(),
        kind=kind,
        slug=slug,
        index_dir=index_dir or work / (slug or folder.name),
    )
    rt = PackRuntime(cfg, settings, embedder, work)
    if build:
        rt.index(show_progress=False)
    return rt


def open_served(
    folder: Path, settings: Settings, embedder: Embedder | None, work: Path
) -> PackRuntime:
    """``open_runtime`` (built), served by ``settings``' engine: with postgres, the SQLite index
    built in ``work`` is loaded into ``index.dsn`` and a runtime serving that version returned."""
    if settings.index.engine != IndexEngine.POSTGRES:
        return open_runtime(folder, settings, embedder, work)
    sqlite = dataclasses.replace(settings.index, engine=IndexEngine.SQLITE)
    built = open_runtime(folder, dataclasses.replace(settings, index=sqlite), embedder, work)
    return served_from_postgres(built, settings)


def served_from_postgres(rt: PackRuntime, settings: Settings) -> PackRuntime:
    """``rt``'s SQLite index loaded into PostgreSQL, and a runtime serving that version
    (``rt`` is closed)."""
    index, embedder, home, config = rt.sqlite.path, rt.embedder, rt.home, rt.config
    rt.close()
    load_into_postgres(settings, index, config.slug or rt.slug)
    return PackRuntime(config, settings, embedder, home)


def evaluate_golden(
    sets: Sequence[GoldenSet],
    roots: Sequence[Path],
    settings: Settings,
    work: Path,
    *,
    k: int = 10,
    embedder: Embedder | str | None = "auto",
    split: str = "all",
) -> list[PackReport]:
    """Every golden set against its pack (found under ``roots``), indexes cached in ``work``.

    The pack's own refusals (``refusals:``) join each set before ``split`` (dev, test or all)
    picks the queries. With ``index.engine: postgres`` each pack is built in SQLite (the build
    format, cached in ``work`` as always), loaded into the server of ``index.dsn`` as its
    current version, and the queries are answered from there."""
    emb = make_embedder(settings) if embedder == "auto" else embedder
    reports = []
    for golden in sets:
        folder = find_pack(golden.pack, roots)
        golden = select_split(with_refusals(golden, folder), split)
        rt = open_served(folder, settings, emb if not isinstance(emb, str) else None, work)
        try:

            def answer(query: str, rt: PackRuntime = rt) -> list[str]:
                result = rt.search(SearchRequest(query=query, k=k))
                return [h.source_file for h in result.hits]

            skills = dict(rt.view.skill_of)

            def unit_of(path: str, skills: dict[str, str] = skills) -> str:
                return skills.get(path, path)

            reports.append(run_set(golden, answer, unit_of))
        finally:
            rt.close()
    return reports
