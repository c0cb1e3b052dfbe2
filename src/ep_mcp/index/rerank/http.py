"""Rerankers behind HTTP: a ``/rerank`` API, or a chat model asked to score the shortlist.

``RerankApi`` speaks the two shapes the rerank servers share: ``cohere`` — ``{model, query,
documents}`` → ``{"results": [{index, relevance_score}]}`` (Cohere, Jina, Voyage's ``data``,
Infinity, vLLM) — and ``tei`` — ``{query, texts}`` → ``[{index, score}]`` (Hugging Face TEI).
``ChatReranker`` sends the numbered passages to an OpenAI-compatible ``/chat/completions``
and reads ``{"scores": [...]}`` back. Both time out within the guard's budget; every failure
is a ``RerankError`` (the guard keeps the order).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from ep_mcp.errors import RerankError

MAX_REPLY_BYTES = 4 * 1024 * 1024
MAX_CHAT_CHARS = 16 * 1024  # of a chat answer searched for {"scores": [...]}
CHAT_PROMPT = (
    "You rank passages for a search engine. For the query below, rate each numbered passage "
    "from 0 (irrelevant) to 10 (answers the query). Reply with JSON only: "
    '{"scores": [one number per passage, in order]}.'
)


def scores_in(text: str) -> object:
    """The ``scores`` of the first JSON object in ``text`` that has them (None: no such
    object). Linear in the text, however hostile: each ``{`` is tried once with the JSON
    decoder (a regex over ``{.*}`` is quadratic and holds the interpreter lock meanwhile)."""
    text, decoder = text[:MAX_CHAT_CHARS], json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            found, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            found = None
        if isinstance(found, dict) and "scores" in found:
            return found["scores"]
        start = text.find("{", start + 1)
    return None


class _HttpReranker:
    @property
    def name(self) -> str:  # each kind says its own
        raise NotImplementedError

    def __init__(self, endpoint: str, model: str, key: str | None, timeout_s: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx2.Client(timeout=timeout_s, headers=self._headers)

    def _post(self, url: str, body: dict[str, Any]) -> Any:
        """POST ``body``; the JSON answer, read up to ``MAX_REPLY_BYTES``. Errors name the
        reranker, never the URL (it may hold credentials or internal host names, and the
        message reaches callers in the answer's notes)."""
        who = f"the {self.name} server"
        try:
            with self._client.stream("POST", url, json=body) as reply:
                if reply.status_code != 200:
                    raise RerankError(f"{who} answered HTTP {reply.status_code}")
                data = bytearray()
                for chunk in reply.iter_bytes():
                    data += chunk
                    if len(data) > MAX_REPLY_BYTES:
                        raise RerankError(f"{who} answered more than {MAX_REPLY_BYTES} bytes")
        except httpx2.TimeoutException:
            raise RerankError(f"{who} did not answer in time") from None
        except httpx2.HTTPError as exc:
            raise RerankError(f"{who} could not be reached ({type(exc).__name__})") from None
        try:
            return json.loads(bytes(data))
        except (ValueError, RecursionError):
            raise RerankError(f"{who} answered something that is not JSON") from None

    def close(self) -> None:
        self._client.close()


def _scores_by_index(items: Any, field: str, count: int) -> list[float]:
    if not isinstance(items, list):
        raise RerankError("the rerank answer has no list of results")
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("index"), int):
            raise RerankError("a rerank result has no index")
        value = item.get(field, item.get("score"))
        if not isinstance(value, int | float):
            raise RerankError(f"a rerank result has no {field}")
        scores[item["index"]] = float(value)
    if sorted(scores) != list(range(count)):
        raise RerankError(f"the rerank answer scored {len(scores)} of {count} passages")
    return [scores[i] for i in range(count)]


class RerankApi(_HttpReranker):
    """``reranker.kind: http``: POST the pool to a rerank endpoint (the full URL)."""

    def __init__(
        self, endpoint: str, model: str, key: str | None, timeout_s: float, style: str
    ) -> None:
        super().__init__(endpoint, model, key, timeout_s)
        self.style = style

    @property
    def name(self) -> str:
        return f"http/{self.model}" if self.style == "cohere" else "http/tei"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if self.style == "tei":
            reply = self._post(self.endpoint, {"query": query, "texts": list(passages)})
            return _scores_by_index(reply, "score", len(passages))
        body = {
            "model": self.model,
            "query": query,
            "documents": list(passages),
            "top_n": len(passages),
            "return_documents": False,
        }
        reply = self._post(self.endpoint, body)
        items = reply.get("results", reply.get("data")) if isinstance(reply, dict) else reply
        return _scores_by_index(items, "relevance_score", len(passages))


class ChatReranker(_HttpReranker):
    """``reranker.kind: chat``: an OpenAI-compatible chat model scores the shortlist."""

    @property
    def name(self) -> str:
        return f"chat/{self.model}"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        numbered = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": CHAT_PROMPT},
                {"role": "user", "content": f"Query: {query}\n\nPassages:\n\n{numbered}"},
            ],
        }
        reply = self._post(f"{self.endpoint}/chat/completions", body)
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise RerankError("the chat answer has no message") from None
        scores = scores_in(str(text))
        if not isinstance(scores, list) or not all(
            isinstance(s, int | float) and not isinstance(s, bool) for s in scores
        ):
            raise RerankError('the chat model did not answer {"scores": [...]}')
        if len(scores) != len(passages):
            raise RerankError(f"the chat model scored {len(scores)} passages of {len(passages)}")
        return [float(s) for s in scores]
