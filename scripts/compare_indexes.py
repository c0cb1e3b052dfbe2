"""Compare two index.db files table by table, row by row; exit 1 when their contents differ.

    python scripts/compare_indexes.py OLD/index.db NEW/index.db

Compared: every ordinary table (files, chunks with their token counts, vectors, the embedding
cache, pending rows, meta but for the keys that record when and how long a build ran), the FTS5
table's rows and, through ``fts5vocab``, every indexed term instance (term, row, column,
offset) — so two indexes whose FTS5 segments are laid out differently but index the same terms
compare equal. Used to check that a faster build writes the same index (issue #21).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import apsw

TABLES = ("files", "chunks", "vectors", "embed_cache", "pending_vectors")
VOLATILE_META = ("indexed_at", "fast_state")  # when it was built, the stat snapshot


def _rows(db: apsw.Connection, sql: str) -> Iterator[tuple[object, ...]]:
    yield from db.execute(sql)


def _queries(db: apsw.Connection) -> dict[str, str]:
    have = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    found = {t: f"SELECT * FROM {t} ORDER BY 1" for t in TABLES if t in have}
    found["meta"] = "SELECT key, value FROM meta ORDER BY key"
    found["chunks_fts"] = "SELECT rowid, text, title, headings FROM chunks_fts ORDER BY rowid"
    db.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, chunks_fts, instance)")
    found["fts terms"] = "SELECT term, doc, col, offset FROM temp.vocab ORDER BY doc, col, offset"
    return found


def compare(old_path: str, new_path: str) -> list[str]:
    old = apsw.Connection(old_path, flags=apsw.SQLITE_OPEN_READONLY)
    new = apsw.Connection(new_path, flags=apsw.SQLITE_OPEN_READONLY)
    problems: list[str] = []
    queries = _queries(old)
    if queries != _queries(new):
        problems.append("the two indexes do not have the same tables")
    for name, sql in queries.items():
        a, b = list(_rows(old, sql)), list(_rows(new, sql))
        if name == "meta":
            a = [r for r in a if not str(r[0]).startswith(VOLATILE_META)]
            b = [r for r in b if not str(r[0]).startswith(VOLATILE_META)]
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            where = f"first difference at row {first}" if first is not None else "lengths differ"
            problems.append(f"{name}: {len(a)} vs {len(b)} rows, {where}")
        print(f"{name:16s} {len(a):>8} rows  {'same' if a == b else 'DIFFERENT'}")
    return problems


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    problems = compare(sys.argv[1], sys.argv[2])
    for line in problems:
        print(line)
    raise SystemExit(1 if problems else 0)


if __name__ == "__main__":
    main()
