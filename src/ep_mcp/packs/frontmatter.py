"""Frontmatter (YAML between `---` lines) split from a markdown text, and the body hash."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ep_mcp.packs.yamlsafe import (
    FRONTMATTER_MAX_BYTES,
    FRONTMATTER_MAX_NODES,
    YamlError,
    YamlLimitError,
    load_yaml,
)

_OPEN = re.compile(r"---[ \t]*\r?\n?")
_CLOSE = re.compile(r"(---|\.\.\.)[ \t]*\r?\n?")
_HEADING = re.compile(r"#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r"[ \t]{0,3}(```|~~~)")


@dataclass(frozen=True)
class Frontmatter:
    """Parsed frontmatter. ``problem`` is a warning; ``hostile`` means skip the whole file."""

    meta: dict[str, Any] = field(default_factory=dict)
    body_line: int = 1
    problem: str | None = None
    problem_line: int | None = None
    hostile: bool = False


def split_frontmatter(text: str) -> tuple[str | None, int]:
    """Return (YAML text or None, 1-based line where the body starts)."""
    if not text.startswith("---"):  # no opening line (most files): no need to split the text
        return None, 1
    lines = text.splitlines(keepends=True)
    if not lines or not _OPEN.fullmatch(lines[0]):
        return None, 1
    for number, line in enumerate(lines[1:], start=2):
        if _CLOSE.fullmatch(line):
            return "".join(lines[1 : number - 1]), number + 1
    return None, 1  # never closed: the whole text is body


UNCLOSED = "frontmatter opened at line 1 is never closed (end it with a `---` line)"


def is_unclosed(text: str) -> bool:
    """The text opens a frontmatter block at line 1 and never closes it."""
    if not text.startswith("---"):
        return False
    lines = text.splitlines(keepends=True)
    opens = bool(lines) and _OPEN.fullmatch(lines[0]) is not None
    return opens and split_frontmatter(text)[0] is None


def parse_frontmatter(text: str, *, source: str = "<string>") -> Frontmatter:
    """Split and parse frontmatter; a bad block becomes a problem, never an exception."""
    raw, body_line = split_frontmatter(text)
    if raw is None and is_unclosed(text):
        return Frontmatter(body_line=body_line, problem=UNCLOSED, problem_line=1)
    if raw is None or not raw.strip():
        return Frontmatter(body_line=body_line)
    try:
        meta = load_yaml(
            raw, source=source, max_bytes=FRONTMATTER_MAX_BYTES, max_nodes=FRONTMATTER_MAX_NODES
        )
    except YamlError as exc:
        line = exc.line + 1 if exc.line else None  # +1: the opening `---` line
        hostile = isinstance(exc, YamlLimitError)
        return Frontmatter({}, body_line, f"frontmatter: {exc.problem}", line, hostile)
    if meta is None:
        return Frontmatter(body_line=body_line)
    if not isinstance(meta, dict):
        kind = type(meta).__name__
        problem = f"frontmatter is a YAML {kind}, not a mapping — ignored; use `key: value` lines"
        return Frontmatter({}, body_line, problem, 2)
    return Frontmatter({str(k): v for k, v in meta.items()}, body_line)


def body_of(text: str, body_line: int) -> str:
    """The text from ``body_line`` on (same as ``Document.body``)."""
    if body_line == 1:
        return text
    return "".join(text.splitlines(keepends=True)[body_line - 1 :])


def body_hash(body: str) -> str:
    """ExpertPack content hash: sha256 of the body with leading newlines stripped."""
    return "sha256:" + hashlib.sha256(body.lstrip("\n").encode("utf-8")).hexdigest()


def iter_prose_lines(text: str, start_line: int = 1) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line) outside fenced code blocks, from ``start_line``."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if number < start_line:
            continue
        head = line[:6]  # a fence starts within it: the regex runs on few lines
        match = _FENCE.match(line) if "`" in head or "~" in head else None
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def first_heading(text: str, start_line: int = 1) -> str | None:
    """The first `# ` heading outside code fences, or None."""
    for _, line in iter_prose_lines(text, start_line):
        match = _HEADING.fullmatch(line)
        if match:
            return match.group(1).strip()
    return None
