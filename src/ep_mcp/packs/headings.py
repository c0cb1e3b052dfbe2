"""Headings of a document's body, as CommonMark sees them, and the heading path at any line.

Most files need the CommonMark block parse (markdown-it, the structure alone): a heading can
hide in a list, a quote or a fence, or be an underlined (setext) one. A body none of whose
lines could open such a block (no code indentation or tab, no quote, list, rule, fence, HTML,
link reference, underline or indented ``#``) and with only plain line breaks is *flat*: its
headings are exactly its ATX lines (``# Title``), read here the way markdown-it reads them
(``tests/packs/test_headings.py`` compares the two on many generated bodies). SciFact's
abstracts are all but 18 flat; finding their headings takes ~0.1 CPU-s instead of ~0.4.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ep_mcp.packs.models import Document

if TYPE_CHECKING:  # imported on the first structured file: a restart with no change parses none
    from markdown_it import MarkdownIt

# A line that could open a block other than a paragraph or an ATX heading (or be an underline);
# line breaks markdown-it and ``str.splitlines`` count differently, and the NUL it replaces.
_BLOCK_START = re.compile(r"\n(?: {0,3}[\t>*+\-_=<`~\[0-9]| {1,3}#| {4})")
_ODD_CHARS = "\r\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ODD = re.compile(f"[{_ODD_CHARS}]")
_ATX = re.compile(r"(#{1,6})([ \t][^\n]*|)(?:\n|\Z)")


def is_flat(body: str) -> bool:
    """Whether the body's block structure is flat: paragraphs and ATX headings only."""
    if body.isascii():  # the common case: a few scans for single characters, at C speed
        odd = any(c in body for c in _ODD_CHARS[:7])
    else:
        odd = _ODD.search(body) is not None
    return not odd and _BLOCK_START.search("\n" + body) is None


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int  # 1-based raw-file line of the heading


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """Block structure only: a heading's title is its inline token's raw content, so the
    inline pass (half of the parse time) is skipped."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable("inline")


def find_headings(doc: Document) -> list[Heading]:
    """Headings of the body (code fences excluded), with raw-file line numbers."""
    body, offset = doc.body, doc.body_line - 1
    if is_flat(body):
        return _flat_headings(body, offset)
    return _parsed_headings(body, offset)


def _parsed_headings(body: str, offset: int) -> list[Heading]:
    """The headings markdown-it's block parse finds (any structure)."""
    tokens = _parser().parse(body)
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


def _flat_headings(body: str, offset: int) -> list[Heading]:
    """The ATX headings of a body with a flat block structure, titled as markdown-it titles
    them: the text after the marks, less a closing run of ``#`` that follows a space."""
    found: list[Heading] = []
    line_of = _LineNumbers(body)
    for at in _hash_lines(body):
        match = _ATX.match(body, at)
        if match is None:
            continue
        rest = match.group(2).rstrip(" \t")
        bare = rest.rstrip("#")
        if bare and bare[-1] in " \t":
            rest = bare
        title = rest.strip()  # markdown-it trims CommonMark's spaces: all are str.isspace
        found.append(Heading(len(match.group(1)), title, line_of(at) + 1 + offset))
    return found


def _hash_lines(body: str) -> Iterator[int]:
    """Offsets of the lines that begin with ``#``, in order."""
    if body.startswith("#"):
        yield 0
    at = body.find("\n#")
    while at >= 0:
        yield at + 1
        at = body.find("\n#", at + 1)


class _LineNumbers:
    """0-based line of a character offset (lines counted at \\n only), found in order."""

    def __init__(self, text: str) -> None:
        self._text, self._pos, self._line = text, 0, 0

    def __call__(self, offset: int) -> int:
        self._line += self._text.count("\n", self._pos, offset)
        self._pos = offset
        return self._line


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
