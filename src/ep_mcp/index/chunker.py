"""EP-native chunking: a file is one atom; big atoms split at ##/### headings; sidecars decide.

Every chunk is an exact span of the raw file: its text is ``raw_lines[a-1:b]`` joined, and it
knows its 1-based inclusive line range, its byte range ``[start, end)`` in the UTF-8 file, the
heading path that leads to it and the sha256 of its text. The ``context_prefix`` is kept apart:
it is prepended to what is embedded and lexically indexed, never to what is returned.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ep_mcp.packs.headings import Heading, HeadingPaths, find_headings
from ep_mcp.packs.models import Document

__all__ = ["Chunk", "Heading", "HeadingPaths", "chunk_document", "find_headings", "whole_text"]

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Chunk:
    path: str
    chunk_index: int
    heading_path: tuple[str, ...]
    line_range: tuple[int, int]  # 1-based, inclusive, raw file lines
    byte_range: tuple[int, int]  # [start, end) in the UTF-8 encoded raw file
    text: str  # the exact span
    context_prefix: str = ""
    section: str | None = None

    @property
    def span_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def indexed_text(self) -> str:
        """What is embedded and lexically indexed: the prefix, then the span."""
        return f"{self.context_prefix}\n\n{self.text}" if self.context_prefix else self.text


def _line_offsets(lines: Sequence[str]) -> list[int]:
    """Byte offset of the start of each line, plus the file's length at the end."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    return offsets


def _span(
    doc: Document,
    lines: Sequence[str],
    offsets: Sequence[int],
    index: int,
    first: int,
    last: int,
    paths: HeadingPaths,
    prefix: str = "",
    section: str | None = None,
) -> Chunk:
    return Chunk(
        path=doc.path,
        chunk_index=index,
        heading_path=paths.at(first if section is None else last),
        line_range=(first, last),
        byte_range=(offsets[first - 1], offsets[last]),
        text="".join(lines[first - 1 : last]),
        context_prefix=prefix,
        section=section,
    )


def _sidecar_chunks(
    doc: Document, lines: Sequence[str], offsets: Sequence[int], paths: HeadingPaths
) -> list[Chunk]:
    assert doc.sidecar is not None
    out: list[Chunk] = []
    for sc in sorted(doc.sidecar.chunks, key=lambda c: c.order):
        first, last = sc.line_range
        chunk = _span(doc, lines, offsets, len(out), first, last, paths, sc.context_prefix)
        if sc.section:
            path = paths.at(first)
            if not path or path[-1] != sc.section:
                path = (*path[:1], sc.section) if path else (sc.section,)
            chunk = Chunk(**{**chunk.__dict__, "heading_path": path, "section": sc.section})
        if chunk.text.strip():
            out.append(chunk)
    return out


def _split_points(headings: Sequence[Heading], body_line: int, n_lines: int) -> list[int]:
    """Start lines of the sections: the body start, then every ##/### heading."""
    starts = [body_line] + [h.line for h in headings if h.level in (2, 3) and h.line > body_line]
    return [s for s in sorted(set(starts)) if s <= n_lines]


def _first_content_line(lines: Sequence[str], start: int) -> int:
    while start <= len(lines) and not lines[start - 1].strip():
        start += 1
    return start


def whole_text(doc: Document) -> str:
    """The text of a document's one-chunk form (what ``chunk_document`` counts first)."""
    if doc.body_line == 1 and doc.text[:1].strip():  # its first line is content: all of it
        return doc.text
    lines = doc.text.splitlines(keepends=True)
    return "".join(lines[_first_content_line(lines, doc.body_line) - 1 :])


def chunk_document(
    doc: Document,
    count_tokens: TokenCounter,
    max_tokens: int = 1000,
    prefix_template: str = "",
) -> list[Chunk]:
    """Cut one document into chunks (SPEC §2)."""
    lines = doc.text.splitlines(keepends=True)
    if not lines:
        return []
    offsets = _line_offsets(lines)
    headings = find_headings(doc)
    paths = HeadingPaths(headings)
    if doc.sidecar is not None:
        chunks = _sidecar_chunks(doc, lines, offsets, paths)
        if chunks:
            return chunks
    first = _first_content_line(lines, doc.body_line)
    if first > len(lines):
        return []
    whole = _span(doc, lines, offsets, 0, first, len(lines), paths)
    if count_tokens(whole.text) <= max_tokens:
        return [_with_prefix(whole, doc, prefix_template)]
    starts = _split_points(headings, first, len(lines))
    bounds = [*starts, len(lines) + 1]
    out: list[Chunk] = []
    for a, b in itertools.pairwise(bounds):
        chunk = _span(doc, lines, offsets, len(out), a, b - 1, paths)
        if chunk.text.strip():
            out.append(_with_prefix(chunk, doc, prefix_template))
    return out


def _with_prefix(chunk: Chunk, doc: Document, template: str) -> Chunk:
    if not template:
        return chunk
    section = " > ".join(chunk.heading_path[1:]) or "opening"
    try:
        prefix = template.format(title=doc.title, section=section, path=doc.path, type=doc.type)
    except (KeyError, IndexError, ValueError):
        return chunk
    return Chunk(**{**chunk.__dict__, "context_prefix": prefix})
