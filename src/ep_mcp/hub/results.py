"""What the hub answers: frozen dataclasses, turned into JSON only at the adapters (`to_dict`).

Each `to_dict` gives the exact keys, order and omissions the tools and the CLI have always
sent, so typed results change nothing on the wire.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.hub.match import NO_MATCH
from ep_mcp.json_types import JsonObject, fields_dict
from ep_mcp.retrieval import threshold as th


@dataclass(frozen=True)
class SkillRow:
    """One skill as listed: id (tap:folder), tap, name, description, SKILL.md path."""

    id: str
    tap: str
    name: str
    description: str
    path: str
    score: float | None = None  # search results only

    def to_dict(self) -> JsonObject:
        row: JsonObject = {
            "id": self.id,
            "tap": self.tap,
            "name": self.name,
            "description": self.description,
            "path": self.path,
        }
        if self.score is not None:
            row["score"] = round(self.score, 6)
        return row


@dataclass(frozen=True)
class SkillMatch:
    """Where a search matched a skill: its best chunk as the snippet."""

    source_file: str
    heading_path: tuple[str, ...]
    line_range: tuple[int, int]
    snippet: str
    content_hash: str
    legs: Mapping[str, float]
    mirrors: tuple[str, ...] = ()  # the same skill in other taps

    def to_dict(self) -> JsonObject:
        row: JsonObject = {
            "source_file": self.source_file,
            "heading_path": list(self.heading_path),
            "line_range": list(self.line_range),
            "snippet": self.snippet,
            "content_hash": self.content_hash,
            "legs": dict(self.legs),
        }
        if self.mirrors:
            row["mirrors"] = list(self.mirrors)
        return row


@dataclass(frozen=True)
class SkillHit:
    """A search result: the skill, and where it matched (None when only frontmatter matched)."""

    skill: SkillRow
    match: SkillMatch | None = None

    def to_dict(self) -> JsonObject:
        return {**self.skill.to_dict(), **(self.match.to_dict() if self.match else {})}


@dataclass(frozen=True)
class SkillSearch:
    query: str
    ranker: str  # hybrid | lexical | dense | frontmatter | llm
    results: tuple[SkillHit, ...]
    took_ms: float
    notes: tuple[str, ...] = ()
    verdict: th.Verdict | None = None  # does any skill match (None: no index to judge by)
    evidence: th.Evidence | None = None  # what the verdict read (benchmarks, fitting)
    withheld: int = 0  # skills not shown: under the floor, include_low_confidence not asked

    @classmethod
    def answer(
        cls,
        query: str,
        ranker: str,
        results: Sequence[SkillHit],
        started: float,
        notes: Sequence[str],
        verdict: th.Verdict | None = None,
        evidence: th.Evidence | None = None,
        withheld: int = 0,
    ) -> SkillSearch:
        took_ms = round((time.perf_counter() - started) * 1000, 2)
        return cls(
            query, ranker, tuple(results), took_ms, tuple(notes), verdict, evidence, withheld
        )

    def with_hint(self, hint: str) -> SkillSearch:
        """The reply with the adapter's way to see withheld skills added to the no-match note
        (``include_low_confidence=true`` for MCP, ``--include-low-confidence`` for the CLI)."""
        if not self.withheld:
            return self
        notes = tuple(f"{n}; {hint}" if n.startswith(NO_MATCH) else n for n in self.notes)
        return dataclasses.replace(self, notes=notes)

    def to_dict(self) -> JsonObject:
        reply: JsonObject = {
            "query": self.query,
            "ranker": self.ranker,
            "results": [r.to_dict() for r in self.results],
            "took_ms": self.took_ms,
        }
        if self.verdict is not None:
            reply["matched"] = self.verdict.answered
            reply["match"] = round(self.verdict.score, 4)
        if self.notes:
            reply["notes"] = list(self.notes)
        return reply


@dataclass(frozen=True)
class SkillListing:
    skills: tuple[SkillRow, ...]

    def to_dict(self) -> JsonObject:
        return {"count": len(self.skills), "skills": [r.to_dict() for r in self.skills]}


@dataclass(frozen=True)
class SkillInfo:
    skill: SkillRow
    files: tuple[str, ...]
    headings: tuple[str, ...]
    content_hash: str

    def to_dict(self) -> JsonObject:
        return {
            **self.skill.to_dict(),
            "files": list(self.files),
            "headings": list(self.headings),
            "content_hash": self.content_hash,
        }


@dataclass(frozen=True)
class SkillText:
    """SKILL.md from ``offset``, bounded; ``note`` says how to read on when ``truncated``."""

    skill: SkillRow
    files: tuple[str, ...]
    text: str
    offset: int
    total_chars: int
    truncated: bool
    note: str | None = None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            **self.skill.to_dict(),
            "files": list(self.files),
            "text": self.text,
            "offset": self.offset,
            "total_chars": self.total_chars,
            "truncated": self.truncated,
        }
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class RepoHit:
    """A GitHub repository holding a matching SKILL.md, and the command that taps it."""

    repository: str
    path: str
    skill_dir: str
    url: str
    tap: str

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class Discovery:
    query: str
    results: tuple[RepoHit, ...]

    def to_dict(self) -> JsonObject:
        return {"query": self.query, "results": [r.to_dict() for r in self.results]}


@dataclass(frozen=True)
class TapFailure:
    tap: str
    error: str

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class TapReport:
    """One tap's reindex: reused (commit and features unchanged) or reindexed."""

    tap: str
    status: str  # reused | reindexed
    key: str
    skills: int
    chunks: int
    embedded: int
    seconds: float

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class ReindexReport:
    reindexed: int
    reused: int
    dense: bool
    taps: tuple[TapReport, ...]
    errors: tuple[TapFailure, ...]

    def to_dict(self) -> JsonObject:
        return {
            "reindexed": self.reindexed,
            "reused": self.reused,
            "dense": self.dense,
            "taps": [t.to_dict() for t in self.taps],
            "errors": [e.to_dict() for e in self.errors],
        }


@dataclass(frozen=True)
class Tapped:
    """A new tap, and the reindex that followed."""

    tap: str
    path: str
    url: str
    report: ReindexReport
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "tap": self.tap,
            "path": self.path,
            "url": self.url,
            **self.report.to_dict(),
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


@dataclass(frozen=True)
class UpdateResult:
    tap: str
    old: str | None
    new: str | None
    changed: bool
    error: str | None = None

    def to_dict(self) -> JsonObject:
        return fields_dict(self)


@dataclass(frozen=True)
class UpdateReport:
    updated: tuple[UpdateResult, ...]
    report: ReindexReport

    @property
    def changed(self) -> int:
        return sum(r.changed for r in self.updated)

    def to_dict(self) -> JsonObject:
        return {
            "updated": [u.to_dict() for u in self.updated],
            "changed": self.changed,
            **self.report.to_dict(),
        }


@dataclass(frozen=True)
class TapIndexStatus:
    """A tap's index as `taps` shows it; every field but ``indexed`` only once it exists."""

    indexed: bool
    key: str | None = None
    indexed_at: str | None = None
    dense: bool = False
    embedder: str | None = None

    def to_dict(self) -> JsonObject:
        if not self.indexed:
            return {"indexed": False}
        return fields_dict(self)


@dataclass(frozen=True)
class TapStatus:
    """One row of `ep-mcp taps`: where the tap is, its commit, and its index."""

    tap: str
    path: str
    cloned: bool
    index: TapIndexStatus
    skills: int | None
    stale: bool
    url: str | None = None
    commit: str | None = None
    error: str | None = None  # the commit or origin could not be read

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"tap": self.tap, "path": self.path, "cloned": self.cloned}
        if self.error is not None:
            if self.url is not None:
                out["url"] = self.url
            out["error"] = self.error
        else:
            out["url"] = self.url
            out["commit"] = self.commit
        out.update(self.index.to_dict())
        out["skills"] = self.skills
        out["stale"] = self.stale
        return out
