"""The core facade the adapters call: packs loaded, indexes opened, queries answered.

A `Library` holds one `PackRuntime` per served pack and one shared embedder. The CLI, the MCP
server and the HTTP app all go through it; none of them touches the store or the stages.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ep_mcp.config.model import IndexEngine, PackSettings, Settings
from ep_mcp.errors import (
    BuildingError,
    EpMcpError,
    IndexDamagedError,
    NotFoundError,
    ReadOnlyIndexError,
)
from ep_mcp.index import diskerrors, integrity, recovery
from ep_mcp.index.builder import BuildReport, build_index, embed_texts
from ep_mcp.index.buildlock import embedding_lock
from ep_mcp.index.buildstate import BuildState, building_note
from ep_mcp.index.embed.base import Embedder
from ep_mcp.index.embed.breaker import interactive, is_bounded
from ep_mcp.index.embed.factory import token_counter
from ep_mcp.index.embedplan import window_overlap
from ep_mcp.index.owned import open_owned
from ep_mcp.index.rerank import GuardedReranker, make_reranker
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.models import Pack
from ep_mcp.packs.safeopen import read_live_prefix
from ep_mcp.retrieval import engine
from ep_mcp.retrieval.confidence import ConfidenceModel
from ep_mcp.retrieval.confidence_file import packaged_model
from ep_mcp.retrieval.engine import SearchOptions
from ep_mcp.retrieval.legs import LegChoice
from ep_mcp.retrieval.merge import MergedResult, ScoreRule, merge_results
from ep_mcp.retrieval.source import LegExecutors, ServedIndex, query_embedding
from ep_mcp.retrieval.types import SearchRequest, SearchResult
from ep_mcp.retrieval.view import PackView, pack_view

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class PackRuntime:
    """One served pack: its parsed files, its index and how to query it."""

    config: PackSettings
    settings: Settings
    embedder: Embedder | None
    home: Path
    executors: LegExecutors | None = None  # shared threads (the library's); else its own
    words_first: bool = False  # a damaged index found on open is rebuilt words only (serve)
    served_version: str | None = None  # postgres: this published version, not the current
    pack: Pack = field(init=False)
    store: ServedIndex = field(init=False)  # SQLite's Store, or a published version elsewhere
    view: PackView = field(init=False)  # what the retrieval stages need of the pack, as data
    reranker: GuardedReranker | None = field(init=False, default=None)
    building: BuildState = field(default_factory=BuildState, init=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    _profiles: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _recovered: BuildReport | None = field(default=None, init=False, repr=False)
    _own_executors: LegExecutors | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.executors is None:
            self.executors = self._own_executors = LegExecutors.start()
        if self.settings.index.engine == IndexEngine.POSTGRES:  # published: never built here
            self.config = dataclasses.replace(self.config, read_only=True)
        self.pack = self._load()
        self.view = pack_view(self.pack)
        self.reranker = make_reranker(self.settings.reranker)
        self.store = self._open_index()

    @property
    def version(self) -> str | None:
        """The published version this pack serves: PostgreSQL's (from an artifact or from the
        pack's own path), or the artifact folder's; None for an index built in place."""
        from ep_mcp.index.artifact import served_version  # start-up time: artifact packs only

        return self.store.version or served_version(self.config)

    @property
    def sqlite(self) -> Store:
        """The SQLite index this pack builds in place (index, backfill, repair need one)."""
        if not isinstance(self.store, Store):
            raise ReadOnlyIndexError(
                f"pack '{self.slug}' is served from {self.store.location} — build and publish "
                "it where it is built (`ep-mcp index PACK --out DIR --to postgres`)"
            )
        return self.store

    def _open_index(self) -> ServedIndex:
        """The pack's index: its SQLite file, or its current version on PostgreSQL."""
        if self.settings.index.engine == IndexEngine.POSTGRES:
            from ep_mcp.index.pgindex import PgIndex  # optional dependency: psycopg (postgres)

            return PgIndex.open(self.settings.index, self.slug, self.served_version)
        return self._open_owned()

    def _open_owned(self) -> Store:
        """The pack's index, opened only if it is this pack's (`index.owned`)."""
        return open_owned(
            self.pack.root,
            self.slug,
            self.config,
            self.home,
            self._open_store,
        )

    def _open_store(self, path: Path) -> Store:
        """Open the pack's index; a damaged one is rebuilt beside it and swapped in (SPEC §2).

        An index served read-only cannot be rebuilt here: that is an error naming the file.
        """
        engine_name = self.settings.index.vector_engine
        try:
            return Store(path, read_only=self.config.read_only, vector_engine=engine_name)
        except IndexDamagedError as exc:
            if self.config.read_only:
                raise IndexDamagedError(
                    f"pack '{self.slug}': index at {path} is damaged ({exc.reason}) and is "
                    "served read-only, so it cannot be rebuilt here — rebuild it where it is "
                    "built (`ep-mcp index PACK`) or restore a good copy",
                    path=path,
                    reason=exc.reason,
                ) from exc
            self._recovered = recovery.rebuild(path, exc.reason, self._build_fresh)
        return Store(path, read_only=False, vector_engine=engine_name)

    def _build_fresh(self, path: Path) -> BuildReport:
        """Build the whole index of the current pack into a new file at `path`, and close it;
        with ``words_first`` the vectors are left pending for the backfill (the embedding
        cache lived in the damaged file, so they would all be computed before serving)."""
        store = Store(path, vector_engine=self.settings.index.vector_engine)
        try:
            return self._update(self.pack, None, store, words_first=self.words_first)
        finally:
            store.close()

    def _damaged(self, exc: Exception) -> IndexDamagedError:
        """Damage met after opening: remember it (the next open rebuilds) and say so."""
        reason = integrity.describe(exc)
        path = self.sqlite.path
        integrity.mark_damaged(path, reason)
        logger.error("pack %s: index at %s is damaged (%s)", self.slug, path, reason)
        return IndexDamagedError(
            f"pack '{self.slug}': index at {path} is damaged ({reason}) — it is "
            "rebuilt the next time it is opened: run `ep-mcp index PACK` or restart the server",
            path=path,
            reason=reason,
        )

    @property
    def slug(self) -> str:
        return self.pack.slug

    def _load(self) -> Pack:
        return load_pack(
            self.config.path,
            kind=self.config.kind,
            slug=self.config.slug,
            max_file_bytes=self.settings.index.max_file_bytes,
        )

    def index(
        self, show_progress: bool | None = None, *, reload: bool = True, words_first: bool = False
    ) -> BuildReport:
        """Bring the index up to date with the pack on disk (re-reads the folder unless told not
        to, e.g. right after opening), then serve the new files. ``words_first`` commits the
        words now and leaves the new vectors pending, for ``backfill`` to compute."""
        with self._lock:
            if self.config.read_only:
                raise ReadOnlyIndexError(
                    f"pack '{self.slug}' is served read-only — build its index elsewhere"
                )
            pack = self._load() if reload else self.pack
            try:
                report = self._update(pack, show_progress, words_first=words_first)
            except integrity.DAMAGE_ERRORS as exc:
                raise self._damaged(exc) from exc
            except diskerrors.SQLITE_DISK_ERRORS as exc:  # the last commit stands: not damage
                raise diskerrors.disk_error(self.sqlite.path, exc) from exc
            recovered, self._recovered = self._recovered, None
            if recovered is not None and not (report.changed or report.removed):
                report = recovered  # the rebuild on opening did this run's work
            self._swap(pack)
            return report

    def reload(self) -> BuildReport | None:
        """Live reload: re-read the pack, update the index, then swap the new Pack in.

        Until the swap, queries are answered from the previous Pack and the last committed
        index (embedding runs before the build's one short write transaction). If anything
        fails, the last good state keeps serving and the error propagates to the caller.
        """
        if self.config.read_only:
            with self._lock:
                self._swap(self._load())
            return None
        return self.index(show_progress=False)

    def _swap(self, pack: Pack) -> None:
        """Serve a new version of the pack: its files, its view; profile vectors follow lazily."""
        self.pack, self.view, self._profiles = pack, pack_view(pack), None

    def _profile_vector(self, text: str) -> Any:
        """The vector of a file's one-line profile (retrieval's file-profile stage).

        All profiles of the pack version are embedded together on first use, through the
        index's embedding cache, so later queries and later processes pay nothing.
        """
        profiles = self._profiles
        if profiles is None:
            with self._lock:
                texts = list(dict.fromkeys(t for t in self.view.profiles.values() if t))
                assert self.embedder is not None
                profiles = embed_texts(self.store, interactive(self.embedder), texts)
                self._profiles = profiles
        vector = profiles.get(text)
        if vector is None:  # a profile of a newer view than the cached set
            assert self.embedder is not None
            vector = interactive(self.embedder).embed_documents([text])[0]
        return vector

    def _update(
        self, pack: Pack, show: bool | None, store: Store | None = None, words_first: bool = False
    ) -> BuildReport:
        """Build with the embedder. If the provider fails, the build still commits lexically,
        keeps every stored vector and marks the rest pending (the next build embeds them)."""
        return build_index(
            pack,
            store or self.sqlite,
            self.embedder,
            token_counter(),
            max_tokens=self.settings.index.max_tokens,
            prefix_template=self.settings.index.context_prefix_template,
            window_overlap=window_overlap(self.settings.index),
            show_progress=show,
            on_embedding_error="defer",
            words_first=words_first,
            observer=self.building.observe,
        )

    def backfill(self) -> BuildReport | None:
        """Embed the chunks an earlier build left pending, and repair damaged rows (files
        unchanged); None if none wait, or if another process is embedding this index now
        (`embedding_lock`): its vectors are read from the shared file once it commits."""
        if self.config.read_only or self.embedder is None:
            return None
        store = self.sqlite
        if not (store.pending_count() or store.repair_needed):
            return None
        with self._lock, embedding_lock(store.path) as mine:
            if not mine:
                self.building.elsewhere = True
                return None
            self.building.elsewhere = False
            with self.building.running():
                try:
                    report = self._update(self.pack, None)
                except diskerrors.SQLITE_DISK_ERRORS as exc:  # the last commit stands
                    raise diskerrors.disk_error(store.path, exc) from exc
            self._profiles = None
            return report

    def problems(self) -> list[str]:
        """What degrades this pack's answers now (for /health): a disk refusing writes,
        damaged or missing rows awaiting their repair (the next build or backfill)."""
        found = [self.store.write_problem, *self.store.problems()]
        return [f"pack {self.slug}: {p}" for p in found if p]

    def build_state(self) -> dict[str, Any]:
        """Where the index build stands: phase, mode, chunks, embedded, pending, progress."""
        counts = self.store.counts()
        dense = self.embedder is not None and self.store.embedding_model() is not None
        return self.building.snapshot(counts["chunks"], counts.get("pending", 0), dense)

    def search(
        self,
        request: SearchRequest,
        *,
        query_embedder: Embedder | None = None,
        legs: LegChoice = "both",
        confidence: ConfidenceModel | None = None,
    ) -> SearchResult:
        """Answer one query; ``query_embedder`` overrides how the query is embedded, ``legs``
        runs one leg alone (benchmarks) and ``confidence`` replaces the shipped model (fitting)."""
        embedder = query_embedder or self.embedder
        view = self.view
        options = SearchOptions(
            view=view,
            embed_profile=self._profile_vector if self.embedder is not None else None,
            reranker=self.reranker,
            rerank_pool=self.settings.reranker.pool,
            rerank_max_chars=self.settings.reranker.max_chars,
            deadline_ms=self.settings.retrieval.query_deadline_ms if is_bounded(embedder) else None,
            executors=self.executors,
            live_files=functools.partial(read_live_prefix, view.root),
            legs=legs,
            confidence=confidence or packaged_model(),
        )
        try:
            result = engine.search(
                self.store,
                self.slug,
                request,
                self.settings.retrieval,
                query_embedding(embedder),
                options,
            )
        except integrity.DAMAGE_ERRORS as exc:
            raise self._damaged(exc) from exc
        except diskerrors.SQLITE_DISK_ERRORS as exc:  # e.g. no room for a reader's -shm
            raise diskerrors.disk_error(self.sqlite.path, exc) from exc
        note = building_note(self.build_state()) if self.building.embedding else None
        return dataclasses.replace(result, notes=(note, *result.notes)) if note else result

    def reopen(self) -> PackRuntime:
        """A new runtime for the same pack (its index reopened: rebuilt if found damaged),
        sharing this one's threads unless they were its own (closed with it)."""
        shared = self.executors if self._own_executors is None else None
        return PackRuntime(
            self.config,
            self.settings,
            self.embedder,
            self.home,
            shared,
            self.words_first,
            self.served_version,
        )

    def close(self) -> None:
        self.store.close()
        if self._own_executors is not None:
            self._own_executors.close()


def retry_reopened(rt: PackRuntime, work: Callable[[PackRuntime], T]) -> tuple[PackRuntime, T]:
    """``work(rt)``, done once more on a reopened runtime when it meets a damaged index (the
    runtime has marked it, so reopening rebuilds it): the one damaged-index retry of the
    start-up build, `ep-mcp index` and `ep-mcp search`. Returns the runtime that did the work
    — a new one after a retry, ``rt`` then closed — and its result; damage met again closes
    the new runtime and is raised."""
    try:
        return rt, work(rt)
    except IndexDamagedError:
        rt.close()
    again = rt.reopen()
    try:
        return again, work(again)
    except IndexDamagedError:
        again.close()
        raise


def _embeds_now(cache: object) -> bool:
    """Whether the query is embedded before the packs are searched: not while the model loads
    behind the start (each pack then answers lexically, with the note)."""
    ready = getattr(cache, "ready", None)
    return cache is not None and (ready is None or bool(ready()))


def _done() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


@dataclass
class Readiness:
    """Whether a library's start-up build is over (at once when it had none to do), and the
    error that ended it, if one did; ``stopping``: the server is stopping, so the build
    finishes the pack it is on (it commits) and begins no other. Shared by the views of one
    library."""

    done: threading.Event = field(default_factory=_done)
    error: EpMcpError | None = None
    stopping: threading.Event = field(default_factory=threading.Event)


@dataclass
class Library:
    """Every served pack by slug, with one shared embedder."""

    settings: Settings
    runtimes: dict[str, PackRuntime]
    embedder: Embedder | None
    executors: LegExecutors | None = None  # owned: shut down by close()
    readiness: Readiness = field(default_factory=Readiness)

    def get(self, slug: str | None = None) -> PackRuntime:
        if slug is None:
            if len(self.runtimes) == 1:
                return next(iter(self.runtimes.values()))
            raise NotFoundError(
                f"several packs are served — name one with `pack`: {', '.join(self.slugs())}"
            )
        try:
            return self.runtimes[slug]
        except KeyError:
            raise NotFoundError(
                f"pack '{slug}' not found — available packs: {', '.join(self.slugs()) or 'none'}"
            ) from None

    def slugs(self) -> list[str]:
        return sorted(self.runtimes)

    def check_ready(self, retry: str) -> None:
        """Raise unless the start-up build is over and went well: BuildingError naming each
        pack's phase (``retry``: what to do again, e.g. "call ep_search"), or its error."""
        if not self.readiness.done.is_set():
            if self.readiness.stopping.is_set():
                raise BuildingError("the server is stopping — ask again once it is back")
            raise BuildingError(
                f"the packs are still being indexed ({self.phases()}) — {retry} again in a "
                "few seconds"
            )
        if self.readiness.error is not None:
            raise self.readiness.error

    def phases(self) -> str:
        """Each pack's build phase, for a message ("alpha indexing, beta ready")."""
        return ", ".join(f"{rt.slug} {rt.build_state()['phase']}" for rt in self)

    def only(self, allowed: frozenset[str] | set[str]) -> Library:
        """The same library showing only the ``allowed`` packs (what one caller may see)."""
        shown = {s: rt for s, rt in self.runtimes.items() if s in allowed}
        return Library(self.settings, shown, self.embedder, readiness=self.readiness)

    def retry_reopened(self, work: Callable[[PackRuntime], T], slug: str | None = None) -> T:
        """``work`` on the pack ``slug`` (`get`), retried once on its reopened runtime when it
        meets a damaged index (`retry_reopened`); the library then serves the new runtime."""

        def served(rt: PackRuntime) -> T:
            if self.runtimes.get(rt.slug) is not rt:
                self.runtimes = {**self.runtimes, rt.slug: rt}
            return work(rt)

        return retry_reopened(self.get(slug), served)[1]

    def search_all(self, request: SearchRequest, rule: ScoreRule | None = None) -> MergedResult:
        """Every pack of this library searched (overlapping on the runtimes' pack threads) and
        merged into one ranking (``retrieval.merge``); each hit names its pack."""
        import time

        started = time.perf_counter()
        runtimes = list(self)
        cache = query_embedding(self.embedder)
        if request.vector is None and _embeds_now(cache) and not is_bounded(self.embedder):
            cache.embed_query(request.query)  # type: ignore[union-attr]  # once, for every pack
        pool = runtimes[0].executors.packs if runtimes and runtimes[0].executors else None
        if pool is None or len(runtimes) < 2:
            results = [rt.search(request) for rt in runtimes]
        else:
            results = list(pool.map(lambda rt: rt.search(request), runtimes))
        took = (time.perf_counter() - started) * 1000
        return merge_results(request.query, results, request.k, rule, took)

    def __iter__(self) -> Iterator[PackRuntime]:
        return iter(self.runtimes[s] for s in self.slugs())

    def close(self) -> None:
        for rt in self.runtimes.values():
            rt.close()
        if self.executors is not None:
            self.executors.close()
