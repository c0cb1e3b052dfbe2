"""Embedding windows: every word-piece of a long chunk is read by the model (issue #18, build 1).

A model reads a fixed number of word-pieces (all-MiniLM-L6-v2: 256 with [CLS] and [SEP]); a
chunk may hold up to ``index.max_tokens`` (1000) and more where no heading splits it. So a
chunk longer than the model's window is embedded as several *windows*: the first is the
chunk's indexed text as today (the model reads its head), each later one the chunk's context
prefix and the next stretch of its span, overlapping the one before by ``overlap`` pieces.
Windows are only vectors: ``ep_search`` still returns the chunk (section, heading path, line
range); its dense score is the best of its windows (``vectors.matrix_top``).

Pure: no SQL, no model. The word-piece spans of a text come from the embedder
(``embed.base.Windowed``), so windows are cut where the model's own tokenizer cuts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Spans = Sequence[tuple[int, int]]  # (start, end) character offsets of each word-piece
SpansOf = Callable[[Sequence[str]], list[list[tuple[int, int]]]]

DEFAULT_OVERLAP = 32  # word-pieces shared by consecutive windows
MAX_WINDOWS = 32  # per chunk (~7,000 word-pieces at 256): a huge unheaded file costs bounded work
SNAP = 8  # a window starts at most this many pieces early, to begin at a word


@dataclass(frozen=True)
class WindowSpec:
    """How long chunks are cut for the model: ``size`` word-pieces it reads per text ([CLS] and
    [SEP] included), ``overlap`` pieces shared by neighbours, at most ``limit`` per chunk."""

    size: int
    overlap: int = DEFAULT_OVERLAP
    limit: int = MAX_WINDOWS

    @property
    def room(self) -> int:
        """Word-pieces of text one window holds (the model's size less [CLS] and [SEP])."""
        return self.size - 2

    def features(self) -> dict[str, int]:
        return {"size": self.size, "overlap": self.overlap, "limit": self.limit}


def joined(prefix: str, text: str) -> str:
    """A prefix and a stretch of a chunk as they are embedded (``Chunk.indexed_text``'s form)."""
    return f"{prefix}\n\n{text}" if prefix else text


def window_starts(n: int, body: int, overlap: int, limit: int) -> list[int]:
    """First word-piece of each window over ``n`` pieces, ``body`` pieces a window: 0, then one
    every ``body - overlap`` pieces. The last one holds what is left (at least ``overlap`` + 1
    pieces): moved back to a full window it scored the same on dev and cost 15 % more pieces."""
    if n <= body:
        return [0]
    step = max(1, body - overlap)
    starts = [0]
    while starts[-1] + body < n and len(starts) < limit:
        starts.append(starts[-1] + step)
    return starts


def _word_start(spans: Spans, at: int) -> int:
    """``at`` moved back (at most ``SNAP`` pieces) to the first piece of its word."""
    first = at
    while first > 0 and at - first < SNAP and spans[first][0] == spans[first - 1][1]:
        first -= 1
    return first if first == 0 or spans[first][0] != spans[first - 1][1] else at


def window_texts(
    prefix: str, text: str, spans: Spans, prefix_pieces: int, spec: WindowSpec
) -> list[str]:
    """What is embedded for one chunk: its indexed text (the model reads the head), then each
    later window as prefix + stretch. ``spans``: the word-pieces of ``text``;
    ``prefix_pieces``: how many the prefix takes. One text when the chunk fits the window."""
    whole = joined(prefix, text)
    body = spec.room - prefix_pieces
    if body <= 2 * spec.overlap or len(spans) <= body:  # fits, or a prefix leaves no room
        return [whole]
    out = [whole]
    for start in window_starts(len(spans), body, spec.overlap, spec.limit)[1:]:
        first = _word_start(spans, start)
        last = min(first + body, len(spans)) - 1
        out.append(joined(prefix, text[spans[first][0] : spans[last][1]]))
    return out


def plan_windows(
    items: Sequence[tuple[str, str]],
    pieces: Callable[[str], int],
    spans_of: SpansOf,
    spec: WindowSpec,
) -> list[list[str]]:
    """``window_texts`` of many (prefix, text) chunks; ``pieces`` counts word-pieces (the
    build's memoised counter), so only the chunks longer than a window are tokenized again."""
    prefix_pieces = [pieces(prefix) if prefix else 0 for prefix, _ in items]
    long = [i for i, (_, text) in enumerate(items) if prefix_pieces[i] + pieces(text) > spec.room]
    spans = dict(zip(long, spans_of([items[i][1] for i in long]), strict=True)) if long else {}
    return [
        window_texts(prefix, text, spans[i], prefix_pieces[i], spec)
        if i in spans
        else [joined(prefix, text)]
        for i, (prefix, text) in enumerate(items)
    ]
