"""LLM rerank: a fake `claude` on PATH and a fake Messages API on 127.0.0.1; every failure
falls back to the retrieval order and says which ranker answered."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ep_mcp.hub.hub import SkillHub
from ep_mcp.hub.llm import AnthropicHttp, choose_client, parse_order

from .helpers import env_with_path

QUERY = "pdf forms kubernetes marinade"


@pytest.fixture
def tapped(make_repo: Callable[..., Path], make_hub: Callable[..., SkillHub]) -> Path:
    repo = make_repo()
    make_hub().tap(str(repo), allow_file=True)
    return repo


def _claude(fake_bin: Callable[[str, str], Path], tmp_path: Path, reply: str) -> dict[str, str]:
    """A fake claude that counts its calls and prints ``reply`` (``$IDS`` = ids reversed)."""
    calls = tmp_path / "claude-calls"
    script = (
        f'echo called >> "{calls}"\n'
        'IDS=$(grep -o "^- [^ ]*" | cut -c3- | tac | sed \'s/.*/"&"/\' | paste -sd, -)\n'
        f"{reply}\n"
    )
    return env_with_path(fake_bin("claude", script))


def test_the_claude_cli_reorders_the_shortlist_by_stable_ids_and_is_cached(
    tapped: Path,
    make_hub: Callable[..., SkillHub],
    fake_bin: Callable[[str, str], Path],
    tmp_path: Path,
) -> None:
    env = _claude(fake_bin, tmp_path, 'echo "Sure! [$IDS]"')
    hub = make_hub(env=env, llm="auto")
    plain = hub.search(QUERY, 3).to_dict()
    smart = hub.search(QUERY, 3, smart=True).to_dict()
    assert plain["ranker"] == "lexical" and smart["ranker"] == "llm"
    assert [r["id"] for r in smart["results"]] == [r["id"] for r in plain["results"]][::-1]
    again = hub.search(QUERY, 3, smart=True).to_dict()
    assert again["results"] == smart["results"]
    assert (tmp_path / "claude-calls").read_text().count("called") == 1


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ('echo "I think pdf-forms is best"', "no array"),
        ('echo \'["marinade", "pdf-forms"]\'', "names are not ids"),
        ("echo '[1, 2, 3]'", "numbers"),
        ("exit 3", "exit status"),
        ("exec sleep 5", "timeout"),
    ],
)
def test_a_bad_or_slow_claude_falls_back_to_the_retrieval_order(
    reply: str,
    why: str,
    tapped: Path,
    make_hub: Callable[..., SkillHub],
    fake_bin: Callable[[str, str], Path],
    tmp_path: Path,
) -> None:
    env = _claude(fake_bin, tmp_path, reply)
    hub = make_hub(env=env, llm="auto", llm_timeout_s=0.5)
    plain = hub.search(QUERY, 3).to_dict()
    smart = hub.search(QUERY, 3, smart=True).to_dict()
    assert smart["ranker"] == "lexical", why
    assert smart["results"] == [{**r, "score": r["score"]} for r in plain["results"]]
    assert any("LLM rerank did not run" in n for n in smart["notes"])


def test_without_claude_or_a_key_smart_search_says_so(
    tapped: Path, make_hub: Callable[..., SkillHub], tmp_path: Path
) -> None:
    hub = make_hub(env=env_with_path(tmp_path / "empty-bin"), llm="auto", llm_rerank=True)
    reply = hub.search(QUERY, 3).to_dict()
    assert reply["ranker"] == "lexical"
    assert any("ANTHROPIC_API_KEY" in n for n in reply["notes"])


class _Api:
    def __init__(self) -> None:
        self.status = 200
        self.body: Any = None
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()


@pytest.fixture
def api() -> Iterator[tuple[_Api, str]]:
    state = _Api()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            request = json.loads(self.rfile.read(length))
            state.requests.append({"headers": dict(self.headers), "json": request})
            if state.delay:
                state.release.wait(state.delay)
            prompt = request["messages"][0]["content"]
            ids = [line[2:].split(" ")[0] for line in prompt.splitlines() if line.startswith("- ")]
            body = (
                state.body
                if state.body is not None
                else {"content": [{"type": "text", "text": json.dumps(ids[::-1])}]}
            )
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1/messages"
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_messages_api_is_used_when_there_is_no_claude_cli(
    tapped: Path, make_hub: Callable[..., SkillHub], api: tuple[_Api, str], tmp_path: Path
) -> None:
    state, url = api
    env = env_with_path(tmp_path / "empty-bin", ANTHROPIC_API_KEY="sk-test-123")
    hub = make_hub(env=env, llm="auto", llm_endpoint=url)
    plain = hub.search(QUERY, 3).to_dict()
    smart = hub.search(QUERY, 3, smart=True).to_dict()
    assert smart["ranker"] == "llm"
    assert [r["id"] for r in smart["results"]] == [r["id"] for r in plain["results"]][::-1]
    (req,) = state.requests
    assert req["headers"]["x-api-key"] == "sk-test-123"
    assert "sk-test-123" not in url and req["json"]["model"] == "claude-haiku-4-5"


@pytest.mark.parametrize("failure", ["http-500", "garbage-json", "not-json", "timeout"])
def test_messages_api_failures_fall_back_to_retrieval_order(
    failure: str,
    tapped: Path,
    make_hub: Callable[..., SkillHub],
    api: tuple[_Api, str],
    tmp_path: Path,
) -> None:
    state, url = api
    if failure == "http-500":
        state.status = 500
    elif failure == "garbage-json":
        state.body = {"content": [{"type": "text", "text": "no idea, sorry"}]}
    elif failure == "not-json":
        state.body = b"<html>oops</html>"
    else:
        state.delay = 3.0
    env = env_with_path(tmp_path / "empty-bin", ANTHROPIC_API_KEY="sk-test")
    hub = make_hub(env=env, llm="auto", llm_endpoint=url, llm_timeout_s=0.5)
    reply = hub.search(QUERY, 3, smart=True).to_dict()
    assert reply["ranker"] == "lexical"
    assert any("LLM rerank did not run" in n for n in reply["notes"])


def test_a_dead_endpoint_is_a_fallback_not_an_exception(tmp_path: Path) -> None:
    client = AnthropicHttp("k", "m", "http://127.0.0.1:9/v1/messages")
    from ep_mcp.hub.llm import LlmReranker

    assert LlmReranker(client, 0.5).rerank("q", []) is None


def test_the_cli_is_preferred_over_the_key(fake_bin: Callable[[str, str], Path]) -> None:
    env = env_with_path(fake_bin("claude", "exit 0\n"), ANTHROPIC_API_KEY="k")
    assert choose_client(env, model="m").name == "claude-cli"  # type: ignore[union-attr]
    env_no_cli = {"PATH": "/nonexistent", "ANTHROPIC_API_KEY": "k"}
    assert choose_client(env_no_cli, model="m").name == "anthropic-api"  # type: ignore[union-attr]
    assert choose_client({"PATH": "/nonexistent"}, model="m") is None


def test_parse_order_keeps_only_known_ids_in_order() -> None:
    reply = 'Here: ["b:x", "zzz", "a:y", "b:x"] done'
    assert parse_order(reply, ["a:y", "b:x"]) == ["b:x", "a:y"]
