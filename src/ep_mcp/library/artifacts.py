"""Serve the newest published artifact: poll each artifact pack's ``current`` and swap.

Every ``server.artifact_poll_s`` a daemon thread reads where each artifact pack's ``current``
points. A new version is checked (manifest, checksum, schema), opened read-only and warmed
up — all beside the one serving — and then put in the library's place for that slug with one
dictionary assignment. A request already running holds the runtime it started with and
finishes on it; the old runtime's index is closed when the last such request lets go of it
(`weakref.finalize`, immediate under CPython's reference counting). A version that fails its
check is logged once and skipped; the last good version keeps serving. Every problem (a
``current`` that points nowhere sound, a version of another pack, a manifest that cannot be
read, even an unexpected error) is logged once per change, never once per poll.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

from ep_mcp.config.model import IndexEngine
from ep_mcp.errors import EpMcpError
from ep_mcp.index import artifact
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.retrieval.source import ServedIndex
from ep_mcp.retrieval.types import SearchRequest

logger = logging.getLogger(__name__)


def _close_store(store: ServedIndex, slug: str, version: str | None) -> None:
    try:
        store.close()
    except Exception:  # closing must never break the request that dropped the last reference
        logger.exception("pack %s: closing the index of version %s failed", slug, version)
    logger.info("pack %s: version %s drained and closed", slug, version)


class ArtifactWatcher:
    """Polls the artifact packs of a library and swaps newer versions in."""

    def __init__(self, library: Library, poll_s: float) -> None:
        self.library = library
        self.poll_s = poll_s
        self.swaps = 0
        self._failed: set[Path] = set()
        self._said: dict[str, str] = {}  # slug -> the last problem logged for it
        self._retired: list[weakref.ref[PackRuntime]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one poll at a time (the thread, or a test calling in)
        self._postgres = library.settings.index.engine == IndexEngine.POSTGRES

    def artifact_packs(self) -> list[PackRuntime]:
        """The packs a newer version may replace: artifact packs, and every pack served from
        PostgreSQL (whose current version is a row there)."""
        return [rt for rt in self.library if rt.config.artifact is not None or self._postgres]

    def start(self) -> None:
        if self.poll_s <= 0 or not self.artifact_packs():
            return
        self._thread = threading.Thread(target=self._run, name="ep-mcp-artifacts", daemon=True)
        self._thread.start()
        logger.info(
            "watching %d artifact pack(s) every %.1fs", len(self.artifact_packs()), self.poll_s
        )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        last = ""
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
                last = ""
            except Exception as exc:  # the poller must never take the server down
                if repr(exc) != last:  # once per change, not once per poll
                    logger.exception("artifact poll failed — trying again next interval")
                last = repr(exc)

    def _say(self, slug: str, level: int, message: str) -> None:
        """Log ``message`` for ``slug`` unless it is the one logged last for it."""
        if self._said.get(slug) != message:
            self._said[slug] = message
            logger.log(level, "pack %s: %s", slug, message)

    def poll(self) -> list[str]:
        """Swap in every artifact pack whose ``current`` moved; returns the slugs swapped."""
        with self._lock:
            swapped = [rt.slug for rt in self.artifact_packs() if self._refresh(rt)]
            self._reap()
            return swapped

    def _target(self, rt: PackRuntime) -> tuple[str, Path | None] | None:
        """The version ``rt`` should serve and its folder (None: the one it serves)."""
        folder = artifact.pack_folder(rt.config.artifact, rt.slug) if rt.config.artifact else None
        if self._postgres:
            from ep_mcp.index.pgindex import current_version  # optional dependency: psycopg

            name = current_version(self.library.settings.index, rt.slug)
            if name is None or name == rt.store.version:
                return None
            return name, folder / name if folder is not None else None
        assert folder is not None
        target = artifact.current_version(folder)
        if target is None or target.name == artifact.served_version(rt.config):
            return None
        return target.name, target

    def _refresh(self, rt: PackRuntime) -> bool:
        try:
            found = self._target(rt)
        except EpMcpError as exc:  # an unreadable link, a server that does not answer
            self._say(rt.slug, logging.WARNING, str(exc))
            return False
        if found is None:
            self._said.pop(rt.slug, None)  # back to normal: a new problem is news again
            return False
        name, target = found
        key = target if target is not None else Path(name)
        if key in self._failed:
            return False
        try:
            new = self._open(rt, name, target)
        except EpMcpError as exc:
            self._failed.add(key)
            still = rt.version
            message = f"version {name} is not served ({exc}) — still serving {still}"
            self._say(rt.slug, logging.ERROR, message)
            return False
        self._said.pop(rt.slug, None)
        self.library.runtimes[rt.slug] = new  # one assignment: the next request sees it
        old_version = rt.version
        weakref.finalize(rt, _close_store, rt.store, rt.slug, old_version)
        self._retired.append(weakref.ref(rt))
        self.swaps += 1
        logger.info("pack %s: now serving version %s (was %s)", rt.slug, name, old_version)
        return True

    def _open(self, rt: PackRuntime, name: str, version_dir: Path | None) -> PackRuntime:
        """The new version opened and warmed up beside the old one (which keeps serving)."""
        cfg = artifact.served_settings(rt.config, version_dir) if version_dir else rt.config
        lib = self.library
        assert lib.settings.home is not None
        if version_dir is None:  # a pack served from PostgreSQL with its own files
            new = PackRuntime(
                cfg, lib.settings, lib.embedder, lib.settings.home, served_version=name
            )
            wanted = new.store.embedding_model()
        else:
            new = None
            wanted = artifact.read_manifest(version_dir).model
        have = lib.embedder.name if lib.embedder is not None else None
        if wanted is not None and have is not None and wanted != have:
            if new is not None:
                new.close()
            raise artifact.ArtifactError(
                f"it was built with the model {wanted}, this server embeds queries with "
                f"{have} — restart the server with the artifact's embedding settings"
            )
        if new is None:
            new = PackRuntime(
                cfg, lib.settings, lib.embedder, lib.settings.home, served_version=name
            )
        try:
            new.search(SearchRequest(query="warm up", k=1))  # profiles, vector matrix, pages
        except BaseException:
            new.close()
            raise
        return new

    def _reap(self) -> None:
        """Forget retired runtimes that are gone; collect cycles that keep one alive."""
        alive = [ref for ref in self._retired if ref() is not None]
        if alive and len(alive) == len(self._retired):
            gc.collect()
            alive = [ref for ref in alive if ref() is not None]
        self._retired = alive

    @property
    def retired_alive(self) -> int:
        """Old versions still held by running requests (their indexes are still open)."""
        return sum(1 for ref in self._retired if ref() is not None)


@contextlib.contextmanager
def watching_artifacts(library: Library, poll_s: float) -> Iterator[ArtifactWatcher]:
    watcher = ArtifactWatcher(library, poll_s)
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.stop()
