"""Reconstruct mode (SPEC §4.1): exact provenance of a hit — fragment id, lines, bytes, excerpt."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ep_mcp.packs.fragments import anchor, fragment_id
from ep_mcp.text import readable

EXCERPT_CHARS = 240


@dataclass(frozen=True)
class Provenance:
    fragment_id: str
    line_range: tuple[int, int]
    byte_offset: tuple[int, int]
    original_markdown: str
    content_hash: str  # of the span
    excerpt: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "fragment_id": self.fragment_id,
            "line_range": list(self.line_range),
            "byte_offset": list(self.byte_offset),
            "original_markdown": self.original_markdown,
            "span_content_hash": self.content_hash,
            "excerpt": self.excerpt,
        }


def _section_title(section: str | None, heading_path: tuple[str, ...]) -> str | None:
    """The sidecar section, else the last heading, else None (text before any heading)."""
    return section or (heading_path[-1] if heading_path else None)


def section_slug(section: str | None, heading_path: tuple[str, ...]) -> str:
    """GitHub-style slug of the section (sidecar id, else the last heading), else ``top``."""
    return anchor(_section_title(section, heading_path))


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The span's prose on one line (comments and residue skipped), cut at a word boundary."""
    flat = " ".join(readable(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def provenance(
    *,
    ident: str,
    section: str | None,
    heading_path: tuple[str, ...],
    text: str,
    span_hash: str,
    line_range: tuple[int, int],
    byte_range: tuple[int, int],
) -> Provenance:
    """``<id or path>#<section-slug>:<sha12>`` and the span facts."""
    digest = span_hash or hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Provenance(
        fragment_id=fragment_id(ident, _section_title(section, heading_path), digest),
        line_range=line_range,
        byte_offset=byte_range,
        original_markdown=text,
        content_hash=f"sha256:{digest}",
        excerpt=excerpt(text),
    )


def span_changed(live: bytes | None, byte_range: tuple[int, int], span_hash: str) -> bool:
    """True when the live file's bytes at the span no longer hash to what was indexed
    (or the file is gone)."""
    if live is None:
        return True
    start, end = byte_range
    return hashlib.sha256(live[start:end]).hexdigest() != span_hash
