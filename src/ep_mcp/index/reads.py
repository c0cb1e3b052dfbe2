"""The reads of a pack's index that are plain SQL over chunks and files (``Store`` has them)."""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections.abc import Iterator, Sequence
from types import MappingProxyType
from typing import Any

from ep_mcp.index.records import ChunkRecord, FileRecord, StoredChunk
from ep_mcp.index.versioned import VersionMemo


class StoreReads:
    """Chunks and files read back; ``_reader`` is the calling thread's read-only connection."""

    _local: threading.local  # the calling thread's reader, its term counts and its memo

    def _reader(self) -> Any:
        raise NotImplementedError

    def _memo(self) -> VersionMemo:
        """What this thread's reader remembers of the index version it sees (``versioned``)."""
        conn = self._reader()  # first: it makes this thread's memo too
        memo: VersionMemo = self._local.memo
        return memo.at(conn)

    _CHUNK_COLUMNS = (
        "c.id, c.path, c.chunk_index, c.heading_path, c.line_start, c.line_end, c.byte_start, "
        "c.byte_end, c.text, c.context_prefix, c.span_hash, c.section, c.tokens, "
        "f.file_hash, f.sidecar_hash, f.content_hash, f.title, f.type, f.tags, f.doc_id, f.info"
    )

    @staticmethod
    def _row(row: Sequence[Any]) -> StoredChunk:
        return stored_chunk(tuple(row))

    def _batched(self, sql: str, keys: Sequence[Any]) -> Iterator[Any]:
        """The rows of ``sql`` over ``keys``, 500 at a time into its ``{marks}`` placeholders."""
        for start in range(0, len(keys), 500):
            batch = tuple(keys[start : start + 500])
            yield from self._reader().execute(sql.format(marks=",".join("?" * len(batch))), batch)

    def chunks_by_ids(self, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The rows of ``chunk_ids`` that exist, in id order; only those not read before in
        this index version on this thread are read (``_memo``)."""
        sql = (
            f"SELECT {self._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "
            "WHERE c.id IN ({marks})"
        )
        known = self._memo().rows
        missing = [cid for cid in dict.fromkeys(chunk_ids) if cid not in known]
        if missing:
            known.update((sc.id, sc) for sc in map(self._row, self._batched(sql, missing)))
        return {cid: known[cid] for cid in sorted(set(chunk_ids)) if cid in known}

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        sql = (
            f"SELECT {self._CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.path = c.path "
            "WHERE c.path = ? ORDER BY c.chunk_index"
        )
        return [self._row(r) for r in self._reader().execute(sql, (path,)).fetchall()]

    def file_tokens(self, paths: Sequence[str]) -> dict[str, int]:
        """Token count of each indexed file (the sum over its chunks)."""
        sql = "SELECT path, sum(tokens) FROM chunks WHERE path IN ({marks}) GROUP BY path"
        return {str(r[0]): int(r[1]) for r in self._batched(sql, paths)}

    def paths_of(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        sql = "SELECT id, path FROM chunks WHERE id IN ({marks})"
        return {int(r[0]): str(r[1]) for r in self._batched(sql, chunk_ids)}

    def files(self) -> list[FileRecord]:
        rows = self._reader().execute(
            "SELECT path, file_hash, sidecar_hash, content_hash, title, type, tags, doc_id, "
            "info FROM files ORDER BY path"
        )
        return [_file_record(r) for r in rows.fetchall()]


@functools.lru_cache(maxsize=4096)
def stored_chunk(row: tuple[Any, ...]) -> StoredChunk:
    """A chunk row (``_CHUNK_COLUMNS``) as its record, built once per distinct row: the same
    few hundred rows come back query after query, and making the three records (and decoding
    the file's info) cost more than the SQL that read them. Keyed by every column's value, so
    a row that changed is a new record; records are frozen and the info mapping read-only."""
    cid, path, idx, hp, ls, le, bs, be, text, prefix, span, section, tokens = row[:13]
    chunk = ChunkRecord(
        path, idx, json_tuple(hp), (ls, le), (bs, be), text, prefix, span, section, tokens
    )
    file = _file_record((path, *row[13:]))
    return StoredChunk(int(cid), chunk, dataclasses.replace(file, info=MappingProxyType(file.info)))


@functools.lru_cache(maxsize=8192)
def json_tuple(raw: str) -> tuple[str, ...]:
    """A JSON list column (heading paths, tags) as a tuple, decoded once per distinct text:
    a query reads a few dozen rows whose paths and tags repeat (tuples are immutable, so
    sharing them is safe)."""
    return tuple(json.loads(raw))


def _file_record(r: Sequence[Any]) -> FileRecord:
    """A ``files`` row (path, file_hash, sidecar_hash, content_hash, title, type, tags, doc_id,
    info) as its record."""
    tags = json_tuple(r[6])
    return FileRecord(r[0], r[1], r[2], r[3], r[4], r[5], tags, r[7], json.loads(r[8]))
