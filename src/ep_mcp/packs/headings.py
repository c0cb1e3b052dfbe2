"""Headings of a document's body, as CommonMark sees them, and the heading path at any line.

Most files need the CommonMark block parse (markdown-it, the structure alone): a heading can
hide in a list, a quote or a fence, or be an underlined (setext) one. A body none of whose
lines could open such a block (no code indentation or tab, no quote, list, rule, fence, HTML,
link reference, underline or indented ``#``) and with only plain line breaks is *flat*: its
headings are exactly its ATX lines (``# Title``), read here the way markdown-it reads them
(``tests/packs/test_headings.py`` compares the two on many generated bodies). SciFact's
abstracts are all but 18 flat; finding their headings takes ~0.1 CPU-s instead of ~0.4.

A body with structure is first *scanned* (``_scanned_headings``): a line at column 0 that opens
an ATX heading is a heading wherever it stands, since it closes every list and quote, unless a
fence or an HTML block started at the top level hides it; those two are followed exactly
(fences at any indentation with spaces only before them, ``<!--`` comments at column 0 or 1),
and a body where they cannot be (a tab before a block, a fence whose lines fall back left,
other HTML at the top level) goes to the parse whole. Between two such headings everything
starts afresh, so a stretch with a line that could be some other heading (an indented or
nested ``#``, an underline of a paragraph) is parsed alone; the other stretches have no
headings. ``tests/packs/test_headings.py`` compares the scan with the parse on generated
bodies of lists, quotes, fences, comments and underlines, and on every file of the packs.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ep_mcp.packs.models import Document

logger = logging.getLogger(__name__)

if TYPE_CHECKING:  # imported on the first structured file: a restart with no change parses none
    from markdown_it import MarkdownIt

# A line that could open a block other than a paragraph or an ATX heading (or be an underline);
# line breaks markdown-it and ``str.splitlines`` count differently, and the NUL it replaces.
_BLOCK_START = re.compile(r"\n(?: {0,3}[\t>*+\-_=<`~\[0-9]| {1,3}#| {4})")
_ODD_CHARS = "\r\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ODD = re.compile(f"[{_ODD_CHARS}]")
_ATX = re.compile(r"(#{1,6})([ \t][^\n]*|)(?:\n|\Z)")
_ATX_START = re.compile(r"#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r"( *)(`{3,}|~{3,})(.*)")
# a line that could be a heading, an HTML block or an underline in some list or quote
_MAYBE = re.compile(r"[ \t>*+\-0-9.)]*(?:[#<]|[=\-]+[ \t]*$)")
_TOP_HTML = re.compile(r" {0,3}<")
_BULLET = re.compile(r" {0,3}[-+*]( +)[^ \t]")  # a bullet item with text: it ends a paragraph
_RULE = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})")


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
    """Headings of the body (code fences excluded), with raw-file line numbers; a body the
    parser fails on keeps its ATX lines, so one hostile file cannot stop a build or a read."""
    body, offset = doc.body, doc.body_line - 1
    if is_flat(body):
        return _flat_headings(body, offset)
    try:
        scanned = _scanned_headings(body, offset)
        return scanned if scanned is not None else _parsed_headings(body, offset)
    except (IndexError, ValueError, RecursionError) as exc:  # markdown-it 4 on some nested HTML
        logger.warning(
            "%s: the markdown parser failed (%s); its # lines are taken as its headings — "
            "check the file's HTML blocks",
            doc.path,
            exc,
        )
        return _flat_headings(body, offset)


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
    """The ATX headings of a body with a flat block structure (``_heading`` titles them)."""
    found: list[Heading] = []
    line_of = _LineNumbers(body)
    for at in _hash_lines(body):
        match = _ATX.match(body, at)
        if match is not None:
            found.append(_heading(match, line_of(at) + 1 + offset))
    return found


def _atx(line: str, number: int) -> Heading:
    """The ATX heading of a line that opens one (``_ATX_START``)."""
    match = _ATX.match(line)
    assert match is not None
    return _heading(match, number)


def _heading(match: re.Match[str], number: int) -> Heading:
    """An ``_ATX`` match as a heading, titled as markdown-it titles it: the text after the
    marks, less a closing run of ``#`` that follows a space, trimmed (CommonMark's spaces are
    all ``str.isspace``)."""
    rest = match.group(2).rstrip(" \t")
    bare = rest.rstrip("#")
    if bare and bare[-1] in " \t":
        rest = bare
    return Heading(len(match.group(1)), rest.strip(), number)


class _Unsure(Exception):
    """The scan cannot tell whether a fence or an HTML block hides a line: parse it all."""


def _scanned_headings(body: str, offset: int) -> list[Heading] | None:
    """The headings of a structured body without parsing the stretches that have none, or
    None when the scan cannot vouch for them (see the module docstring)."""
    if _ODD.search(body) is not None:
        return None
    lines = body.split("\n")
    try:
        cuts, unsure = _scan(lines)
    except _Unsure:
        return None
    found: list[Heading] = []
    start = 0
    for at in [*cuts, len(lines)]:
        if start in unsure:
            found += _parsed_headings("\n".join(lines[start:at]), offset + start)
        if at < len(lines):
            found.append(_atx(lines[at], at + 1 + offset))
        start = at + 1
    return found


def _scan(lines: Sequence[str]) -> tuple[list[int], set[int]]:
    """(lines that are headings at column 0, first lines of the stretches between them that
    must be parsed); raises ``_Unsure``."""
    cuts: list[int] = []
    unsure: set[int] = set()
    start, text_before = 0, False  # text_before: the line before may be a paragraph's
    item: int | None = None  # every line since a top-level bullet item is inside it (column)
    fence: tuple[int, str, int] | None = None  # indentation, mark, length
    comment = False
    for n, line in enumerate(lines):
        text = line.lstrip(" ")
        indent = len(line) - len(text)
        if comment:  # an HTML block at the top level: no paragraph runs on after it
            comment, text_before = "-->" not in line, False
        elif fence is not None:
            if _closes(fence, text, indent):
                # indented 4 or more, the "fence" may be a paragraph's lines: text may run on
                text_before, fence = fence[0] > 3, None
        elif not text.strip(" \t"):
            text_before, item = False, None
        elif text[0] == "\t":
            raise _Unsure
        elif (opened := _fence(line)) is not None:
            fence, item = opened, None
        elif indent == 0 and _ATX_START.match(line):
            cuts.append(n)
            start, text_before, item = n + 1, False, None
        elif _TOP_HTML.match(line):
            if indent > 1 or not text.startswith("<!--"):
                raise _Unsure  # an HTML block: hides what follows until a blank line or so
            comment, text_before, item = "-->" not in line, False, None
        else:
            match = _MAYBE.match(line)
            if match is not None and (
                line[match.end() - 1] in "#<" or (text_before and (indent or item is None))
            ):
                unsure.add(start)  # (an underline at column 0 right after a bullet item's
            text_before = True  # lines is a rule or the item's text: no paragraph of its own)
            item = _item_column(line, indent, item)
    return cuts, unsure


def _item_column(line: str, indent: int, item: int | None) -> int | None:
    """The content column of the bullet item this line is in, if it starts one at the top
    level or goes on with one (indented to its column); else None."""
    if item is not None and indent >= item:
        return item
    bullet = _BULLET.match(line)
    if bullet is None or _RULE.fullmatch(line.rstrip(" \t")):
        return None
    gap = len(bullet.group(1))
    return bullet.start(1) + (gap if gap <= 4 else 1)


def _fence(line: str) -> tuple[int, str, int] | None:
    match = _FENCE.fullmatch(line)
    if match is None or (match.group(2)[0] == "`" and "`" in match.group(3)):
        return None
    return len(match.group(1)), match.group(2)[0], len(match.group(2))


def _closes(fence: tuple[int, str, int], text: str, indent: int) -> bool:
    """Whether a line inside the fence closes it. A fence opened at column 0 or 1 is at the
    top level; one indented further may be in a list item, whose own indentation is unknown
    (at most 3 less): then any line that could end the item or close the fence only maybe is
    ``_Unsure``."""
    opened_at, mark, length = fence
    if not text.strip(" \t"):
        return False
    run = len(text) - len(text.lstrip(mark))
    closer = run >= length and not text[run:].strip(" \t")
    if opened_at <= 1:
        return closer and indent <= 3
    if text[0] == "\t" or indent < opened_at or (closer and opened_at < indent <= opened_at + 3):
        raise _Unsure
    return closer and indent == opened_at


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
