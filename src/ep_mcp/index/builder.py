"""Build or update one pack's index: chunk what changed, embed what is new, write it atomically.

A chunk longer than the model's window is embedded as several windows (``windows.py``): the
texts to embed are each chunk's window texts, cached one by one; a chunk has its vector only
when all its windows have theirs.

When the embedding provider fails part-way (``on_embedding_error="defer"``), the build still
commits: the lexical rows of every changed file are written, every vector already stored is kept,
and the chunks still without a vector are marked pending. The next build embeds them first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.chunker import Chunk, chunk_document, whole_text
from ep_mcp.index.embed.base import Embedder, settle
from ep_mcp.index.embedplan import Plans, cache_key, chunk_vectors, embedding_plans, window_spec
from ep_mcp.index.progress import Observer, Progress
from ep_mcp.index.records import ChunkRecord, FileRecord, FileWrite
from ep_mcp.index.schema import FORMAT_VERSION
from ep_mcp.index.store import Store
from ep_mcp.packs.models import Document, Pack

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

CACHE_FLUSH = 64  # embeddings written to the cache this often, so an interrupted build resumes


@dataclass(frozen=True)
class BuildReport:
    files: int
    changed: int
    removed: int
    chunks: int
    embedded: int  # texts (chunks, or windows of long chunks) whose vectors were computed
    reused: int  # texts (chunks, or windows) whose vectors came from the embedding cache
    rebuilt: bool  # a feature change forced a full rebuild
    seconds: float
    vector_engine: str
    pending: int = 0  # chunks indexed lexically that still await their vector
    embedding_error: str | None = None  # why they wait (the provider's failure)
    repaired: int = 0  # damaged or missing vectors embedded again
    repaired_files: int = 0  # files indexed again because chunk rows of theirs were missing
    windows: int = 0  # later embedding windows of long chunks in the index
    cpu_seconds: float = 0.0  # CPU time of the process during the build (all its threads)


def features_for(
    embedder: Embedder | None,
    max_tokens: int,
    prefix_template: str,
    window_overlap: int | None = None,
) -> dict[str, Any]:
    spec = window_spec(embedder, window_overlap)
    return {
        "format": FORMAT_VERSION,
        "embedder": embedder.name if embedder is not None else None,
        "dimension": embedder.dimension if embedder is not None else None,
        "max_tokens": max_tokens,
        "prefix_template": prefix_template,
        "windows": spec.features() if spec is not None else None,
    }


def file_record(doc: Document) -> FileRecord:
    info: dict[str, Any] = {
        "verified_at": doc.verified_at,
        "refresh": doc.refresh,
        "expires_at": doc.expires_at,
        "requires": list(doc.requires),
        "always": doc.always,
        "skill": doc.skill,
    }
    return FileRecord(
        path=doc.path,
        file_hash=doc.file_hash,
        sidecar_hash=doc.sidecar.file_hash if doc.sidecar else None,
        content_hash=doc.content_hash,
        title=doc.title,
        type=doc.type,
        tags=doc.tags,
        doc_id=doc.id,
        info=info,
    )


def _memo(count: Callable[[str], int]) -> Callable[[str], int]:
    """Count each distinct text once per build (the chunker and the records ask for the same)."""
    seen: dict[str, int] = {}

    def counted(text: str) -> int:
        n = seen.get(text)
        if n is None:
            n = seen[text] = count(text)
        return n

    counted.seen = seen  # type: ignore[attr-defined]
    return counted


def _count_at_once(
    counter: Callable[[str], int], memo: Callable[[str], int], texts: list[str]
) -> None:
    """Count many texts in one call when the counter can (``counter.batch``: the tokenizer
    runs them in parallel); texts already counted are skipped."""
    batch = getattr(counter, "batch", None)
    seen = memo.seen  # type: ignore[attr-defined]
    todo = [t for t in dict.fromkeys(texts) if t and t not in seen]
    if batch is not None and len(todo) > 1:
        seen.update(zip(todo, batch(todo), strict=True))


def _records(chunks: Sequence[Chunk], count: Callable[[str], int]) -> tuple[ChunkRecord, ...]:
    return tuple(
        ChunkRecord(
            c.path,
            c.chunk_index,
            c.heading_path,
            c.line_range,
            c.byte_range,
            c.text,
            c.context_prefix,
            c.span_hash,
            c.section,
            count(c.text),
        )
        for c in chunks
    )


def _embed_missing(
    store: Store,
    embedder: Embedder,
    texts: Sequence[str],
    count: Callable[[str], int],
    show_progress: bool | None,
    observer: Observer | None = None,
) -> tuple[dict[str, npt.NDArray[np.float32]], int]:
    """Vectors for every text, from the cache where possible; returns (key → vector, computed).

    The missing texts are embedded shortest first, so each batch pads to nearly its own length,
    and are written to the cache every ``CACHE_FLUSH`` texts, so a killed build resumes.
    """
    keys = [cache_key(embedder, t) for t in texts]
    found = store.cached_vectors(sorted(set(keys)))
    todo: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in found:
            todo.setdefault(key, text)
    if not todo:
        return found, 0
    seen = getattr(count, "seen", {})  # windows are not counted: their length stands in
    items = sorted(todo.items(), key=lambda item: seen.get(item[1], len(item[1]) // 4))
    progress = Progress("embedding chunks", len(items), enabled=show_progress, observer=observer)
    done = 0
    try:
        for start in range(0, len(items), CACHE_FLUSH):
            batch = items[start : start + CACHE_FLUSH]
            vectors = embedder.embed_documents([t for _, t in batch])
            fresh = {k: vectors[i] for i, (k, _) in enumerate(batch)}
            store.cache_vectors(fresh)
            found.update(fresh)
            done += len(batch)
            progress.advance(len(batch))
    except BaseException as exc:  # cancelled, failed or interrupted: never reported done
        progress.close(stopped=exc)
        if isinstance(exc, EmbeddingError):
            raise PartialEmbedding(found, done, exc) from exc
        raise
    progress.close()
    return found, done


class PartialEmbedding(Exception):
    """The provider failed part-way: what was embedded (and cached) before, and why it stopped."""

    def __init__(
        self, found: dict[str, npt.NDArray[np.float32]], computed: int, error: EmbeddingError
    ) -> None:
        super().__init__(str(error))
        self.found, self.computed, self.error = found, computed, error


class VectorCache(Protocol):
    """An index's embedding cache as ``embed_texts`` uses it (``Store``, a served version)."""

    read_only: bool

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]: ...

    def try_cache_vectors(self, items: Mapping[str, npt.NDArray[np.float32]]) -> bool: ...


def embed_texts(
    store: VectorCache, embedder: Embedder, texts: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    """text → vector for a few texts outside the chunks (file profiles), through the cache.

    Computed vectors are cached when the index is writable, so the next process reads them; a
    disk that refuses the write (full, read-only) costs only that cache (``Store.write_problem``),
    never the query that asked.
    """
    if not texts:
        return {}
    keys = {t: cache_key(embedder, t) for t in texts}
    found = store.cached_vectors(sorted(set(keys.values())))
    missing = [t for t in dict.fromkeys(texts) if keys[t] not in found]
    for start in range(0, len(missing), CACHE_FLUSH):
        batch = missing[start : start + CACHE_FLUSH]
        rows = embedder.embed_documents(batch)
        fresh = {keys[t]: rows[i] for i, t in enumerate(batch)}
        found.update(fresh)
        if not store.read_only:
            store.try_cache_vectors(fresh)
    return {t: found[keys[t]] for t in texts}


def build_index(
    pack: Pack,
    store: Store,
    embedder: Embedder | None,
    count_tokens: Callable[[str], int],
    *,
    max_tokens: int = 1000,
    prefix_template: str = "",
    show_progress: bool | None = None,
    on_embedding_error: Literal["raise", "defer"] = "raise",
    words_first: bool = False,
    observer: Observer | None = None,
    window_overlap: int | None = None,
) -> BuildReport:
    """Bring the index up to date with the pack (SPEC §2). Safe to interrupt at any point.

    ``on_embedding_error="defer"``: a provider failure does not stop the build — chunks left
    without a vector are marked pending (see the module docstring); otherwise it propagates.
    ``words_first``: embed nothing now — vectors already in the embedding cache are used,
    every other chunk is committed pending, for a later build (the server's backfill) to
    embed. ``observer`` hears (done, total) of the embedding as it goes.
    ``window_overlap``: word-pieces shared by the embedding windows of a chunk longer than the
    model's window (None, the default: every chunk is embedded whole, the model reading its
    head only; ``index.embed_windows``).
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    counter, count_tokens = count_tokens, _memo(count_tokens)
    if embedder is not None and not words_first:
        settle(embedder)  # vectors will be made: the model is the one the features name
    features = features_for(embedder, max_tokens, prefix_template, window_overlap)
    spec = window_spec(embedder, window_overlap)
    rebuild = store.features() != features
    states: dict[str, tuple[str, str | None]] = {} if rebuild else store.file_states()
    queued, redo = store.repair() if store.repair_needed and not rebuild else ([], [])
    states.update(dict.fromkeys(redo, ("", None)))  # missing chunk rows: indexed again
    docs = [d for d in pack.documents if not d.navigation]
    live = {d.path for d in docs}
    removed = sorted(set(states) - live) if not rebuild else []
    changed = [
        d
        for d in docs
        if states.get(d.path) != (d.file_hash, d.sidecar.file_hash if d.sidecar else None)
    ]
    _count_at_once(counter, count_tokens, [whole_text(d) for d in changed])
    chunked = {
        d.path: chunk_document(d, count_tokens, max_tokens, prefix_template) for d in changed
    }
    all_chunks = [c for d in changed for c in chunked[d.path]]
    _count_at_once(counter, count_tokens, [c.text for c in all_chunks])  # the split files' parts
    waiting = [] if rebuild or embedder is None or words_first else store.pending_texts()
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    computed = 0
    error: EmbeddingError | None = None
    plans = embedding_plans(embedder, spec, waiting, all_chunks, count_tokens)
    if embedder is not None and words_first and all_chunks:
        keys = sorted({cache_key(embedder, t) for c in all_chunks for t in plans.chunk(c)})
        vectors = store.cached_vectors(keys)
    elif embedder is not None and (all_chunks or waiting):
        # pending chunks of earlier builds first: they have waited longest
        texts = plans.texts()
        try:
            vectors, computed = _embed_missing(
                store, embedder, texts, count_tokens, show_progress, observer
            )
        except PartialEmbedding as partial:
            if on_embedding_error == "raise":
                raise partial.error from None
            vectors, computed, error = partial.found, partial.computed, partial.error
    filled: dict[int, npt.NDArray[np.float32]] = {}
    filled_windows: dict[int, npt.NDArray[np.float32]] = {}
    filled_texts = 0  # texts of the filled chunks (a chunk's windows each count)
    if embedder is not None:
        for (cid, _, _), texts in zip(waiting, plans.waiting, strict=True):
            got = chunk_vectors(embedder, texts, vectors)
            if got is not None:
                filled[cid] = got[0]
                filled_texts += len(texts)
                if got[1] is not None:
                    filled_windows[cid] = got[1]
    if rebuild or removed or changed or filled:
        with store.transaction():
            if rebuild:
                store.clear()
            store.remove_files(removed)
            store.fill_pending(filled, filled_windows)
            store.write_files(
                (
                    _file_write(doc, chunked[doc.path], embedder, vectors, count_tokens, plans),
                    rebuild or doc.path not in states,
                )
                for doc in changed
            )
            store.finish_build(features)
    pending = store.pending_count() if embedder is not None else 0
    counts = store.counts()
    report = BuildReport(
        files=len(docs),
        changed=len(changed),
        removed=len(removed),
        chunks=counts["chunks"],
        embedded=computed,
        reused=max(
            0, _with_vectors(embedder, plans, all_chunks, vectors) + filled_texts - computed
        ),
        rebuilt=rebuild,
        seconds=time.perf_counter() - started,
        vector_engine=store.vector_engine if embedder is not None else "none",
        pending=pending,
        embedding_error=str(error) if error is not None and pending else None,
        repaired=sum(cid in filled for cid in queued),
        repaired_files=len(redo),
        windows=store.window_count(),
        cpu_seconds=time.process_time() - cpu_started,
    )
    logger.info(
        "indexed %s: %d files, %d changed, %d removed, %d chunks, %d embedded (%.2fs)",
        pack.slug,
        report.files,
        report.changed,
        report.removed,
        report.chunks,
        report.embedded,
        report.seconds,
    )
    if queued or redo:
        logger.info(
            "%s: repaired %d damaged or missing vector(s), indexed %d file(s) again whose "
            "chunk rows were missing",
            pack.slug,
            report.repaired,
            report.repaired_files,
        )
    if pending and words_first:
        logger.info("%s: %d chunk(s) indexed lexically, to be embedded next", pack.slug, pending)
    elif pending:
        logger.warning(
            "%s: %d chunk(s) await embeddings (%s) — they are found lexically until the next "
            "build embeds them",
            pack.slug,
            pending,
            report.embedding_error or "the provider failed earlier",
        )
    return report


def _with_vectors(
    embedder: Embedder | None,
    plans: Plans,
    chunks: Sequence[Chunk],
    vectors: Mapping[str, npt.NDArray[np.float32]],
) -> int:
    """Texts of ``chunks`` with a vector (the computed ones are taken off by the caller)."""
    if embedder is None:
        return 0
    return sum(cache_key(embedder, t) in vectors for c in chunks for t in plans.chunk(c))


def _file_write(
    doc: Document,
    chunks: Sequence[Chunk],
    embedder: Embedder | None,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    count: Callable[[str], int],
    plans: Plans,
) -> FileWrite:
    """One changed file's rows; a chunk missing a vector (of any window) is marked pending."""
    records = _records(chunks, count)
    if embedder is None or not chunks:
        return FileWrite(file_record(doc), records, None)
    import numpy as np  # on use: a restart's start imports this module, not numpy

    rows = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
    pending: set[int] = set()
    windows: dict[int, npt.NDArray[np.float32]] = {}
    for i, c in enumerate(chunks):
        got = chunk_vectors(embedder, plans.chunk(c), vectors)
        if got is None:
            pending.add(i)
            continue
        rows[i] = got[0]
        if got[1] is not None:
            windows[i] = got[1]
    return FileWrite(file_record(doc), records, rows, frozenset(pending), windows)
