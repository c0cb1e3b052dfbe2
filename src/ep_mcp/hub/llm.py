"""Optional LLM rerank of the hub's shortlist: the local `claude` CLI, else the Messages API.

The model sees stable ids (``tap:dir``), never bare names, and answers with a JSON array of ids.
Anything that goes wrong — missing binary, timeout, HTTP error, a reply that is not such an
array — gives ``None`` and the caller keeps the retrieval order (and says so). Answers are
cached by (query, shortlist ids).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ep_mcp.hub.process import run_text

logger = logging.getLogger(__name__)

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
SYSTEM = "You rank AI agent skills by how well they fit a task. Reply with JSON only."
_ARRAY = re.compile(r"\[[^\[\]]*\]", re.DOTALL)
CACHE_SIZE = 256


class LlmError(Exception):
    """Internal: the model could not be asked or did not answer usefully."""


class LlmClient(Protocol):
    name: str

    def complete(self, prompt: str, timeout: float) -> str: ...


class ClaudeCli:
    """`claude -p` with the prompt on stdin."""

    name = "claude-cli"

    def __init__(self, executable: str, env: Mapping[str, str], model: str | None = None) -> None:
        self._exe = executable
        self._env = dict(env)
        self._model = model

    def complete(self, prompt: str, timeout: float) -> str:
        cmd = [self._exe, "-p", "--output-format", "text", "--append-system-prompt", SYSTEM]
        if self._model:
            cmd += ["--model", self._model]
        try:
            done = run_text(cmd, env=self._env, timeout=timeout, stdin=prompt)
        except subprocess.TimeoutExpired:
            raise LlmError(f"claude did not answer within {timeout:.0f}s") from None
        except OSError as exc:
            raise LlmError(f"cannot run claude: {exc.strerror}") from None
        if done.returncode != 0:
            raise LlmError(f"claude exited with status {done.returncode}")
        return done.stdout


class AnthropicHttp:
    """POST /v1/messages with the key in a header (never in a URL or a log)."""

    name = "anthropic-api"

    def __init__(self, api_key: str, model: str, endpoint: str = ANTHROPIC_URL) -> None:
        self._key = api_key
        self._model = model
        self._endpoint = endpoint

    def complete(self, prompt: str, timeout: float) -> str:
        import httpx2

        body = {
            "model": self._model,
            "max_tokens": 600,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": prompt}],
        }
        headers = {"x-api-key": self._key, "anthropic-version": "2023-06-01"}
        try:
            resp = httpx2.post(
                self._endpoint,
                json=body,
                headers=headers,
                timeout=httpx2.Timeout(timeout, connect=min(timeout, 5.0)),
            )
        except httpx2.TimeoutException:
            raise LlmError(f"the Messages API did not answer within {timeout:.0f}s") from None
        except httpx2.HTTPError as exc:
            raise LlmError(
                f"the Messages API could not be reached ({type(exc).__name__})"
            ) from None
        if resp.status_code != 200:
            raise LlmError(f"the Messages API answered HTTP {resp.status_code}")
        try:
            blocks = resp.json()["content"]
            return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        except (ValueError, KeyError, TypeError):
            raise LlmError("the Messages API reply was not the expected JSON") from None


def choose_client(
    env: Mapping[str, str], *, model: str, endpoint: str | None = None, binary: str = "claude"
) -> LlmClient | None:
    """The local `claude` CLI when on PATH, else the Messages API when a key is set, else None."""
    exe = shutil.which(binary, path=env.get("PATH"))
    if exe is not None:
        return ClaudeCli(exe, env)
    key = env.get("ANTHROPIC_API_KEY")
    if key:
        return AnthropicHttp(key, model, endpoint or ANTHROPIC_URL)
    return None


@dataclass(frozen=True)
class Candidate:
    id: str  # stable: tap:dir
    name: str
    text: str  # description and best snippet, shortened


def build_prompt(query: str, candidates: Sequence[Candidate]) -> str:
    lines = [f"- {c.id} | {c.name}: {' '.join(c.text.split())[:240]}" for c in candidates]
    return (
        f"Task: {query}\n\nCandidate skills (id | name: what it does):\n"
        + "\n".join(lines)
        + "\n\nOrder the candidate ids best match first for the task. Reply with ONLY a JSON "
        "array of the ids, exactly as written above."
    )


def parse_order(reply: str, known: Sequence[str]) -> list[str]:
    """The ids of the first JSON array in the reply that are candidates; LlmError if none."""
    allowed = set(known)
    for match in _ARRAY.finditer(reply):
        try:
            items = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(items, list):
            ids = [i for i in items if isinstance(i, str) and i in allowed]
            if ids:
                return list(dict.fromkeys(ids))
    raise LlmError("the model's reply held no array of candidate ids")


class LlmReranker:
    """Ask a client to order a shortlist; cached; ``None`` whenever it cannot."""

    def __init__(self, client: LlmClient | None, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        self._cache: OrderedDict[tuple[str, tuple[str, ...]], list[str]] = OrderedDict()
        self._lock = threading.Lock()
        self.last_error: str | None = None

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[str] | None:
        self.last_error = None
        if self.client is None:
            self.last_error = "no LLM available (no `claude` on PATH, no ANTHROPIC_API_KEY)"
            return None
        key = (query.strip(), tuple(c.id for c in candidates))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return list(self._cache[key])
        try:
            order = parse_order(
                self.client.complete(build_prompt(query, candidates), self.timeout), key[1]
            )
        except LlmError as exc:
            self.last_error = str(exc)
            logger.warning("LLM rerank skipped: %s — keeping the retrieval order", exc)
            return None
        with self._lock:
            self._cache[key] = order
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return list(order)
