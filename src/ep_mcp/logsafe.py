"""Log lines are data-safe: what a pack brings (a file name, a title, a slug) cannot forge one.

A file named ``a\\nERROR forged line.md`` logged as is would write a second, forged line; an
ESC sequence would rewrite the terminal. :class:`SafeFormatter` escapes every control character
of the *rendered message* (C0, DEL, C1, U+2028/U+2029 and the bidi overrides) — one mechanism
for every call site — while a traceback (``exc_info``) is appended as is. :func:`one_line` is
the same rule for the one-line warnings and errors the CLI prints itself. A leaf module (it
imports nothing of ep_mcp), so the CLI and the serving workers both install it.
"""

from __future__ import annotations

import logging
import re
import sys

FORMAT = "%(levelname)s %(name)s: %(message)s"

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """``text`` with every control character escaped (``\\n``, ``\\x1b``, ``\\u2028``…)."""
    return _CONTROL.sub(_escape, text)


class SafeFormatter(logging.Formatter):
    """A formatter whose message part is :func:`one_line`; the traceback is left as is."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return one_line(super().formatMessage(record))


def configure(level: str = "WARNING") -> None:
    """Log to stderr through :class:`SafeFormatter` (stdout belongs to results and MCP)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter(FORMAT))
    logging.basicConfig(level=getattr(logging, level.upper(), logging.WARNING), handlers=[handler])
