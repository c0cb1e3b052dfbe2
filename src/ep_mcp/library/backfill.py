"""Background backfill: embed the chunks a build left pending, as soon as the server is up.

The server's own start-up build commits lexically and leaves every new vector pending
(``words_first``), so it answers at once; this thread then embeds them and the pack turns
hybrid when all are in (one write). A build that loses its embedding provider also commits
lexically and marks the chunks without a vector pending. While serving, this daemon thread
runs once at start, then looks every
``interval_s`` for packs with pending chunks and, unless the provider's circuit is open, brings
their vectors in (``PackRuntime.backfill``). When the cool-down ends the backfill may be the
probe that closes the circuit again, so recovery needs no query. Only one process embeds an
index at a time (a lock beside it: `index.buildlock`): a second server on the same pack skips
the run and reads the first one's vectors from the shared index once they are committed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from ep_mcp.errors import DiskFullError, EpMcpError
from ep_mcp.index.buildstate import BuildCancelled
from ep_mcp.index.embed.breaker import accepts_calls
from ep_mcp.library.runtime import Library

logger = logging.getLogger(__name__)


class Backfill:
    def __init__(self, library: Library, interval_s: float) -> None:
        self.library = library
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.filled = 0  # chunks given their vector so far

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ep-mcp-backfill", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        from ep_mcp.index.embed.compiled import stop_children  # start-up time: workers skip it

        self._stop.set()
        for rt in self.library:  # an embedding run in progress stops at its next batch
            rt.building.cancel()
        stop_children()  # a run still waiting for the model compile stops now
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self.library.readiness.done.wait(0.25):  # the start-up build leaves the work
            if self._stop.is_set():
                return
        while True:
            try:
                self.run_once()
            except BuildCancelled:
                return
            except Exception:  # the thread must never take the server down
                logger.exception("embedding backfill failed — it will try again")
            if self._stop.wait(self.interval_s):
                return

    def run_once(self) -> int:
        """One pass over the served packs; returns how many chunks got their vector."""
        filled = 0
        for rt in self.library:
            if not accepts_calls(rt.embedder):
                return filled  # the circuit is open: nothing to try before its cool-down
            if rt.config.read_only:
                continue  # a published version (artifact, server): nothing is built here
            before = rt.sqlite.pending_count()
            if not before and not rt.sqlite.repair_needed:
                continue
            told = rt.building.elsewhere
            try:
                report = rt.backfill()
            except DiskFullError as exc:  # logged once, named by /health, tried again later
                rt.sqlite.writes.note(str(exc))
                continue
            except EpMcpError as exc:
                logger.warning("pack %s: embedding backfill failed (%s)", rt.slug, exc)
                continue
            if rt.building.elsewhere and not told:
                logging.getLogger("ep_mcp.progress").info(
                    "pack %s: another ep-mcp process is embedding this index — its vectors "
                    "are served here once it has stored them",
                    rt.slug,
                )
            if report is not None:
                done = before + report.repaired - report.pending
                filled += done
                if done:
                    logging.getLogger("ep_mcp.progress").info(
                        "pack %s: %d chunk(s) embedded, %d left — answers are %s",
                        rt.slug,
                        done,
                        report.pending,
                        "hybrid" if not report.pending else "partly lexical",
                    )
        self.filled += filled
        return filled


@contextlib.contextmanager
def backfilling(library: Library, enabled: bool = True) -> Iterator[Backfill | None]:
    """Run the backfill thread for the block (nothing for read-only or lexical-only packs)."""
    writable = any(not rt.config.read_only and rt.embedder is not None for rt in library)
    if not enabled or not writable:
        yield None
        return
    worker = Backfill(library, library.settings.embedding.breaker_cooldown_s)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
