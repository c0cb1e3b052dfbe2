"""Bringing one pack's index up to date, as `ep-mcp index` does: the no-change fast path
first (no parsing, no numpy), else an incremental build that reopens once if it meets damage.

The fast path is recorded only for a complete build: while chunks await their vectors the
next run must take the full path.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from ep_mcp import __version__
from ep_mcp.config.model import Settings
from ep_mcp.errors import ConfigError
from ep_mcp.index import diskerrors, fastcheck


@dataclass(frozen=True)
class IndexOutcome:
    slug: str
    index: Path
    report: dict[str, object]  # BuildReport fields (a fast-path answer says 0 changed)
    warnings: tuple[str, ...]


def update_index(settings: Settings) -> IndexOutcome:
    """Update the index of ``settings.packs[0]`` (settings resolved at the edge)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    cfg, home = settings.packs[0], settings.home
    if home is None:
        raise ConfigError("no data directory — set EP_MCP_HOME")
    key = fastcheck.settings_key(cfg, settings.embedding, settings.index, __version__)
    snap = fastcheck.take_snapshot(cfg.path, key)
    state = fastcheck.quick_state(cfg.path, cfg.index_dir, home, snap)
    if state is not None:  # nothing changed since the last build: no parsing, no numpy
        report = {
            **state.report,
            "changed": 0,
            "removed": 0,
            "embedded": 0,
            "reused": 0,
            "repaired": 0,
            "repaired_files": 0,
            "rebuilt": False,
            "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started,
        }
        return IndexOutcome(state.slug, state.index, report, tuple(state.warnings))
    from ep_mcp.library.opening import open_library  # start-up time: the fast path loads no numpy

    lib = open_library(settings, home, build=False, say_empty=False)
    try:
        built = lib.retry_reopened(lambda rt: rt.index(reload=False))  # damage: rebuilt once
        rt = lib.get()
        warnings = tuple(str(w) for w in rt.pack.warnings)
        wanted = settings.embedding.provider != "none"
        report = dataclasses.asdict(built)
        try:
            if (built.vector_engine != "none" or not wanted) and not built.pending:
                fastcheck.remember(rt.sqlite, snap, rt.slug, report, list(warnings))
            else:  # chunks wait for their vectors: the next run must take the full path
                fastcheck.forget(rt.sqlite)
        except diskerrors.SQLITE_DISK_ERRORS as exc:  # the build committed; its record did not
            raise diskerrors.disk_error(rt.sqlite.path, exc) from exc
        return IndexOutcome(rt.slug, rt.sqlite.path, report, warnings)
    finally:
        lib.close()
