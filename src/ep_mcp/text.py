"""Words, stems and stop words: the one place text is cut into terms.

A leaf module (it imports nothing of ep_mcp), so every layer can use it: the hashing embedder in
``index/``, the query terms and coverage signals in ``retrieval/``, the name scorer in ``skills/``.

The four word patterns mean four different things, so each keeps its own name:

- ``words``: runs of letters and digits in any script (an underscore splits) — prose;
- ``query_words``: the same, keeping an inner apostrophe (``don't``) — the user's query;
- ``identifier_words``: ``\\w`` runs (``snake_case`` stays one word) — the hashing embedder;
- ``ascii_words``: runs of ``a-z0-9`` — skill names and descriptions.

And what a reader is shown of a chunk: ``strip_leading_noise`` (a hit's text: its first lines
skip HTML comments, frontmatter blocks and residue, the rest verbatim) and ``readable`` (an
excerpt's or snippet's source: every comment gone too). Only what is shown — the indexed text
(BM25, embeddings, confidence features) is the raw span.
"""

from __future__ import annotations

import re
from functools import lru_cache

STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself just me my myself no nor not
    of off on once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself""".split()  # noqa: SIM905
)
STEM_SUFFIXES = ("ing", "ies", "es", "ed", "ly", "s")

_WORD = re.compile(r"[^\W_]+")
_QUERY_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_IDENTIFIER = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_YAML_LINE = r"(?:[ \t]*(?:[a-z_\"'][\w\"'-]*[ \t]*:|-[ \t])[^\n]*|[ \t]+\S[^\n]*|[ \t]*)\n"
# one piece of leading noise: a blank line, an HTML comment (an author's `<!-- context: … -->`
# line), a YAML block between `---` lines (a second frontmatter), or one residue line — a lone
# `---`, a lower-case `key: value`, a `[context: …]` line. Keys start lower-case, as frontmatter
# keys do, so a first line of prose such as "Note: …" stays.
_NOISE = re.compile(
    r"[ \t]*\n"
    r"|[ \t]*<!--.*?(?:-->|\Z)[ \t]*\n?"
    rf"|---[ \t]*\n(?:{_YAML_LINE})*?---[ \t]*(?:\n|\Z)"
    r"|[ \t]*(?:---+|[a-z_][\w-]*:[ \t]*\S[^\n]*|\[context:[^\n]*\])[ \t]*(?:\n|\Z)",
    re.DOTALL,
)


def words(text: str) -> list[str]:
    """Lower-case runs of letters and digits (any script); underscores and punctuation split."""
    return _WORD.findall(text.lower())


def query_words(text: str) -> list[str]:
    """Lower-case words of a query, an inner apostrophe kept (``don't``, also with U+2019)."""
    return [w.lower() for w in _QUERY_WORD.findall(text)]


def name_words(text: str) -> frozenset[str]:
    """Lower-cased query words written like names: a capital after the first letter
    (``EcoFlow``, ``UK``) or a capital first letter anywhere but in the query's first word
    (``Houdini``); not ``I``; a possessive's ``'s`` is dropped, as ``query_terms`` does."""
    found = [w.replace("\u2019", "'").split("'")[0] for w in _QUERY_WORD.findall(text)]
    return frozenset(
        w.lower()
        for i, w in enumerate(found)
        if len(w) > 1 and (any(c.isupper() for c in w[1:]) or (i > 0 and w[0].isupper()))
    )


def identifier_words(text: str) -> list[str]:
    """Lower-case ``\\w`` runs: like ``words``, but ``snake_case`` stays one word."""
    return _IDENTIFIER.findall(text.lower())


def ascii_words(text: str) -> list[str]:
    """Lower-case runs of ASCII letters and digits: every other character splits."""
    return _ASCII_WORD.findall(text.lower())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Crude suffix stripping: ``indexes``/``indexed``/``indexing`` → ``index``."""
    for suffix in STEM_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def strip_leading_noise(text: str) -> str:
    """``text`` from its first line of content: leading blank lines, HTML comments, frontmatter
    blocks and residue lines skipped; the rest verbatim. All noise: the text, stripped."""
    pos = 0
    while pos < len(text) and (m := _NOISE.match(text, pos)) and m.end() > pos:
        pos = m.end()
    rest = text[pos:]
    return rest if rest.strip() else text.strip()


def readable(text: str) -> str:
    """The source of an excerpt: every HTML comment removed, then the leading noise."""
    return strip_leading_noise(_COMMENT.sub("", text))
