"""What one reader connection remembers of one index version (``Store`` keeps one per thread).

Every query asks the index for the same few constants (its features, its generation, whether
it has vectors, how many wait for one) and for the rows of the same few hundred chunks; each
is an SQL statement, and together they cost more than the ranking that reads them. Within one
index version they cannot change, so they are read once per version. The version is SQLite's
``PRAGMA data_version`` of the connection (the cheapest statement there is), which changes
whenever another connection (a build, a backfill, a repair) has committed: any change forgets
everything remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ep_mcp.index.records import StoredChunk

T = TypeVar("T")


class VersionMemo:
    """Constants and chunk rows of the index version a reader connection last saw."""

    MAX_ROWS = 4096  # chunk rows remembered per version; past it the memory starts again

    def __init__(self) -> None:
        self.version: int | None = None
        self.values: dict[str, Any] = {}
        self.rows: dict[int, StoredChunk] = {}

    def at(self, conn: Any) -> VersionMemo:
        """This memo, emptied if the index changed since it was last asked."""
        version = int(conn.execute("PRAGMA data_version").fetchall()[0][0])
        if version != self.version:
            self.version, self.values, self.rows = version, {}, {}
        elif len(self.rows) > self.MAX_ROWS:
            self.rows = {}
        return self

    def value(self, key: str, read: Callable[[], T]) -> T:
        """The remembered value of ``key``, read (once per version) when there is none."""
        try:
            found: T = self.values[key]
        except KeyError:
            found = self.values[key] = read()
        return found
