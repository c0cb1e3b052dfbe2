"""What every reranker gets: a score cache, a time budget and one kind of error.

A reranker is an outside service or a model run on the query path, so the guard bounds what it
may cost: scores are cached by (reranker, query, passage); a call runs on the guard's own
thread and the query waits for it at most ``budget_ms`` — past that, or when the reranker
fails in any way, the query gets a ``RerankError`` and keeps its unreranked order (the engine
notes why). A late answer is still cached for the next time.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence

from ep_mcp.errors import ConfigError, RerankError
from ep_mcp.index.rerank.base import Scorer

logger = logging.getLogger(__name__)

CACHE_SIZE = 20_000  # (query, passage) scores kept
IN_FLIGHT = 2  # calls a reranker may have running at once (a late one keeps its slot)


def _key(query: str, passage: str) -> tuple[bytes, bytes]:
    return (
        hashlib.sha256(query.encode("utf-8", "surrogatepass")).digest(),
        hashlib.sha256(passage.encode("utf-8", "surrogatepass")).digest(),
    )


class GuardedReranker:
    """``inner`` behind a cache, a time budget and `RerankError` for every failure."""

    def __init__(self, inner: Scorer, budget_ms: int, cache_size: int = CACHE_SIZE) -> None:
        self.inner = inner
        self.budget_s = budget_ms / 1000.0
        self._cache: OrderedDict[tuple[bytes, bytes], float] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(IN_FLIGHT)

    @property
    def name(self) -> str:
        return self.inner.name

    def _cached(self, keys: Sequence[tuple[bytes, bytes]]) -> dict[int, float]:
        with self._lock:
            found = {i: self._cache[k] for i, k in enumerate(keys) if k in self._cache}
            for i in found:
                self._cache.move_to_end(keys[i])
        return found

    def _remember(self, keys: Sequence[tuple[bytes, bytes]], scores: Sequence[float]) -> None:
        with self._lock:
            for k, s in zip(keys, scores, strict=True):
                self._cache[k] = s
                self._cache.move_to_end(k)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _run(self, query: str, passages: list[str], keys: list[tuple[bytes, bytes]]) -> list[float]:
        scores = [float(s) for s in self.inner.score(query, passages)]
        if not all(math.isfinite(s) for s in scores):
            raise RerankError(f"reranker {self.name} returned a score that is not a number")
        if len(scores) != len(passages):
            raise RerankError(
                f"reranker {self.name} returned {len(scores)} scores for {len(passages)} passages"
            )
        self._remember(keys, scores)
        return scores

    def _answer(
        self,
        call: concurrent.futures.Future[list[float]],
        query: str,
        passages: list[str],
        keys: list[tuple[bytes, bytes]],
    ) -> None:
        """On its own (daemon) thread: a call past the budget is left to finish (and cache)
        while the query goes on; it keeps its slot until then, so at most ``IN_FLIGHT``
        calls run at once however slow the reranker (HTTP kinds also time out)."""
        try:
            call.set_result(self._run(query, passages, keys))
        except BaseException as exc:  # handed to the waiting query, which judges it
            call.set_exception(exc)
        finally:
            self._slots.release()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        keys = [_key(query, p) for p in passages]
        known = self._cached(keys)
        todo = [i for i in range(len(passages)) if i not in known]
        if todo:
            if not self._slots.acquire(blocking=False):  # earlier calls still running
                raise RerankError(
                    f"reranker {self.name} is still answering {IN_FLIGHT} earlier queries"
                )
            call: concurrent.futures.Future[list[float]] = concurrent.futures.Future()
            args = (query, [passages[i] for i in todo], [keys[i] for i in todo])
            threading.Thread(target=self._answer, args=(call, *args), daemon=True).start()
            try:
                fresh = call.result(timeout=self.budget_s)
            except concurrent.futures.TimeoutError:
                raise RerankError(
                    f"reranker {self.name} took longer than its {self.budget_s * 1000:.0f} ms "
                    "budget (reranker.budget_ms)"
                ) from None
            except RerankError:
                raise
            except ConfigError as exc:  # e.g. the model is not installed: said, not fatal
                raise RerankError(str(exc)) from None
            except Exception as exc:  # a model or a server failing in any way: the order stays
                raise RerankError(f"reranker {self.name} failed ({exc})") from None
            known.update(zip(todo, fresh, strict=True))
        return [known[i] for i in range(len(passages))]

    def clear(self) -> None:
        """Forget every cached score (benchmarks measure the reranker itself)."""
        with self._lock:
            self._cache.clear()
