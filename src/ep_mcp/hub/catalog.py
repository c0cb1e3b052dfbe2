"""A tap's skills as plain records: read from a skills pack, saved beside the tap's index.

Also the two skill-specific pieces of text the hub derives: the *card* (name, name as words,
description and headings — one extra indexed document per skill, so the fields that say what a
skill is for weigh as much as its whole body) and the frontmatter-only scorer that answers when
no index exists yet.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import os
import posixpath
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ep_mcp.errors import NextStep, QueryError
from ep_mcp.hub.errors import SkillNotFoundError
from ep_mcp.packs.headings import find_headings
from ep_mcp.packs.models import Document, Pack
from ep_mcp.text import ascii_words

CARD_SUFFIX = "#card"
CARD_TYPE = "skill-card"


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

    @functools.cached_property
    def id(self) -> str:
        return f"{self.tap}:{self.directory or '.'}"

    @property
    def card_path(self) -> str:
        return self.skill_file + CARD_SUFFIX

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("id", None)
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
        name = " ".join(ascii_words(entry.name))
        desc = " ".join(ascii_words(entry.description))
        return cls(entry, name, frozenset(name.split()), desc, frozenset(desc.split()))


class NameIndex:
    """Names and descriptions of many skills, inverted by term, for the name/frontmatter scorer.

    Scores: the whole query equal to / a prefix of / inside a name +100 / +80 / +60, inside a
    description +30; each query term in a name +12 (or sharing a 4+ letter prefix with a name
    word: ``brainstorm`` ~ ``brainstorming``), in a description +6. Only skills sharing a term
    with the query are looked at, so a query costs little however many skills there are.
    """

    def __init__(self, entries: Iterable[SkillEntry]) -> None:
        self.items = [EntryTerms.of(e) for e in entries]
        self.by_id = {item.entry.id: item.entry for item in self.items}
        self._names: dict[str, list[int]] = {}
        self._descriptions: dict[str, list[int]] = {}
        for i, item in enumerate(self.items):
            for t in item.name_terms:
                self._names.setdefault(t, []).append(i)
            for t in item.description_terms:
                self._descriptions.setdefault(t, []).append(i)
        self._long = [t for t in self._names if len(t) >= 4]

    def scores(self, query: str) -> list[tuple[SkillEntry, float]]:
        q = " ".join(ascii_words(query))
        terms = [t for t in dict.fromkeys(q.split()) if len(t) > 1]
        score: dict[int, float] = {}
        for t in terms:
            hits = set(self._names.get(t, ()))
            if len(t) >= 4:
                for n in self._long:
                    if n != t and (n.startswith(t) or t.startswith(n)):
                        hits.update(self._names[n])
            for i in hits:
                score[i] = score.get(i, 0.0) + 12
            for i in self._descriptions.get(t, ()):
                score[i] = score.get(i, 0.0) + 6
        for i in score:
            e = self.items[i]
            if e.name == q:
                score[i] += 100
            elif e.name.startswith(q):
                score[i] += 80
            elif q in e.name:
                score[i] += 60
            if q in e.description:
                score[i] += 30
        ranked = sorted(
            score.items(),
            key=lambda p: (-p[1], self.items[p[0]].entry.name, self.items[p[0]].entry.id),
        )
        return [(self.items[i].entry, s) for i, s in ranked]


def frontmatter_scores(query: str, entries: Iterable[SkillEntry]) -> list[tuple[SkillEntry, float]]:
    """Rank skills by their name and description alone, best first (no index needed)."""
    return NameIndex(entries).scores(query)


def resolve_skill(entries: Sequence[SkillEntry], name: str) -> SkillEntry:
    """A skill by `tap:name`, `tap:dir`, its id, or a bare name that only one skill has."""
    wanted = name.strip()
    if not wanted:
        raise QueryError(
            "the skill name is empty",
            next_step=NextStep(
                " — pass a name from skill_list", " — pass a name from `ep-mcp skills list`"
            ),
        )
    if ":" in wanted:
        tap, _, rest = wanted.partition(":")
        hits = [
            e
            for e in entries
            if e.tap == tap
            and rest in (e.name, e.directory, ".")
            and (rest != "." or e.directory == "")
        ]
    else:
        hits = [e for e in entries if e.name == wanted]
        if not hits:
            hits = [e for e in entries if e.name.lower() == wanted.lower()]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        ids = ", ".join(f"{e.tap}:{e.name}" for e in hits)
        raise SkillNotFoundError(
            f"'{wanted}' names {len(hits)} skills in different taps ({ids}) — ask for one "
            "as tap:name"
        )
    close = difflib.get_close_matches(wanted, sorted({e.name for e in entries}), n=3)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise SkillNotFoundError(
        f"no skill named '{wanted}' — {hint}",
        next_step=NextStep("list them with skill_list", "list them with `ep-mcp skills list`"),
    )
