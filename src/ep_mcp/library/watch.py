"""Live reload: watch every served pack folder and re-index changed packs in the background.

`watchfiles` batches changes (debounce); each changed pack is reloaded in a worker thread
with `PackRuntime.reload()`, which swaps the new Pack in only once its index is updated, so
queries keep being answered from the last good state meanwhile. A failed reload is logged
and the previous state keeps serving. Each batch's reloads — the pack before and after — go
to ``on_change`` once (`ChangeHub.publish`: resource subscribers are told what changed).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ep_mcp.errors import DiskFullError, EpMcpError
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.packs.models import Pack

logger = logging.getLogger(__name__)
progress_log = logging.getLogger("ep_mcp.progress")  # shown by the CLI at its default level

DEBOUNCE_MS = 400
OnChange = Callable[[Sequence[tuple[Pack, Pack]]], None]  # one batch: (before, after) per pack
IGNORED_DIRS = frozenset({".ep-mcp", ".git", "__pycache__", "node_modules"})


def _ignored(path: Path) -> bool:
    return any(part in IGNORED_DIRS for part in path.parts) or path.name.endswith(
        ("-wal", "-shm", "-journal", "~", ".swp")
    )


def owners(changes: Iterable[str], runtimes: Iterable[PackRuntime]) -> list[PackRuntime]:
    """The runtimes whose pack folder contains any changed path (index files ignored)."""
    found: dict[str, PackRuntime] = {}
    paths = [Path(c) for c in changes]
    for rt in runtimes:
        root = rt.pack.root
        for p in paths:
            if not _ignored(p) and p.is_relative_to(root):
                found[rt.slug] = rt
                break
    return list(found.values())


class PackWatcher:
    """A daemon thread running `watchfiles.watch` over the pack folders until stopped."""

    def __init__(
        self,
        library: Library,
        debounce_ms: int = DEBOUNCE_MS,
        on_reload: Callable[[PackRuntime], None] | None = None,
        on_change: OnChange | None = None,
    ) -> None:
        self.library = library
        self.debounce_ms = debounce_ms
        self.on_reload = on_reload
        self.on_change = on_change
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        self.reloads = 0

    def roots(self) -> list[Path]:
        return [rt.pack.root for rt in self.library if not rt.config.read_only]

    def start(self) -> None:
        if not self.roots():
            return
        self._thread = threading.Thread(target=self._run, name="ep-mcp-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        import watchfiles

        roots = self.roots()
        logger.info("watching %d pack folder(s) for changes", len(roots))
        try:
            for batch in watchfiles.watch(
                *roots,
                debounce=self.debounce_ms,
                step=50,
                stop_event=self._stop,
                yield_on_timeout=True,
                rust_timeout=500,
                ignore_permission_denied=True,
            ):
                self.ready.set()
                if batch:
                    # the start-up build reads every file: changes before it ends are in it
                    while not self.library.readiness.done.wait(0.25):
                        if self._stop.is_set():
                            return
                    self.reload([path for _, path in batch])
        except Exception:  # the watcher thread must never take the server down
            logger.exception("file watcher stopped — restart the server to re-enable reload")

    def reload(self, changed: Iterable[str]) -> None:
        changed = list(changed)
        reloaded: list[tuple[Pack, Pack]] = []
        for rt in owners(changed, self.library):
            before = rt.pack
            try:
                report = rt.reload()
            except DiskFullError as exc:  # logged once until a write commits; /health names it
                rt.sqlite.writes.note(str(exc))
                continue
            except EpMcpError as exc:
                logger.warning(
                    "pack %s: reload failed (%s) — still serving the last good index", rt.slug, exc
                )
                continue
            except Exception:
                logger.exception(
                    "pack %s: reload failed — still serving the last good index", rt.slug
                )
                continue
            self.reloads += 1
            if report is not None:
                progress_log.info(
                    "pack %s reloaded: %d changed, %d removed (%.2fs)%s",
                    rt.slug,
                    report.changed,
                    report.removed,
                    report.seconds,
                    _which(changed, rt.pack.root),
                )
            reloaded.append((before, rt.pack))
            if self.on_reload is not None:
                self.on_reload(rt)
        if reloaded and self.on_change is not None:
            try:
                self.on_change(reloaded)
            except Exception:  # telling subscribers must never stop the reloads
                logger.exception("telling resource subscribers of a reload failed")


def _which(paths: Sequence[str], root: Path, shown: int = 5) -> str:
    """': a.md, b.md (+3 more)' — the files of ``root`` among the watcher's paths."""
    mine, root = [], root.resolve()
    for p in paths:
        with contextlib.suppress(ValueError):
            mine.append(Path(p).resolve().relative_to(root).as_posix())
    if not mine:
        return ""
    more = f" (+{len(mine) - shown} more)" if len(mine) > shown else ""
    return ": " + ", ".join(sorted(mine)[:shown]) + more


@contextlib.contextmanager
def watching(
    library: Library, enabled: bool = True, on_change: OnChange | None = None
) -> Iterator[PackWatcher | None]:
    if not enabled:
        yield None
        return
    watcher = PackWatcher(library, on_change=on_change)
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.stop()
