"""FTS5's BM25, reproduced over a postings table on PostgreSQL (the lexical leg of ``PgIndex``).

The postings are FTS5's own: at publish they are read out of the artifact's FTS5 index through
an ``fts5vocab`` table of type ``instance`` (``pgload``), so a document's tokens are exactly
the ``porter unicode61 remove_diacritics 2`` tokens SQLite made. A query is tokenised by the
same tokenizer (apsw's FTS5 tokenizer API) and scored with FTS5's formula (``fts5_aux.c``,
``fts5Bm25Function``): for each phrase of ``"t1" OR "t2" …``

    idf = ln((N - n + 0.5) / (n + 0.5)), or 1e-6 when that is ≤ 0
    f   = Σ over the phrase's instances of the weight of their column
    s  += idf · f·(k1 + 1) / (f + k1·(1 - b + b·D / avgdl))        k1 = 1.2, b = 0.75

with N the rows, n the rows holding the phrase, D a row's tokens over all columns and avgdl
their mean. Every quoted term of ``lexical.top`` is one phrase (a repeated one counts again,
as in FTS5). The words of ``retrieval.lexical.query_terms`` are runs of letters and digits, so
each is one token; a term that still tokenises into several is scored as its tokens (FTS5
would ask for them adjacent) — the one place this is not FTS5's answer.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence

import apsw

K1 = 1.2
B = 0.75
TOKENIZER = ("porter", ("unicode61", "remove_diacritics", "2"))  # schema.py's chunks_fts

_local = threading.local()


def _tokenizer() -> apsw.FTS5Tokenizer:
    """This thread's FTS5 tokenizer (an in-memory connection of its own)."""
    tok = getattr(_local, "tok", None)
    if tok is None:
        conn = apsw.Connection(":memory:")
        tok = conn.fts5_tokenizer(TOKENIZER[0], list(TOKENIZER[1]))
        _local.conn, _local.tok = conn, tok
    return tok


@functools.lru_cache(maxsize=16384)
def term_tokens(term: str) -> tuple[str, ...]:
    """The FTS5 tokens of one quoted query term, as FTS5 would read ``"term"``."""
    words = _tokenizer()(
        term.encode("utf-8"),
        apsw.FTS5_TOKENIZE_QUERY,
        None,
        include_offsets=False,
        include_colocated=False,
    )
    return tuple(str(w) for w in words)


def phrases(terms: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(term, tokens) of each term ``lexical.top`` would quote, in order (quotes removed,
    blank ones dropped, as there)."""
    out = []
    for t in terms:
        safe = t.replace('"', "")
        if safe.strip():
            out.append((t, term_tokens(safe)))
    return out


def idf(n_rows: int, n_hit: int) -> float:
    """FTS5's IDF with its clamp."""
    value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
    return value if value > 0.0 else 1e-6


def weights3(weights: tuple[float, float, float]) -> tuple[float, float, float]:
    """The column weights as ``lexical.top`` hands them to ``bm25()`` (three decimals)."""
    a, b, c = (float(f"{float(x):.3f}") for x in weights)
    return a, b, c


TOP_SQL = """
SELECT p.chunk_id,
       sum(q.idf * (x.f * %(k1p1)s) / (x.f + %(k1)s * (%(omb)s + %(b)s * d.len / %(avgdl)s))) AS s
FROM unnest(%(tokens)s::text[], %(idfs)s::float8[]) AS q(term, idf)
JOIN postings p ON p.term = q.term
JOIN doclen d ON d.chunk_id = p.chunk_id
CROSS JOIN LATERAL (SELECT %(w0)s * p.tf0 + %(w1)s * p.tf1 + %(w2)s * p.tf2 AS f) x
GROUP BY p.chunk_id
ORDER BY s DESC, p.chunk_id
LIMIT %(n)s
"""


def top_params(
    tokens: Sequence[str],
    idfs: Sequence[float],
    n: int,
    weights: tuple[float, float, float],
    avgdl: float,
) -> dict[str, object]:
    w0, w1, w2 = weights3(weights)
    return {
        "tokens": list(tokens),
        "idfs": list(idfs),
        "n": n,
        "w0": w0,
        "w1": w1,
        "w2": w2,
        "k1": K1,
        "k1p1": K1 + 1.0,
        "b": B,
        "omb": 1.0 - B,
        "avgdl": avgdl if avgdl > 0 else 1.0,
    }
