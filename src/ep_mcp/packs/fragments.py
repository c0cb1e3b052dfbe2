"""Fragment ids (SPEC §4.1): ``<id or path>#<anchor>:<sha12>`` — one spelling for search and read.

The anchor is a GitHub-style slug of a heading: lower case, punctuation dropped, spaces to
hyphens ("v2.0 API" → ``v20-api``), so it reads like the anchor a markdown viewer links to.
``ep_search`` writes fragment ids and ``ep_read`` opens them through the functions here; the
hyphen-for-every-non-alphanumeric spelling ``ep_read`` once wrote (``v2-0-api``) is still
accepted on the way in.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

MAX_PATH_CHARS = 1024  # the longest path or id a read is asked for
TOP = "top"  # the anchor of text before any heading (and of a heading with no word in it)
DIGEST_CHARS = 12
MAX_SCAN_LINES = 400  # bounds the span search that tells duplicate headings apart

_DROP = re.compile(r"[^\w\s-]")
_HYPHENS = re.compile(r"[\s_]+")
_LEGACY = re.compile(r"[^a-z0-9]+")
_FRAGMENT = re.compile(r"(?P<ref>[^#]+)#(?P<anchor>[\w-]+)(?::(?P<digest>[0-9a-f]{12}))?")


def anchor(title: str | None) -> str:
    """The anchor of a heading: ``"v2.0 API"`` → ``v20-api``; no title or no word → ``top``."""
    text = unicodedata.normalize("NFKD", title or "").lower()
    slug = _HYPHENS.sub("-", _DROP.sub("", text)).strip("-")
    return slug or TOP


def anchors(title: str) -> tuple[str, ...]:
    """Every anchor that names a heading: the current one, then the older ``ep_read`` one."""
    legacy = _LEGACY.sub("-", title.lower()).strip("-") or TOP
    return (anchor(title), legacy)


def fragment_id(ref: str, title: str | None, span_hash: str) -> str:
    """``<ref>#<anchor of title>:<first 12 hex digits of the span's sha256>``."""
    return f"{ref}#{anchor(title)}:{span_hash[:DIGEST_CHARS]}"


def split_fragment_id(text: str) -> tuple[str, str, str | None] | None:
    """(ref, anchor, sha12 or None) of ``ref#anchor[:sha12]``; None when ``text`` is not one."""
    match = _FRAGMENT.fullmatch(text)
    if match is None:
        return None
    return match["ref"], match["anchor"], match["digest"]


def holds_span(lines: Sequence[str], digest: str) -> bool:
    """True when a run of whole ``lines`` has a sha256 that starts with ``digest`` (the first
    ``MAX_SCAN_LINES`` lines are searched)."""
    encoded = [line.encode("utf-8") for line in lines[:MAX_SCAN_LINES]]
    for start in range(len(encoded)):
        running = hashlib.sha256()
        for line in encoded[start:]:
            running.update(line)
            if running.hexdigest().startswith(digest):
                return True
    return False
