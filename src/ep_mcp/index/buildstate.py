"""Where one pack's index build stands, for `/health`, ``ep://{slug}/status`` and answers' notes.

A served pack is answered lexically as soon as its words are indexed; its vectors are computed
in the background and swapped in when all of them are in. ``BuildState`` is what the runtime
tells readers meanwhile: the phase, and the embedding's progress (done, total, ETA).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ep_mcp.index.progress import TimeLeft


class BuildCancelled(Exception):  # a signal, not an error
    """Raised inside a background embedding run when the server stops; nothing is committed
    (the vectors computed so far are in the embedding cache for the next run)."""


Phase = Literal["indexing", "lexical", "embedding", "ready", "lexical-only"]


@dataclass
class BuildState:
    """Thread-safe: the backfill thread writes, request handlers read."""

    clock: Callable[[], float] = time.monotonic
    indexing: bool = False  # the start-up build has not committed this pack's words yet
    embedding: bool = False  # a background embedding run is in progress
    elsewhere: bool = False  # another process holds the index's embedding lock (buildlock)
    done: int = 0
    total: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _left: TimeLeft = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._left = TimeLeft(self.clock)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around a background embedding run."""
        with self._lock:
            self.embedding, self.done, self.total = True, 0, 0
            self._left.reset()
        try:
            yield
        finally:
            with self._lock:
                self.embedding = False

    def observe(self, done: int, total: int) -> None:
        """The embedding's progress (an ``index.progress.Observer``); raises BuildCancelled
        in a background run once ``cancel`` was called."""
        with self._lock:
            self.done, self.total = done, total
            self._left.step(done)
            if self.embedding and self._cancel.is_set():
                raise BuildCancelled("the server is stopping")

    def cancel(self) -> None:
        self._cancel.set()

    def snapshot(self, chunks: int, pending: int, dense: bool) -> dict[str, Any]:
        """The state as JSON-ready data: phase, chunks, embedded, pending, progress. During an
        embedding run ``embedded`` counts the vectors stored so far (in the embedding cache,
        every batch) though the index swaps them in at the end, in one write."""
        with self._lock:
            embedding, done, total = self.embedding, self.done, self.total
            left = self._left.seconds(total) if embedding else None
        phase: Phase
        if self.indexing:
            phase = "indexing"
        elif not dense:
            phase = "lexical-only"
        elif not pending:
            phase = "ready"
        else:
            phase = "embedding" if embedding else "lexical"
        stored = 0
        if phase == "embedding" and total > 0:  # ``total`` counts distinct texts: scaled
            stored = min(pending, pending * min(done, total) // total)
        out: dict[str, Any] = {
            "phase": phase,
            "mode": "hybrid" if phase == "ready" else "lexical",
            "chunks": chunks,
            "embedded": chunks - pending + stored if dense else 0,
            "pending": pending - stored if dense else 0,
        }
        if phase == "embedding":
            out["progress"] = {"done": done, "total": total, "eta_s": _round(left)}
        elif phase == "lexical" and self.elsewhere:
            out["embedding_elsewhere"] = True  # another server on this pack is embedding it
        return out


# least done first
PHASES: tuple[Phase, ...] = ("indexing", "embedding", "lexical", "lexical-only", "ready")


def overall(states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The state of several packs at once (``/health``: no pack named, keyed or not)."""
    phase = min((s["phase"] for s in states), key=PHASES.index, default="ready")
    pending = sum(s["pending"] for s in states)
    return {
        "phase": phase,
        "mode": "hybrid" if phase == "ready" else "lexical",
        "chunks": sum(s["chunks"] for s in states),
        "embedded": sum(s["embedded"] for s in states),
        "pending": pending,
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def building_note(state: dict[str, Any]) -> str | None:
    """The note an answer carries while its pack's vectors are still being computed."""
    if state["phase"] not in ("embedding", "lexical"):
        return None
    progress = state.get("progress") or {}
    eta = progress.get("eta_s")
    how = f"{state['embedded']}/{state['chunks']} chunks embedded"
    if eta is not None:
        how += f", about {eta:.0f}s left"
    return (
        f"index building: this answer is lexical (words only) — {how}; answers become "
        "hybrid when the embeddings are in"
    )
