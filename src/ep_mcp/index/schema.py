"""Opening an index file: damage checks, then numbered migrations (never edited once shipped).

``PRAGMA user_version`` records how many have run; an index written by a newer ep-mcp (more
migrations than this one knows) is refused, never rebuilt: it is another version, not damage.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import apsw

from ep_mcp.errors import IndexBuildError
from ep_mcp.index import diskerrors, integrity, placement

FORMAT_VERSION = 2  # the "format" recorded in every build's index features (2: windows)

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files(
        path TEXT PRIMARY KEY,
        file_hash TEXT NOT NULL,
        sidecar_hash TEXT,
        content_hash TEXT NOT NULL,
        title TEXT NOT NULL,
        type TEXT NOT NULL,
        tags TEXT NOT NULL,
        doc_id TEXT,
        info TEXT NOT NULL
    );
    CREATE TABLE chunks(
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        heading_path TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        byte_start INTEGER NOT NULL,
        byte_end INTEGER NOT NULL,
        text TEXT NOT NULL,
        context_prefix TEXT NOT NULL,
        span_hash TEXT NOT NULL,
        section TEXT,
        tokens INTEGER NOT NULL,
        UNIQUE(path, chunk_index)
    );
    CREATE INDEX chunks_path ON chunks(path);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
        text, title, headings, tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE vectors(chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
                         vec BLOB NOT NULL);
    CREATE TABLE embed_cache(key TEXT PRIMARY KEY, vec BLOB NOT NULL);
    """,
    # 2: chunks whose vector the provider has not given yet (a build carried on lexically)
    """
    CREATE TABLE pending_vectors(
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE
    );
    """,
    # 3: the later embedding windows of chunks longer than the model's (the first is `vectors`)
    """
    CREATE TABLE chunk_windows(
        id INTEGER PRIMARY KEY,
        chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        vec BLOB NOT NULL,
        UNIQUE(chunk_id, position)
    );
    ALTER TABLE vectors ADD COLUMN windows INTEGER NOT NULL DEFAULT 0;  -- later windows it has
    """,
)


def refuse_newer(conn: Any, path: Path) -> int:
    """The index's schema version; an error if a newer ep-mcp wrote it."""
    version = int(conn.execute("PRAGMA user_version").fetchall()[0][0])
    if version > len(MIGRATIONS):
        raise IndexBuildError(f"index {path} was written by a newer ep-mcp — delete it to rebuild")
    return version


def migrate(conn: Any, path: Path) -> None:
    """Run the migrations the index has not had yet, each in its own transaction."""
    version = refuse_newer(conn, path)
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        with conn:
            conn.execute(script)
            conn.execute(f"PRAGMA user_version={number}")


def real_path(path: Path) -> str:
    """The path SQLite is given: its folder resolved (the caller's, e.g. a linked home), so
    that ``SQLITE_OPEN_NOFOLLOW`` refuses only a link swapped in after the location checks."""
    return str(Path(os.path.realpath(path.parent)) / path.name)


NOFOLLOW = apsw.SQLITE_OPEN_NOFOLLOW


def open_index(path: Path, *, read_only: bool) -> Any:
    """An apsw connection to the index at ``path``: checked for damage, migrated (unless
    read-only), WAL and foreign keys on. Damage raises ``IndexDamagedError`` naming the file;
    anything but a regular file there (or beside it: ``-wal``, ``-shm``…), or a link, raises
    ``IndexPlacementError`` before anything opens it (a FIFO would block the open for good)."""
    placement.check_leaf(path)
    existed = path.exists()
    if existed:
        reason = integrity.check_file(path)
        if reason is not None:
            raise integrity.damaged(path, reason)
    elif not read_only:
        integrity.clear_mark(path)  # a marker outliving its index
    try:
        if read_only:
            flags = apsw.SQLITE_OPEN_READONLY
            if not path.exists():
                raise IndexBuildError(
                    f"no index at {path} — build it first with `ep-mcp index PACK`"
                )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        conn = apsw.Connection(real_path(path), flags=flags | NOFOLLOW)
    except (apsw.Error, OSError) as exc:
        raise IndexBuildError(f"cannot open index {path}: {exc} — check the folder") from exc
    conn.setbusytimeout(5000)
    try:
        if existed:
            refuse_newer(conn, path)  # another version's index is not damage: never rebuilt
            reason = integrity.check_database(conn, path.stat().st_size, path)
            if reason is not None:
                raise integrity.damaged(path, reason)
        if not read_only:
            conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn, path)
        conn.execute("PRAGMA foreign_keys=ON")
    except integrity.DAMAGE_ERRORS as exc:
        conn.close()
        raise integrity.damaged(path, integrity.describe(exc)) from exc
    except diskerrors.SQLITE_DISK_ERRORS as exc:  # a full or read-only disk is not damage
        conn.close()
        raise diskerrors.disk_error(path, exc) from exc
    except apsw.CantOpenError as exc:  # no -shm can be made beside it: a read-only folder
        conn.close()
        if read_only or os.access(path.parent, os.W_OK):
            raise
        raise diskerrors.disk_error(path, apsw.ReadOnlyError(str(exc))) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def peek_meta(path: Path, key: str) -> str | None:
    """One ``meta`` value of an existing index, read through a read-only connection before
    anything may open it for writing (opening a damaged index rebuilds it). None when there
    is no such file, no such key, or it cannot be read."""
    placement.check_leaf(path)
    if not path.is_file():
        return None
    try:
        conn = apsw.Connection(real_path(path), flags=apsw.SQLITE_OPEN_READONLY | NOFOLLOW)
    except apsw.Error:
        return None
    try:
        rows = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchall()
    except apsw.Error:
        return None
    finally:
        conn.close()
    return str(rows[0][0]) if rows else None
