"""A sentence-transformers CrossEncoder, loaded on first use (extra ``ep-mcp[rerank]``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ep_mcp.errors import ConfigError


class CrossEncoderReranker:
    """``reranker.kind: sentence-transformers``: a model already on disk (never downloaded)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._encoder: Any = None
        self._lock = threading.Lock()  # one load, however many queries arrive during it

    @property
    def name(self) -> str:
        return f"cross-encoder/{self.model}"

    def _load(self) -> Any:
        with self._lock:
            return self._encoder if self._encoder is not None else self._load_once()

    def _load_once(self) -> Any:
        try:
            from sentence_transformers import CrossEncoder  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "reranker.kind is sentence-transformers but it is not installed — "
                "install `ep-mcp[rerank]`, choose another reranker.kind, or set "
                "reranker.enabled: false"
            ) from exc
        try:
            self._encoder = CrossEncoder(self.model, local_files_only=True)
        except Exception as exc:  # any loader failure: the model is not available offline
            raise ConfigError(
                f"reranker model {self.model!r} is not available offline ({exc}) — download it "
                "once with network access, point reranker.model at a local folder, or set "
                "reranker.enabled: false"
            ) from exc
        return self._encoder

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        encoder = self._load()
        pairs = [(query, p) for p in passages]
        return [float(s) for s in encoder.predict(pairs, show_progress_bar=False)]
