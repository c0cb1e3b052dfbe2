"""Typed views of skills: search results, list rows, and bounded reads of SKILL.md."""

from __future__ import annotations

from pathlib import Path

from ep_mcp.errors import NotFoundError
from ep_mcp.hub.catalog import SkillEntry
from ep_mcp.hub.ranking import SkillCandidate
from ep_mcp.hub.results import SkillHit, SkillMatch, SkillRow, SkillText
from ep_mcp.hub.tapindex import is_card
from ep_mcp.index.store import StoredChunk
from ep_mcp.packs.safeopen import ContainmentError, read_contained
from ep_mcp.text import readable

SNIPPET_CHARS = 300
SKILL_MAX_BYTES = 2_000_000  # the default index.max_file_bytes: larger files were never indexed


def render_entry(entry: SkillEntry, *, score: float | None = None) -> SkillRow:
    return SkillRow(entry.id, entry.tap, entry.name, entry.description, entry.skill_file, score)


def render_candidate(
    cand: SkillCandidate, entry: SkillEntry, mirrors: list[str], sc: StoredChunk | None
) -> SkillHit:
    """One search result: the skill, and its best chunk as the snippet (heading and lines)."""
    if sc is None or is_card(sc.file.path):
        source, heading, lines = entry.skill_file, [entry.name], entry.frontmatter_lines
        snippet = entry.description
    else:
        source, heading, lines = sc.file.path, list(sc.chunk.heading_path), sc.chunk.line_range
        snippet = " ".join(readable(sc.chunk.text).split())
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rsplit(" ", 1)[0] + "…"
    match = SkillMatch(
        source_file=source,
        heading_path=tuple(heading),
        line_range=(lines[0], lines[1]),
        snippet=snippet,
        content_hash=entry.content_hash,
        legs=dict(cand.legs),
        mirrors=tuple(mirrors),
    )
    return SkillHit(render_entry(entry, score=cand.score), match)


def read_bounded(
    entry: SkillEntry,
    tap_root: Path,
    max_chars: int,
    offset: int = 0,
    *,
    max_bytes: int = SKILL_MAX_BYTES,
) -> SkillText:
    """SKILL.md's text from ``offset``, cut at a line boundary under ``max_chars``, announced.

    Read under the containment rule (``packs.safeopen``): a regular file inside the tap, outside
    ``.git`` and every hidden folder, reached by no link that leads out or into them.
    """
    try:
        raw = read_contained(tap_root, entry.skill_file, max_bytes).data
    except ContainmentError as exc:
        raise NotFoundError(
            f"{entry.id}: SKILL.md cannot be served ({exc.reason}) — run `ep-mcp update`, "
            "or fix the file in the tap"
        ) from None
    except OSError:
        raise NotFoundError(
            f"{entry.id}: SKILL.md is missing on disk — run `ep-mcp update`"
        ) from None
    text = raw.decode("utf-8", errors="replace")
    total = len(text)
    offset = max(0, min(int(offset), total))
    part = text[offset : offset + max_chars]
    truncated = offset + len(part) < total
    if truncated and "\n" in part:
        part = part[: part.rfind("\n") + 1]
    end = offset + len(part)
    note = (
        f"[truncated at {end} of {total} characters — read the rest with "
        f"skill_read(name='{entry.tap}:{entry.name}', offset={end})]"
        if truncated
        else None
    )
    return SkillText(render_entry(entry), tuple(entry.files), part, offset, total, truncated, note)
