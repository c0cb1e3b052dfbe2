"""Turning a user's query into safe lexical terms (no FTS5 syntax ever passes through)."""

from __future__ import annotations

from ep_mcp.text import STOPWORDS, query_words

MAX_TERMS = 32
MAX_QUERY_CHARS = 2000  # longer queries are cut here; the tools' schemas refuse them


def query_terms(query: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased word terms of a query, de-duplicated, stop words dropped (unless all are)."""
    words = [w.replace("\u2019", "'") for w in query_words(query[:MAX_QUERY_CHARS])]
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
