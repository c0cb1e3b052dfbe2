"""One tap's index: the existing pack store, keyed by the tap's git commit.

Each tap is indexed as a skills pack with the shared builder (one SQLite file per tap under
``<home>/skills-index/<tap>/``), plus one card document per skill. The store's meta row
``tap_key`` holds ``hub<format>:<commit>``: when it and the index features (embedder, dimension,
format) match, the tap is reused without reading a single file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ep_mcp.hub.catalog import (
    CARD_SUFFIX,
    SkillEntry,
    card_document,
    entries_from_pack,
    load_entries,
    save_entries,
)
from ep_mcp.hub.ranking import ChunkRef
from ep_mcp.hub.results import TapIndexStatus, TapReport
from ep_mcp.index.builder import build_index, features_for
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.store import Store, StoredChunk
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.models import Pack

logger = logging.getLogger(__name__)

_VERSIONS = itertools.count(1)
HUB_FORMAT = 1  # bump when cards or catalog change shape: every tap is rebuilt
CATALOG = "catalog.json"
INDEX = "index.db"


@dataclass(frozen=True)
class Tap:
    """A skills repository the hub serves: a clone under ``taps/`` or a folder from config."""

    name: str
    path: Path
    url: str
    cloned: bool  # False: a local folder indexed in place (config.yaml)


def path_fingerprint(root: Path) -> str:
    """Key of a folder tap that is not a clone: sizes and mtimes of its markdown files."""
    digest = hashlib.sha256()
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        for name in sorted(files):
            if name.lower().endswith((".md", ".markdown", ".yaml", ".yml")):
                try:
                    st = os.stat(os.path.join(current, name))
                except OSError:  # a broken link: the reader skips it too
                    continue
                rel = os.path.relpath(os.path.join(current, name), root)
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "replace"))
    return "fp-" + digest.hexdigest()[:16]


class TapIndex:
    """The index folder of one tap: its store (opened lazily) and its catalog."""

    def __init__(self, tap: Tap, folder: Path, vector_engine: str = "auto") -> None:
        self.tap = tap
        self.folder = folder
        self._vector_engine = vector_engine
        self._store: Store | None = None
        self._entries: list[SkillEntry] | None = None
        self._by_path: dict[str, SkillEntry] = {}
        self._dense: bool | None = None
        self._paths: dict[int, str] = {}  # chunk id → file path, filled as chunks are seen
        self._generation: str | None = None
        self.entries_version = 0  # changes whenever the entries are (re)loaded

    # -- state -------------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.folder / INDEX).is_file() and (self.folder / CATALOG).is_file()

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.folder / INDEX, vector_engine=self._vector_engine)
        return self._store

    def entries(self) -> list[SkillEntry]:
        if self._entries is None:
            self._set_entries(load_entries(self.folder / CATALOG) or [])
        return list(self._entries or [])

    def _set_entries(self, entries: list[SkillEntry]) -> None:
        self.entries_version = next(_VERSIONS)
        self._entries = entries
        self._by_path = {p: e for e in entries for p in (*e.files, e.card_path)}
        self._dense = None
        self._paths.clear()

    def sync(self) -> None:
        """Drop cached entries and chunk paths when another process rebuilt this index."""
        if self._store is None or self._entries is None:
            return
        generation = self._store.get_meta("generation")
        if generation != self._generation:
            if self._generation is not None:
                self._entries = None
                self._dense = None
                self._paths.clear()
            self._generation = generation

    def entry_for(self, ref: ChunkRef) -> SkillEntry | None:
        """The skill a chunk belongs to (None for files outside every skill folder)."""
        if self._entries is None:
            self.entries()
        return self._by_path.get(ref.path)

    def has_dense(self) -> bool:
        if self._dense is None:
            self._dense = self.exists() and self.store.has_vectors()
        return self._dense

    def status(self) -> TapIndexStatus:
        if not self.exists():
            return TapIndexStatus(indexed=False)
        store = self.store
        embedder = store.features().get("embedder")
        return TapIndexStatus(
            indexed=True,
            key=store.get_meta("tap_key"),
            indexed_at=store.get_meta("indexed_at"),
            dense=store.has_vectors(),
            embedder=None if embedder is None else str(embedder),
        )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- build -------------------------------------------------------------------------------

    def reindex(
        self,
        key: str,
        embedder: Embedder | None,
        count_tokens: Callable[[str], int],
        *,
        max_tokens: int = 1000,
        max_file_bytes: int = 2_000_000,
        force: bool = False,
    ) -> TapReport:
        """Rebuild this tap's index unless its commit and index features are unchanged."""
        started = time.perf_counter()
        full_key = f"hub{HUB_FORMAT}:{key}"
        features = features_for(embedder, max_tokens, "")
        store = self.store
        if (
            not force
            and store.get_meta("tap_key") == full_key
            and store.features() == features
            and (self.folder / CATALOG).is_file()
        ):
            entries = self.entries()
            return TapReport(
                self.tap.name,
                "reused",
                full_key,
                len(entries),
                store.counts()["chunks"],
                0,
                time.perf_counter() - started,
            )
        pack = load_pack(
            self.tap.path, kind="skills", slug=self.tap.name, max_file_bytes=max_file_bytes
        )
        for warning in pack.warnings:
            logger.warning("tap %s: %s", self.tap.name, warning)
        entries = entries_from_pack(self.tap.name, pack)
        with_cards = dataclasses.replace(
            pack,
            documents=(*pack.documents, *(card_document(e) for e in entries)),
            _by_path={},
        )
        report = build_index(
            with_cards, store, embedder, count_tokens, max_tokens=max_tokens, show_progress=None
        )
        save_entries(self.folder / CATALOG, entries)
        store.set_meta("tap_key", full_key)
        self._set_entries(entries)
        return TapReport(
            self.tap.name,
            "reindexed",
            full_key,
            len(entries),
            report.chunks,
            report.embedded,
            time.perf_counter() - started,
        )

    def live_pack(self, max_file_bytes: int = 2_000_000) -> Pack:
        return load_pack(
            self.tap.path, kind="skills", slug=self.tap.name, max_file_bytes=max_file_bytes
        )

    # -- search legs -------------------------------------------------------------------------

    def lexical(
        self, terms: Sequence[str], n: int, weights: tuple[float, float, float], time_limit_ms: int
    ) -> list[tuple[ChunkRef, float]]:
        hits = self.store.lexical_top(terms, n, weights=weights, time_limit_ms=time_limit_ms)
        return self._refs(hits)

    def held(self, terms: Sequence[str]) -> set[str]:
        """The ``terms`` some chunk of this tap holds (as FTS5 matches them), in one pass."""
        counts, _ = self.store.term_counts(terms)
        return {term for term, n in counts.items() if n}

    def vector(
        self, query: npt.NDArray[np.float32], n: int, embedder_name: str
    ) -> list[tuple[ChunkRef, float]]:
        store = self.store
        if store.features().get("embedder") != embedder_name or not self.has_dense():
            return []
        return self._refs(store.vector_top(query, n))

    def _refs(self, hits: list[tuple[int, float]]) -> list[tuple[ChunkRef, float]]:
        known = self._paths
        missing = [cid for cid, _ in hits if cid not in known]
        if missing:
            known.update(self.store.paths_of(missing))
        name = self.tap.name
        return [(ChunkRef(name, cid, known[cid]), score) for cid, score in hits if cid in known]

    def chunks(self, refs: Sequence[ChunkRef]) -> dict[int, StoredChunk]:
        """Full rows (text, headings, lines) of a few chunks: the winners' snippets."""
        return self.store.chunks_by_ids([r.id for r in refs])


def is_card(path: str) -> bool:
    return path.endswith(CARD_SUFFIX)
