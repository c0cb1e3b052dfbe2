"""Turning a user's query into safe lexical terms (no FTS5 syntax ever passes through)."""

from __future__ import annotations

import re

MAX_TERMS = 32
MAX_QUERY_CHARS = 2000

STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself just me my myself no nor not
    of off on once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself""".split()  # noqa: SIM905
)

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)


def query_terms(query: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased word terms of a query, de-duplicated, stop words dropped (unless all are)."""
    words = [w.lower().replace("\u2019", "'") for w in _WORD.findall(query[:MAX_QUERY_CHARS])]
    words = [w.split("'")[0] if "'" in w else w for w in words]
    seen: dict[str, None] = {}
    for w in words:
        if w:
            seen.setdefault(w, None)
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    if content and not keep_stopwords:
        terms = content
    return terms[:MAX_TERMS]
