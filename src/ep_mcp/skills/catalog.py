"""A tap's skills as plain records: read from a skills pack, saved beside the tap's index.

Also the two skill-specific pieces of text the hub derives: the *card* (name, name as words,
description and headings — one extra indexed document per skill, so the fields that say what a
skill is for weigh as much as its whole body) and the frontmatter-only scorer that answers when
no index exists yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ep_mcp.index.chunker import find_headings
from ep_mcp.packs.models import Document, Pack

CARD_SUFFIX = "#card"
CARD_TYPE = "skill-card"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class SkillEntry:
    """One skill of one tap. Identity is (tap, directory), never the name."""

    tap: str
    name: str
    description: str
    directory: str  # tap-relative folder holding SKILL.md ("" at the root)
    skill_file: str  # tap-relative path of SKILL.md
    content_hash: str  # of SKILL.md's body: mirrored copies share it
    files: tuple[str, ...]  # SKILL.md first, then supporting markdown
    frontmatter_lines: tuple[int, int]  # where name/description live in SKILL.md
    headings: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.tap}:{self.directory or '.'}"

    @property
    def card_path(self) -> str:
        return self.skill_file + CARD_SUFFIX

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["files"] = list(self.files)
        data["frontmatter_lines"] = list(self.frontmatter_lines)
        data["headings"] = list(self.headings)
        return data


def entries_from_pack(tap: str, pack: Pack) -> list[SkillEntry]:
    out: list[SkillEntry] = []
    for item in pack.skills:
        doc = pack.document(item.skill_file)
        if doc is None:
            continue
        heads = tuple(h.title for h in find_headings(doc) if h.level <= 3 and h.title)
        out.append(
            SkillEntry(
                tap=tap,
                name=item.name,
                description=" ".join(item.description.split()),
                directory=item.directory,
                skill_file=item.skill_file,
                content_hash=doc.content_hash,
                files=item.files,
                frontmatter_lines=(1, max(1, doc.body_line - 1)),
                headings=heads[:40],
            )
        )
    return out


def card_text(entry: SkillEntry) -> str:
    words = re.sub(r"[-_]+", " ", entry.name)
    folder = re.sub(r"[-_]+", " ", posixpath.basename(entry.directory))
    lines = [f"# {entry.name}", "", words if folder == words else f"{words} ({folder})", ""]
    if entry.description:
        lines += [entry.description, ""]
    if entry.headings:
        lines.append(" · ".join(entry.headings))
    return "\n".join(lines) + "\n"


def card_document(entry: SkillEntry) -> Document:
    """The extra indexed document that stands for the skill's name and description."""
    text = card_text(entry)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Document(
        path=entry.card_path,
        text=text,
        body_line=1,
        meta={},
        title=entry.name,
        type=CARD_TYPE,
        tags=(),
        id=None,
        content_hash=f"sha256:{digest}",
        file_hash=digest,
        navigation=False,
        always=False,
        on_demand=False,
        requires=(),
        related=(),
        verified_at=None,
        refresh=None,
        expires_at=None,
        sidecar=None,
        skill=entry.name,
    )


def save_entries(path: Path, entries: Sequence[SkillEntry]) -> None:
    """Write the catalog atomically (temp file beside it, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".catalog-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump([e.to_dict() for e in entries], fh, ensure_ascii=False)
    os.replace(tmp, path)


def load_entries(path: Path) -> list[SkillEntry] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [
            SkillEntry(
                tap=d["tap"],
                name=d["name"],
                description=d["description"],
                directory=d["directory"],
                skill_file=d["skill_file"],
                content_hash=d["content_hash"],
                files=tuple(d["files"]),
                frontmatter_lines=(int(d["frontmatter_lines"][0]), int(d["frontmatter_lines"][1])),
                headings=tuple(d.get("headings", ())),
            )
            for d in raw
        ]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class EntryTerms:
    """An entry's name and description as terms, computed once (the scorer runs per query)."""

    entry: SkillEntry
    name: str  # "mcp builder"
    name_terms: frozenset[str]
    description: str
    description_terms: frozenset[str]

    @classmethod
    def of(cls, entry: SkillEntry) -> EntryTerms:
        name = " ".join(_tokens(entry.name))
        desc = " ".join(_tokens(entry.description))
        return cls(entry, name, frozenset(name.split()), desc, frozenset(desc.split()))


def frontmatter_scores(
    query: str, entries: Iterable[SkillEntry | EntryTerms]
) -> list[tuple[SkillEntry, float]]:
    """Rank skills by their name and description alone, best first (no index needed)."""
    q = " ".join(_tokens(query))
    terms = [t for t in dict.fromkeys(q.split()) if len(t) > 1]
    scored: list[tuple[SkillEntry, float]] = []
    for item in entries:
        e = item if isinstance(item, EntryTerms) else EntryTerms.of(item)
        score = 0.0
        if q and e.name == q:
            score += 100
        elif q and e.name.startswith(q):
            score += 80
        elif q and q in e.name:
            score += 60
        if q and q in e.description:
            score += 30
        for t in terms:
            if t in e.name_terms or (
                len(t) >= 4
                and any(n.startswith(t) or t.startswith(n) for n in e.name_terms if len(n) >= 4)
            ):
                score += 12
            if t in e.description_terms:
                score += 6
        if score > 0:
            scored.append((e.entry, score))
    scored.sort(key=lambda p: (-p[1], p[0].name, p[0].id))
    return scored
