"""The skills hub facade: taps, commit-keyed reindex, skill search, list/info/read, discovery.

Adapters (the tool registry, hence MCP, HTTP and the CLI) call only this class. Settings and
the environment come in resolved from the edge; the hub never reads ``os.environ``.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

from ep_mcp.config.model import Settings
from ep_mcp.errors import EmbeddingError, QueryError
from ep_mcp.hub.catalog import (
    NameIndex,
    SkillEntry,
    entries_from_pack,
    frontmatter_scores,
    resolve_skill,
)
from ep_mcp.hub.errors import TapError
from ep_mcp.hub.git import CREDENTIALS_DROPPED, Git, parse_source
from ep_mcp.hub.github import discover_github
from ep_mcp.hub.llm import LlmClient, LlmReranker, choose_client
from ep_mcp.hub.match import MATCH_DEPTH, match_floor, no_match_note
from ep_mcp.hub.ranking import collapse_mirrors
from ep_mcp.hub.render import read_bounded, render_candidate, render_entry
from ep_mcp.hub.results import (
    Discovery,
    ReindexReport,
    SkillHit,
    SkillInfo,
    SkillListing,
    SkillSearch,
    SkillText,
    TapFailure,
    Tapped,
    TapReport,
    TapStatus,
    UpdateReport,
)
from ep_mcp.hub.search import best_chunks, llm_rerank, match_evidence, retrieve
from ep_mcp.hub.tapindex import Tap, TapIndex
from ep_mcp.hub.taps import TapManager
from ep_mcp.index.embed.base import Embedder
from ep_mcp.retrieval import threshold as th

logger = logging.getLogger(__name__)

HUB_STATE = "hub.json"
AUTO = "auto"


class SkillHub:
    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        *,
        embedder: Embedder | str | None = AUTO,
        llm: LlmClient | str | None = AUTO,
        count_tokens: Callable[[str], int] | None = None,
        legs: Sequence[str] = ("lexical", "vector"),
    ) -> None:
        if settings.home is None:
            raise TapError("the hub needs a home folder — set EP_MCP_HOME or `home:` in config")
        self.settings = settings
        self.env = dict(env)
        self.home = settings.home
        self.index_root = self.home / "skills-index"
        self.taps = TapManager(
            self.home, settings.hub.taps, Git(self.env), settings.hub.clone_timeout_s
        )
        self._embedder_arg = embedder
        self._embedder = None if isinstance(embedder, str) else embedder
        self._llm_arg = llm
        self._reranker: LlmReranker | None = None
        self._count_tokens = count_tokens
        self._indexes: dict[str, TapIndex] = {}
        self._live: dict[str, list[SkillEntry]] = {}
        self._name_index: tuple[tuple[tuple[str, int], ...], NameIndex] | None = None
        self._lock = threading.RLock()
        self.legs = tuple(legs)  # retrieval legs in use (benchmarks compare them one by one)
        self.match_floor = match_floor(settings.hub)

    # -- parts -------------------------------------------------------------------------------

    def embedder(self) -> Embedder | None:
        if self._embedder is None and self._embedder_arg == AUTO:
            # start-up: the embedder (numpy, a model) loads on the hub's first search
            from ep_mcp.index.embed.factory import make_embedder

            self._embedder = make_embedder(self.settings)
            self._embedder_arg = None
        return self._embedder

    def reranker(self) -> LlmReranker:
        if self._reranker is None:
            s = self.settings.hub
            client = (
                choose_client(self.env, model=s.llm_model, endpoint=s.llm_endpoint)
                if self._llm_arg == AUTO
                else self._llm_arg
            )
            self._reranker = LlmReranker(cast(LlmClient | None, client), s.llm_timeout_s)
        return self._reranker

    def _index(self, tap: Tap) -> TapIndex:
        with self._lock:
            ti = self._indexes.get(tap.name)
            if ti is None or ti.tap != tap:
                ti = TapIndex(tap, self.index_root / tap.name, self.settings.index.vector_engine)
                self._indexes[tap.name] = ti
            return ti

    def _state(self) -> dict[str, object]:
        try:
            return dict(json.loads((self.index_root / HUB_STATE).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {}

    def _save_state(self, state: Mapping[str, object]) -> None:
        self.index_root.mkdir(parents=True, exist_ok=True)
        (self.index_root / HUB_STATE).write_text(json.dumps(dict(state)), encoding="utf-8")

    def close(self) -> None:
        with self._lock:
            for ti in self._indexes.values():
                ti.close()
            self._indexes.clear()

    # -- taps --------------------------------------------------------------------------------

    def tap(self, source: str, *, allow_file: bool = False, cwd: Path | None = None) -> Tapped:
        dropped = parse_source(source, allow_file=allow_file, cwd=cwd).dropped_credentials
        tap = self.taps.add(source, allow_file=allow_file, cwd=cwd)
        report = self.reindex(only=[tap.name])
        warnings = (CREDENTIALS_DROPPED,) if dropped else ()
        return Tapped(tap.name, str(tap.path), tap.url, report, warnings)

    def untap(self, name: str) -> str:
        """Remove a tap, its clone and its index; returns the tap's name."""
        with self._lock:
            tap = self.taps.find(name)
            ti = self._indexes.pop(tap.name, None)
            if ti is not None:
                ti.close()
            self.taps.remove(tap.name)
            shutil.rmtree(self.index_root / tap.name, ignore_errors=True)
            self._live.pop(tap.name, None)
        return tap.name

    def list_taps(self) -> list[TapStatus]:
        out = []
        for tap in self.taps.all():
            url, commit, error = self.taps.describe(tap)
            ti = self._index(tap)
            status = ti.status()
            out.append(
                TapStatus(
                    tap=tap.name,
                    path=str(tap.path),
                    cloned=tap.cloned,
                    index=status,
                    skills=len(ti.entries()) if status.indexed else None,
                    stale=bool(status.key) and str(commit) not in str(status.key),
                    url=url,
                    commit=commit,
                    error=error,
                )
            )
        return out

    def update(self, names: Sequence[str] = ()) -> UpdateReport:
        results = self.taps.update(names)
        report = self.reindex(only=list(names) or None)
        return UpdateReport(tuple(results), report)

    # -- index -------------------------------------------------------------------------------

    def reindex(
        self, *, dense: bool | None = None, force: bool = False, only: Sequence[str] | None = None
    ) -> ReindexReport:
        """Bring tap indexes up to date; unchanged taps are reused (commit + features match).

        ``dense`` True/False sets whether vectors are built and remembers it; None keeps the
        last choice (lexical until ``--dense`` was asked for once).
        """
        state = self._state()
        if dense is not None:
            state["dense"] = bool(dense)
            self._save_state(state)
        want_dense = bool(state.get("dense", False))
        embedder = self.embedder() if want_dense else None
        if self._count_tokens is None:
            # start-up: the embedder (numpy, a model) loads on the hub's first search
            from ep_mcp.index.embed.factory import token_counter

            self._count_tokens = token_counter()
        reports: list[TapReport] = []
        errors: list[TapFailure] = []
        taps = self.taps.all()
        chosen = [t for t in taps if only is None or t.name in only]
        for tap in chosen:
            try:
                key = self.taps.key(tap)
                ti = self._index(tap)
                try:
                    report = self._reindex_one(ti, key, embedder, force)
                except EmbeddingError as exc:
                    logger.warning(
                        "tap %s: embedding failed (%s) — indexed lexically", tap.name, exc
                    )
                    report = self._reindex_one(ti, key, None, force)
                reports.append(report)
                self._live.pop(tap.name, None)
            except TapError as exc:
                errors.append(TapFailure(tap.name, str(exc)))
        if only is None:
            self._drop_orphans({t.name for t in taps})
        return ReindexReport(
            reindexed=sum(r.status == "reindexed" for r in reports),
            reused=sum(r.status == "reused" for r in reports),
            dense=embedder is not None,
            taps=tuple(reports),
            errors=tuple(errors),
        )

    def _reindex_one(
        self, ti: TapIndex, key: str, embedder: Embedder | None, force: bool
    ) -> TapReport:
        assert self._count_tokens is not None
        idx = self.settings.index
        return ti.reindex(
            key,
            embedder,
            self._count_tokens,
            max_tokens=idx.max_tokens,
            max_file_bytes=idx.max_file_bytes,
            force=force,
        )

    def _drop_orphans(self, live: set[str]) -> None:
        if not self.index_root.is_dir():
            return
        for child in self.index_root.iterdir():
            if child.is_dir() and child.name not in live:
                ti = self._indexes.pop(child.name, None)
                if ti is not None:
                    ti.close()
                shutil.rmtree(child, ignore_errors=True)

    # -- catalog -----------------------------------------------------------------------------

    def entries(self) -> list[SkillEntry]:
        """Every skill of every tap: from the index catalogs, else read live from the folders."""
        out: list[SkillEntry] = []
        for tap in self.taps.all():
            ti = self._index(tap)
            if ti.exists():
                out.extend(ti.entries())
                continue
            if tap.name not in self._live:
                pack = ti.live_pack(self.settings.index.max_file_bytes)
                self._live[tap.name] = entries_from_pack(tap.name, pack)
            out.extend(self._live[tap.name])
        return out

    def resolve(self, name: str) -> SkillEntry:
        """A skill by `tap:name`, `tap:dir`, its id, or a bare name that only one skill has."""
        return resolve_skill(self.entries(), name)

    def list_skills(self) -> SkillListing:
        entries = sorted(self.entries(), key=lambda e: (e.tap, e.name))
        return SkillListing(tuple(render_entry(e) for e in entries))

    def info(self, name: str) -> SkillInfo:
        entry = self.resolve(name)
        return SkillInfo(
            render_entry(entry), tuple(entry.files), tuple(entry.headings), entry.content_hash
        )

    def read(self, name: str, *, offset: int = 0) -> SkillText:
        entry = self.resolve(name)
        tap = self.taps.find(entry.tap)
        return read_bounded(
            entry,
            tap.path,
            self.settings.hub.read_max_chars,
            offset,
            max_bytes=self.settings.index.max_file_bytes,
        )

    def discover(self, query: str, limit: int = 20) -> Discovery:
        results = discover_github(
            query, limit, self.env, timeout=self.settings.hub.discover_timeout_s
        )
        return Discovery(query, tuple(results))

    # -- search ------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 10,
        *,
        smart: bool | None = None,
        include_low_confidence: bool = False,
    ) -> SkillSearch:
        """Skills for a task, best first; none (and a note) when the best evidence is under the
        floor (``retrieval.threshold.judge`` on ``hub.match.match_floor``), unless
        ``include_low_confidence``."""
        started = time.perf_counter()
        if not query.strip():
            raise QueryError("the query is empty — describe the task you need a skill for")
        limit = max(1, min(int(limit), 50))
        taps = self.taps.all()
        notes: list[str] = []
        if not taps:
            notes.append("no skill taps yet — add one with `ep-mcp tap owner/repo`")
            return SkillSearch.answer(query, "frontmatter", [], started, notes)
        indexes = [self._index(t) for t in taps]
        ready = [ti for ti in indexes if ti.exists()]
        for ti in ready:
            ti.sync()
        missing = [ti.tap.name for ti in indexes if not ti.exists()]
        if not ready:
            notes.append("no index yet — matched names and descriptions only; run `ep-mcp reindex`")
            scored = frontmatter_scores(query, self.entries())[:limit]
            hits = [SkillHit(render_entry(e, score=s)) for e, s in scored]
            return SkillSearch.answer(query, "frontmatter", hits, started, notes)
        if missing:
            notes.append(f"not indexed yet (run `ep-mcp reindex`): {', '.join(missing)}")
        by_id = self._names(ready).by_id
        dense = "vector" in self.legs and any(ti.has_dense() for ti in ready)
        embedder = self.embedder() if dense else None
        ranked, ranker, top_cosine = retrieve(
            query,
            ready,
            max(60, 4 * limit),
            retrieval=self.settings.retrieval,
            hub=self.settings.hub,
            names=self._names(ready),
            embedder=embedder,
            legs=self.legs,
            notes=notes,
        )
        ranked, mirrors = collapse_mirrors(
            ranked, lambda sid: by_id[sid].content_hash if sid in by_id else None
        )
        use_llm = self.settings.hub.llm_rerank if smart is None else smart
        head = ranked[: max(limit, MATCH_DEPTH, self.settings.hub.llm_top if use_llm else 0)]
        rows = best_chunks(self._indexes, head)
        evidence = match_evidence(query, ranked, top_cosine, by_id, rows, ready)
        verdict = th.judge(evidence, self.match_floor, embedder.name if embedder else None)
        withheld = 0
        if ranked and not verdict.answered:
            notes.append(no_match_note(verdict, shown=include_low_confidence))
            if not include_low_confidence:
                withheld, ranked = min(limit, len(ranked)), []
        if use_llm and ranked:
            top = self.settings.hub.llm_top
            ranked, ranker = llm_rerank(
                self.reranker(), query, ranked, top, by_id, rows, ranker, notes
            )
        results = [
            render_candidate(
                c,
                by_id[c.skill_id],
                mirrors.get(c.skill_id, []),
                rows.get((c.chunk.tap, c.chunk.id)),
            )
            for c in ranked[:limit]
        ]
        return SkillSearch.answer(
            query, ranker, results, started, notes, verdict, evidence, withheld
        )

    def _names(self, ready: Sequence[TapIndex]) -> NameIndex:
        key = tuple((ti.tap.name, ti.entries_version) for ti in ready if ti.entries() is not None)
        if self._name_index is None or self._name_index[0] != key:
            self._name_index = (key, NameIndex(e for ti in ready for e in ti.entries()))
        return self._name_index[1]
