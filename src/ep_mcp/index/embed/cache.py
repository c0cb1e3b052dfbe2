"""A bounded in-memory LRU of query embeddings, keyed by (model, dimension, sha256(query))."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

from ep_mcp.index.embed.base import Embedder, EmbedderWrapper, Matrix
from ep_mcp.index.embed.breaker import ModelLoadingError

CacheKey = tuple[str, int, str]


class QueryEmbeddingCache(EmbedderWrapper):
    """Wraps an embedder; ``embed_query`` answers repeats from memory, the rest passes through.

    It is itself an :class:`Embedder`, so it can stand in wherever one is expected. Cached rows are
    read-only arrays. Thread-safe; two threads missing on the same query may both compute it.
    """

    def __init__(self, embedder: Embedder, maxsize: int = 1024) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.embedder = embedder
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[CacheKey, Matrix] = OrderedDict()
        self._lock = threading.Lock()
        # set while the model loads on a start-up thread (`serve.startup`): a query then is
        # answered by its words at once instead of waiting for the load
        self.loading: threading.Event | None = None

    def ready(self) -> bool:
        """False while the model loads behind the start (queries are then lexical)."""
        return self.loading is None or self.loading.is_set()

    def key(self, query: str) -> CacheKey:
        digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()
        return (self.embedder.name, self.embedder.dimension, digest)

    def is_cached(self, text: str) -> bool:
        """Whether ``embed_query(text)`` would be answered from memory."""
        key = self.key(text)
        with self._lock:
            return key in self._entries

    def embed_query(self, text: str) -> Matrix:
        key = self.key(text)
        with self._lock:
            cached = self._entries.get(key)
            if cached is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return cached
            self.misses += 1
        if not self.ready():
            raise ModelLoadingError(
                "the query model is still loading — this answer is lexical (words only); "
                "answers are hybrid in a moment"
            )
        import numpy as np  # not at import: a restart's first (lexical) answer comes before it

        # outside the lock (it may be a network call); a private read-only copy goes in the cache
        vector = np.array(self.embedder.embed_query(text), dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self._entries[key] = vector
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return vector

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return self.embedder.embed_documents(texts)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
