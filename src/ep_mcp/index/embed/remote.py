"""HTTP embedding providers: OpenAI, Azure OpenAI, Gemini and Voyage.

Keys come from the environment mapping handed in (never ``os.environ`` directly) and travel only in
headers, never in a URL — httpx logs and exception texts contain URLs. Every message this module
produces is scrubbed of the key, and httpx's per-request INFO lines are silenced.
"""

from __future__ import annotations

import copy
import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import httpx2
import numpy as np

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed.base import EmbeddingSpec, Matrix

logger = logging.getLogger(__name__)

for _name in ("httpx2", "httpx", "httpcore2", "httpcore"):
    # their INFO/DEBUG lines carry full URLs; leave an explicit user choice alone
    if logging.getLogger(_name).level == logging.NOTSET:
        logging.getLogger(_name).setLevel(logging.WARNING)

Task = Literal["document", "query"]

RETRYABLE = frozenset({408, 425, 429, *range(500, 600)})
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
MAX_RETRY_AFTER_S = 30.0


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


class HttpEmbedder:
    """One HTTP embedding API: batching, retries with backoff, unit rows, dimension check."""

    query_cost = "network"

    provider: ClassVar[str]
    key_env: ClassVar[str]
    default_model: ClassVar[str]
    default_endpoint: ClassVar[str]
    max_batch: ClassVar[int]
    known_dimensions: ClassVar[dict[str, int]]
    key_required: ClassVar[bool] = True  # False: a local server that takes no key

    def __init__(
        self,
        spec: EmbeddingSpec,
        env: dict[str, str],
        *,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self._key_env = key_env = spec.api_key_env or self.key_env
        self._key = (spec.api_key or env.get(key_env, "")).strip()
        if not self._key and self.key_required:
            raise EmbeddingError(
                f"{key_env} is not set — export it or set embedding.provider: local"
            )
        self.model = spec.model or self.default_model
        dimension = spec.dimension or self.known_dimensions.get(self.model)
        if dimension is None:
            raise EmbeddingError(
                f"the dimension of {self.provider} model {self.model!r} is not known — "
                "set embedding.dimension"
            )
        self._dimension = dimension
        self._send_dimension = spec.dimension is not None
        self._api_version = spec.api_version  # Azure's `api-version`; others ignore it
        self.endpoint = self._resolve_endpoint(spec, env).rstrip("/")
        self.timeout_s = spec.timeout_s
        self.retries = max(0, spec.retries)
        self.query_timeout_s = spec.query_timeout_s
        self._sleep = sleep
        self._jitter = jitter
        self._transport = transport
        self._client: httpx2.Client | None = None
        self._lock = threading.Lock()

    # -- what each provider says differently ---------------------------------------------------

    def _resolve_endpoint(self, spec: EmbeddingSpec, env: dict[str, str]) -> str:
        return spec.endpoint or self.default_endpoint

    def _url(self) -> str:
        """The OpenAI-compatible path (OpenAI, Voyage); Azure and Gemini say their own."""
        return f"{self.endpoint}/embeddings"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _body(self, texts: list[str], task: Task) -> dict[str, Any]:
        raise NotImplementedError

    def _vectors(self, payload: Any) -> list[Any]:
        """The OpenAI shape: ``{"data": [{"index": i, "embedding": [...]}, ...]}``."""
        data = sorted(payload["data"], key=lambda item: item["index"])
        if [item["index"] for item in data] != list(range(len(data))):
            raise ValueError("the indexes of the vectors are not 0..n-1")
        return [item["embedding"] for item in data]

    # -- the Embedder protocol -----------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), self.max_batch):
            batch = list(texts[start : start + self.max_batch])
            out[start : start + len(batch)] = self._embed_batch(batch, "document")
        return out

    def embed_query(self, text: str) -> Matrix:
        row: Matrix = self._embed_batch([text], "query")[0]
        return row

    def interactive(self) -> HttpEmbedder:
        """This provider as a waiting query sees it: one attempt of ``query_timeout_s``.

        The view shares the key and settings but keeps its own connection pool, so a query never
        queues behind a slow indexing request.
        """
        view = copy.copy(self)
        view.timeout_s = self.query_timeout_s
        view.retries = 0
        view._client = None
        view._lock = threading.Lock()
        return view

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- machinery -----------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _error(self, message: str) -> EmbeddingError:
        return EmbeddingError(self._scrub(message))

    def _http(self) -> httpx2.Client:
        with self._lock:
            if self._client is None:
                timeout = httpx2.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0))
                self._client = httpx2.Client(timeout=timeout, transport=self._transport)
            return self._client

    def _embed_batch(self, texts: list[str], task: Task) -> Matrix:
        payload = self._post(self._body(texts, task))
        try:
            rows = self._vectors(payload)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self._error(
                f"{self.provider} returned an unexpected response ({type(exc).__name__}: {exc})"
            ) from None
        return self._check(rows, len(texts))

    def _check(self, rows: list[Any], expected: int) -> Matrix:
        if len(rows) != expected:
            raise self._error(f"{self.provider} returned {len(rows)} vectors for {expected} texts")
        for row in rows:
            if not isinstance(row, list) or len(row) != self._dimension:
                got = len(row) if isinstance(row, list) else type(row).__name__
                raise self._error(
                    f"{self.provider} model {self.model!r} returned {got}-dimensional vectors, "
                    f"expected {self._dimension} — set embedding.dimension to match the model"
                )
        try:
            matrix = np.asarray(rows, dtype=np.float64).reshape(expected, self._dimension)
        except (TypeError, ValueError):
            raise self._error(f"{self.provider} returned non-numeric vectors") from None
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0.0):
            raise self._error(f"{self.provider} returned a zero or non-finite vector")
        unit: Matrix = (matrix / norms).astype(np.float32)
        return unit

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after + self._jitter() * 0.1
        return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0**attempt) * (0.5 + self._jitter())

    def _post(self, body: dict[str, Any]) -> Any:
        url = self._url()
        client = self._http()
        failure = "no attempt made"
        for attempt in range(self.retries + 1):
            retry_after: float | None = None
            try:
                response = client.post(url, json=body, headers=self._headers())
            except httpx2.TimeoutException:
                failure = f"timed out after {self.timeout_s:g}s"
            except httpx2.ConnectError as exc:
                failure = f"could not connect ({type(exc).__name__})"
            except httpx2.HTTPError as exc:  # a reset mid-body, a broken encoding, ...
                failure = f"the connection failed ({type(exc).__name__})"
            else:
                if response.is_success:
                    try:
                        return response.json()
                    except (ValueError, RecursionError):  # nested past Python's own limit too
                        raise self._error(
                            f"{self.provider} returned a body that is not JSON"
                        ) from None
                status = response.status_code
                if status not in RETRYABLE:
                    raise self._error(self._refusal(status, response.text))
                failure = f"HTTP {status}"
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
                    raise self._error(
                        f"{self.provider} is rate limiting (HTTP {status}) and asks to wait "
                        f"{retry_after:.0f}s — try again later"
                    )
            if attempt == self.retries:
                break
            delay = self._backoff(attempt, retry_after)
            logger.warning(
                "%s embeddings: %s; retry %d/%d in %.1fs",
                self.provider,
                self._scrub(failure),
                attempt + 1,
                self.retries,
                delay,
            )
            self._sleep(delay)
        raise self._error(
            f"{self.provider} embeddings at {url} failed after {self.retries + 1} attempt(s): "
            f"{failure} — check the network and endpoint, or set embedding.provider: local"
        )

    def _refusal(self, status: int, body: str) -> str:
        hint = {
            401: f"check {self._key_env}",
            403: f"check {self._key_env} and its permissions",
            404: "check embedding.model and embedding.endpoint",
        }.get(status, "check embedding.model, embedding.dimension and embedding.endpoint")
        snippet = " ".join(body.split())[:300]
        return f"{self.provider} refused the request (HTTP {status}: {snippet}) — {hint}"
