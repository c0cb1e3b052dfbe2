"""The retrieval seam: what ranking asks of a storage engine and of a query embedder.

The pipeline (``engine.search``) depends only on these Protocols, so another storage engine
(PostgreSQL with pgvector, a search cluster) can serve a pack without touching ranking: it
answers the two legs, reads chunks back by id or path, and hands out stored vectors. The SQLite
``Store`` of ``ep_mcp.index`` satisfies ``ChunkSource``; a query-embedding cache satisfies
``QueryEmbedding``. Threads come from the caller (``LegExecutors``), who owns and closes them,
and so do live file reads (``LiveFiles``): the pipeline reads nothing but through these.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable

from ep_mcp.index.records import StoredChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vector: TypeAlias = "npt.NDArray[np.float32]"

LiveFiles: TypeAlias = Callable[[str, int], "tuple[bytes | None, str | None]"]
"""The first n bytes of a served file as it is now, or (None, why) — reconstruct's stale check.
Never blocks and never raises; the pack's reader (``packs.safeopen``) is one."""


class ChunkSource(Protocol):
    """One pack's index as retrieval reads it; ids are the source's own chunk ids."""

    def lexical_top(
        self,
        terms: Sequence[str],
        n: int,
        *,
        weights: tuple[float, float, float],
        time_limit_ms: int,
    ) -> list[tuple[int, float]]:
        """Chunks matching any term, best first, as (chunk_id, score ≥ 0); cut at the limit."""
        ...

    def term_counts(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """How many chunks contain each term, and how many chunks there are (IDF)."""
        ...

    def has_vectors(self) -> bool: ...

    def vector_top(self, query: Vector, n: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine similarity, best first, as (chunk_id, similarity)."""
        ...

    def chunks_by_ids(self, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]: ...

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        """A file's chunks in order (expansion adds a file by its first chunk)."""
        ...

    def vectors_for(self, chunk_ids: Sequence[int]) -> dict[int, Vector]: ...

    def file_tokens(self, paths: Sequence[str]) -> dict[str, int]:
        """Token count of each file (the ``requires:`` budget)."""
        ...

    def pending_count(self) -> int:
        """Chunks found by words only until their vectors are made."""
        ...

    def embedding_model(self) -> str | None:
        """The embedder the stored vectors were made with (None: lexical only)."""
        ...


class ServedIndex(ChunkSource, Protocol):
    """A pack's index as the runtime and the servers read it: the ``ChunkSource`` of ranking
    plus what they report and cache. SQLite's ``Store`` is one (it is also the build format);
    ``index.pgindex.PgIndex`` serves a published version from PostgreSQL. What is constant
    for a version (features, counts) an engine may cache: a version is never written again.
    """

    read_only: bool

    def features(self) -> dict[str, Any]:
        """The build's ``index_features`` (format, embedder, dimension…)."""
        ...

    def counts(self) -> dict[str, int]:
        """files, chunks, vectors, cached, pending."""
        ...

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, Vector]:
        """Embedding-cache entries by key (the file-profile vectors come through it)."""
        ...

    def try_cache_vectors(self, items: Mapping[str, Vector]) -> bool:
        """Cache vectors if the engine takes writes; False when it did not."""
        ...

    @property
    def location(self) -> str:
        """Where the index is, for messages (a file path, a schema on a server)."""
        ...

    @property
    def version(self) -> str | None:
        """The published version served (None: a live index that builds in place)."""
        ...

    @property
    def write_problem(self) -> str | None: ...

    def problems(self) -> list[str]:
        """What degrades answers now beside writes (a lost server connection, damaged rows)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class QueryEmbedding(Protocol):
    """How a query becomes a vector, and whether that is already paid for (the index's
    ``QueryEmbeddingCache`` is one)."""

    def embed_query(self, text: str) -> Vector: ...

    def is_cached(self, text: str) -> bool:
        """True when ``embed_query(text)`` costs microseconds (a thread hand-off would cost)."""
        ...


class QueryEmbedder(Protocol):
    """Any embedder (the index's ``Embedder`` is one)."""

    def embed_query(self, text: str) -> Vector: ...


class Uncached:
    """A query embedding with no cache in front: every query is computed."""

    def __init__(self, embedder: QueryEmbedder) -> None:
        self.embedder = embedder

    def embed_query(self, text: str) -> Vector:
        return self.embedder.embed_query(text)

    def is_cached(self, text: str) -> bool:
        return False


@dataclass(frozen=True)
class LegExecutors:
    """Threads the legs may overlap on, owned (and shut down) by whoever runs the searches.

    Apart, so a call to an outside embedding service that hangs (until its own HTTP timeout)
    never holds up a lexical leg.
    """

    lexical: Executor  # the lexical leg while the query is embedded
    embedding: Executor  # an outside service's query embedding, waited for until a deadline
    packs: Executor | None = None  # one search per pack of a merged search (``Library``)

    @classmethod
    def start(cls) -> LegExecutors:
        """Thread pools for the caller to own (threads are made on first use)."""
        return cls(
            lexical=ThreadPoolExecutor(max_workers=4, thread_name_prefix="ep-lexical"),
            embedding=ThreadPoolExecutor(max_workers=8, thread_name_prefix="ep-embed"),
            packs=ThreadPoolExecutor(max_workers=8, thread_name_prefix="ep-packs"),
        )

    def close(self) -> None:
        """Stop the threads without waiting: an embedding call may hang until its HTTP timeout."""
        self.lexical.shutdown(wait=False, cancel_futures=True)
        self.embedding.shutdown(wait=False, cancel_futures=True)
        if self.packs is not None:
            self.packs.shutdown(wait=False, cancel_futures=True)


def query_embedding(embedder: QueryEmbedder | None) -> QueryEmbedding | None:
    """How the engine embeds a query: through the embedder's query cache when it is one (it
    says what is cached), else uncached."""
    if embedder is None:
        return None
    if _says_what_is_cached(type(embedder)):
        return cast("QueryEmbedding", embedder)
    return Uncached(embedder)


@functools.lru_cache(maxsize=64)
def _says_what_is_cached(kind: type) -> bool:
    """Whether instances of ``kind`` are a ``QueryEmbedding``, asked once per class: on Python
    3.11 an ``isinstance`` against a runtime-checkable protocol walks the protocol's members
    on every call (40-110 µs, more than a cached query's fusion). The members are methods,
    so the class decides."""
    return all(callable(getattr(kind, name, None)) for name in ("embed_query", "is_cached"))
