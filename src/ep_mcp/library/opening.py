"""Open a library: load every configured pack and build or update its index.

`open_library` builds at once (the CLI, benchmarks, the HTTP parent of workers) or leaves the
build to `finish_build` (``build="later"``: `serve` answers its handshake meanwhile, and tools
wait for ``Library.readiness``). An index found damaged while it is updated is rebuilt once.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Literal

from ep_mcp.config.model import IndexEngine, PackSettings, Settings
from ep_mcp.errors import (
    BuildStopped,
    ConfigError,
    DiskFullError,
    EpMcpError,
    IndexBuildError,
    IndexDamagedError,
)
from ep_mcp.index.embed.base import Embedder, query_cost
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.index.store import Store
from ep_mcp.library.runtime import Library, PackRuntime, Readiness, retry_reopened
from ep_mcp.packs.loader import empty_pack_message
from ep_mcp.retrieval.source import LegExecutors

logger = logging.getLogger(__name__)


def open_library(
    settings: Settings,
    home: Path,
    *,
    build: bool | Literal["later"] = True,
    show_progress: bool | None = None,
    embedder: Embedder | str | None = "auto",
    words_first: bool | None = False,
    say_empty: bool = True,
) -> Library:
    """Load every configured pack, open (and by default update) its index. ``settings`` come
    resolved from the edge (`config_env.resolve_environment`); ``words_first`` leaves new
    vectors pending for the server's backfill (serve at once, improve later) — None: when
    embedding costs more than pure-Python work (a model, a remote provider). ``build="later"``
    opens every pack without updating its index: `finish_build` does that (the
    server answers its handshake meanwhile; tools wait for ``Library.readiness``). A pack with
    no markdown file is a warning (``say_empty``: `ep-mcp index` says it itself)."""
    emb: Embedder | None = make_embedder(settings) if embedder == "auto" else embedder  # type: ignore[assignment]
    runtimes: dict[str, PackRuntime] = {}
    lost: list[IndexDamagedError] = []
    _one_index_each(settings.packs)
    executors, how = LegExecutors.start(), (build, _words_first_for(emb, words_first))
    files: dict[tuple[int, int], PackRuntime] = {}
    try:
        for cfg in settings.packs:
            try:
                rt = _open_pack(cfg, settings, emb, home, how, show_progress, executors)
            except IndexDamagedError as exc:  # several packs: serve the others without this one
                if len(settings.packs) == 1:
                    raise
                logger.error("%s — serving the other packs without it", exc)
                lost.append(exc)
                continue
            same = _shared_index(rt, files)
            if same is not None:
                rt.close()
                raise ConfigError(
                    f"packs '{same.slug}' ({same.pack.root}) and '{rt.slug}' ({rt.pack.root}) "
                    f"resolve to one index file, {rt.sqlite.path} — give each its own index_dir"
                )
            if rt.slug in runtimes:  # a config to fix, like the shared index file above
                raise ConfigError(
                    f"two packs share the slug '{rt.slug}' — set `slug` for one of them"
                )
            runtimes[rt.slug] = rt
            if say_empty and not rt.pack.documents:
                logger.warning("pack '%s': %s", rt.slug, empty_pack_message(rt.pack.root))
        if not runtimes and lost:
            raise lost[0]
    except BaseException:
        for opened in runtimes.values():
            opened.close()
        executors.close()
        raise
    library = Library(settings, runtimes, emb, executors)
    if build == "later" and any(not rt.config.read_only for rt in runtimes.values()):
        library.readiness = Readiness(threading.Event())
        for rt in runtimes.values():
            rt.building.indexing = not rt.config.read_only
    return library


def _one_index_each(packs: tuple[PackSettings, ...]) -> None:
    """Two configured packs with one ``index_dir`` are a config error naming both."""
    seen: dict[str, PackSettings] = {}
    for cfg in packs:
        if cfg.index_dir is None or cfg.artifact is not None:
            continue
        key = os.path.realpath(cfg.index_dir)
        if key in seen:
            first = seen[key]
            raise ConfigError(
                f"packs {first.slug or first.path} and {cfg.slug or cfg.path} both use the "
                f"index_dir {key} — one index belongs to one pack: give each its own"
            )
        seen[key] = cfg


def _shared_index(rt: PackRuntime, files: dict[tuple[int, int], PackRuntime]) -> PackRuntime | None:
    """The runtime already opened on the same index file as ``rt`` (a hard link, the same
    folder configured twice), else None after noting ``rt``'s file."""
    try:
        if not isinstance(rt.store, Store):
            return None  # a served version on a server: no file to share
        st = os.stat(rt.store.path)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino)
    if key in files:
        return files[key]
    files[key] = rt
    return None


def _open_pack(
    cfg: PackSettings,
    settings: Settings,
    embedder: Embedder | None,
    home: Path,
    build: tuple[bool | Literal["later"], bool],  # (update the index, words first)
    show_progress: bool | None,
    executors: LegExecutors,
) -> PackRuntime:
    """Open one pack and update its index; damage met while updating is rebuilt once."""
    version = None
    if settings.index.engine == IndexEngine.POSTGRES and cfg.artifact is not None:
        from ep_mcp.index.artifact import pack_folder, served_settings  # artifact packs only
        from ep_mcp.index.pgindex import published_version  # optional dependency: psycopg

        folder = pack_folder(cfg.artifact, cfg.slug)
        version = published_version(settings.index, cfg.slug or folder.name)
        cfg = served_settings(cfg, folder / version)  # the pack files of that version
    elif cfg.artifact is not None:  # a published artifact: its current version, read-only
        from ep_mcp.index.artifact import served_settings  # start-up time: artifact packs only

        cfg = served_settings(cfg)
    rt = PackRuntime(
        cfg, settings, embedder, home, executors, words_first=build[1], served_version=version
    )
    if build[0] is not True or cfg.read_only:
        return rt
    return _index_with_retry(rt, show_progress)


def _words_first_for(embedder: Embedder | None, words_first: bool | None) -> bool:
    """Commit the words and leave the vectors to the backfill (None: unless embedding is
    trivial, i.e. pure Python)."""
    return query_cost(embedder) != "trivial" if words_first is None else words_first


def _index_with_retry(rt: PackRuntime, show_progress: bool | None) -> PackRuntime:
    """``rt`` (just opened, its pack just read) with its index brought up to date (words
    first when ``rt.words_first``); an index found damaged meanwhile is rebuilt once
    (`retry_reopened`) — the runtime returned is then a new one. A disk that refuses the
    build's writes (full, read-only) is logged and the previous index keeps answering."""
    if rt.config.read_only:
        return rt

    def update(runtime: PackRuntime) -> None:
        try:
            runtime.index(
                show_progress=show_progress, reload=False, words_first=runtime.words_first
            )
        except DiskFullError as exc:  # the last commit stands: the previous index answers
            runtime.sqlite.writes.note(str(exc))

    return retry_reopened(rt, update)[0]


def finish_build(library: Library) -> None:
    """The start-up build deferred by ``open_library(build="later")``: bring every pack's
    index up to date (words first when the runtime was opened so), then mark the library
    ready. A pack whose index is damaged twice is dropped when others remain; any other
    failure is kept in ``readiness.error`` (answered to every tool call) and raised. Once
    ``readiness.stopping`` is set, the pack being built is finished and no other begun."""
    started = dict(library.runtimes)
    runtimes = dict(started)
    try:
        for slug, rt in list(runtimes.items()):
            if library.readiness.stopping.is_set():
                raise BuildStopped("the server is stopping — the index build was not finished")
            try:
                runtimes[slug] = _index_with_retry(rt, None)
            except IndexDamagedError as exc:
                if len(runtimes) == 1:
                    raise
                logger.error("%s — serving the other packs without it", exc)
                runtimes.pop(slug).close()
    except BaseException as exc:
        failed = (
            exc
            if isinstance(exc, EpMcpError)
            else IndexBuildError(
                f"the index build failed ({type(exc).__name__}: {exc}) — see the server log; "
                "fix the cause and restart the server"
            )
        )
        library.readiness.error = failed
        raise
    finally:
        for rt in runtimes.values():
            rt.building.indexing = False
        _apply(library, started, runtimes)
        library.readiness.done.set()


def _apply(library: Library, started: dict[str, PackRuntime], now: dict[str, PackRuntime]) -> None:
    """Swap in the runtimes the build reopened or dropped, as one new dict (readers never see
    it half-changed), leaving any other change made meanwhile (an artifact swap) as it is."""
    if all(now.get(s) is rt for s, rt in started.items()):
        return
    runtimes = dict(library.runtimes)
    for slug, rt in started.items():
        if runtimes.get(slug) is not rt:
            continue  # replaced meanwhile by someone else
        if slug in now:
            runtimes[slug] = now[slug]
        else:
            del runtimes[slug]
    library.runtimes = runtimes
