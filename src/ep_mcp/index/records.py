"""What the index stores of a pack, as plain records: files, chunks, and chunks read back.

No SQL and no storage engine here: the builder writes these, any engine that serves a pack
(the SQLite store today) reads them back, and retrieval ranks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class FileRecord:
    """What the index keeps of one file, besides its chunks."""

    path: str
    file_hash: str
    sidecar_hash: str | None
    content_hash: str
    title: str
    type: str
    tags: tuple[str, ...]
    doc_id: str | None
    info: Mapping[str, Any]  # freshness, requires, tiers, skill: small JSON


@dataclass(frozen=True)
class ChunkRecord:
    path: str
    chunk_index: int
    heading_path: tuple[str, ...]
    line_range: tuple[int, int]
    byte_range: tuple[int, int]
    text: str
    context_prefix: str
    span_hash: str
    section: str | None
    tokens: int


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as read back, joined with its file's record."""

    id: int
    chunk: ChunkRecord
    file: FileRecord


@dataclass(frozen=True)
class FileWrite:
    record: FileRecord
    chunks: tuple[ChunkRecord, ...]
    vectors: npt.NDArray[np.float32] | None  # one row per chunk, or None (lexical-only index)
    pending: frozenset[int] = frozenset()  # chunk positions awaiting a vector (row ignored)
    # chunk position → the vectors of its later embedding windows (``index/windows.py``)
    windows: Mapping[int, npt.NDArray[np.float32]] = field(default_factory=dict)
