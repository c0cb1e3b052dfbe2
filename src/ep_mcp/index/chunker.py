"""EP-native chunking: a file is one atom; big atoms split at ##/### headings; sidecars decide.

Every chunk is an exact span of the raw file: its text is ``raw_lines[a-1:b]`` joined, and it
knows its 1-based inclusive line range, its byte range ``[start, end)`` in the UTF-8 file, the
heading path that leads to it and the sha256 of its text. The ``context_prefix`` is kept apart:
it is prepended to what is embedded and lexically indexed, never to what is returned.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt

from ep_mcp.packs.models import Document

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


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int  # 1-based raw-file line of the heading


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """Block structure only: a heading's title is its inline token's raw content, so the
    inline pass (half of the parse time) is skipped."""
    return MarkdownIt("commonmark").disable("inline")


def find_headings(doc: Document) -> list[Heading]:
    """Headings of the body (code fences excluded), with raw-file line numbers."""
    body = doc.body
    tokens = _parser().parse(body)
    offset = doc.body_line - 1
    # markdown-it counts only \n, \r\n and \r as line breaks; `str.splitlines` (which the
    # line ranges here use) also breaks at \f, \x1c, U+2028 ...: map one count to the other.
    starts = [0] + [
        i + 1 for i, line in enumerate(body.splitlines(keepends=True)) if line[-1:] in "\n\r"
    ]
    found: list[Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            line = starts[min(tok.map[0], len(starts) - 1)]
            found.append(Heading(int(tok.tag[1]), title, line + 1 + offset))
    return found


def _line_offsets(lines: Sequence[str]) -> list[int]:
    """Byte offset of the start of each line, plus the file's length at the end."""
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    return offsets


class HeadingPaths:
    """The chain of headings (outermost first) in force at any raw-file line, worked out once
    per file: one pass over the headings, then a bisect per lookup (a file of 150,000
    headings chunks in linear time, not quadratic)."""

    def __init__(self, headings: Sequence[Heading]) -> None:
        self._lines: list[int] = []
        self._paths: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for h in headings:
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
            self._lines.append(h.line)
            self._paths.append(tuple(x.title for x in stack))

    def at(self, line: int) -> tuple[str, ...]:
        found = bisect.bisect_right(self._lines, line)
        return self._paths[found - 1] if found else ()


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
