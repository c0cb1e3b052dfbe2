"""The stateless `tools/call` fast path answers exactly as the SDK's transport would."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from ep_mcp.serve.http import app as http_app
from ep_mcp.serve.mcp import fast as mcp_fast

from .test_http import LEGACY, MCP_HEADERS, bearer, with_client


def call(arguments: Any = None, name: Any = "ep_search", rid: Any = 7) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


BODIES = {
    "search": call({"query": "compost", "max_results": 3}),
    "string id": call({"query": "tomatoes"}, rid="abc"),
    "bad arguments": call({"query": 5}),
    "arguments not an object": call("compost"),
    "no name": {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}},
    "unknown tool": call({}, name="nope"),
    "tool of another pack": call({"pack": "alpha", "query": "port"}),
    "tools/list": {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
    "batch": [call({"query": "compost"})],
    "notification": {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "ep_search"}},
    "not json": "{",
}
HEADERS = {
    "2025-06-18": LEGACY,
    "no version header": MCP_HEADERS,
    "2025-03-26": {**MCP_HEADERS, "MCP-Protocol-Version": "2025-03-26"},
    "2026-07-28": {**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28"},
    "unknown version": {**MCP_HEADERS, "MCP-Protocol-Version": "1999-01-01"},
    "sse only": {**LEGACY, "Accept": "text/event-stream"},
    "text/plain body": {**LEGACY, "Content-Type": "text/plain"},
}


def comparable(data: Any) -> Any:
    """The answer without what differs between two runs of one search: its timing, and the
    text block's JSON formatting (compared as the JSON it holds)."""
    if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
        return data
    result = dict(data["result"])
    if isinstance(result.get("structuredContent"), dict):
        result["structuredContent"] = {
            k: v for k, v in result["structuredContent"].items() if k != "took_ms"
        }
    content = []
    for block in result.get("content", []):
        if block.get("type") != "text":  # resource links: compared as they are
            content.append(block)
            continue
        try:
            parsed = json.loads(block["text"])
        except ValueError:
            content.append(block)
            continue
        if isinstance(parsed, dict):
            parsed.pop("took_ms", None)
        content.append({**block, "text": parsed})
    result["content"] = content
    return {**data, "result": result}


def exchange(serve_ctx: Any, body: Any, headers: dict[str, str]) -> tuple[int, Any, bool]:
    """(status, JSON body or text, whether the fast path answered) through the whole app."""
    serve, ring = serve_ctx
    out: list[Any] = []
    answered: list[bool] = []
    real = mcp_fast.answer_tool_call

    async def spy(*args: Any) -> bool:
        answered.append(await real(*args))
        return answered[-1]

    async def fn(c: httpx2.AsyncClient) -> None:
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        r = await c.post("/packs/beta/mcp", content=raw, headers={**headers, **bearer("sk-beta")})
        try:
            out.append((r.status_code, comparable(r.json())))
        except ValueError:
            out.append((r.status_code, r.text))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(http_app, "answer_tool_call", spy)
        with_client(serve, ring, fn)
    return out[0][0], out[0][1], any(answered)


def through_sdk(serve_ctx: Any, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    async def never(*args: Any) -> bool:
        return False

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mcp_fast, "answer_tool_call", never)
        status, data, answered = exchange(serve_ctx, body, headers)
    assert not answered
    return status, data


@pytest.mark.parametrize("body", BODIES, ids=list(BODIES))
@pytest.mark.parametrize("era", HEADERS, ids=list(HEADERS))
def test_every_request_is_answered_as_the_sdk_answers_it(
    serve_ctx: Any, body: str, era: str
) -> None:
    fast = exchange(serve_ctx, BODIES[body], HEADERS[era])
    assert fast[:2] == through_sdk(serve_ctx, BODIES[body], HEADERS[era])


@pytest.mark.parametrize(
    ("body", "era"),
    [
        ("search", "2025-06-18"),
        ("search", "no version header"),
        ("string id", "2025-03-26"),
        ("tool of another pack", "2025-06-18"),
        ("unknown tool", "2025-06-18"),
        ("bad arguments", "2025-06-18"),  # the registry's validation: an isError result
    ],
)
def test_plain_handshake_era_tool_calls_take_the_fast_path(
    serve_ctx: Any, body: str, era: str
) -> None:
    status, data, answered = exchange(serve_ctx, BODIES[body], HEADERS[era])
    assert answered and status == 200 and "result" in data


@pytest.mark.parametrize(
    ("body", "era"),
    [
        ("search", "2026-07-28"),
        ("search", "unknown version"),
        ("search", "sse only"),
        ("search", "text/plain body"),
        ("arguments not an object", "2025-06-18"),
        ("no name", "2025-06-18"),
        ("tools/list", "2025-06-18"),
        ("batch", "2025-06-18"),
        ("notification", "2025-06-18"),
        ("not json", "2025-06-18"),
    ],
)
def test_everything_else_is_left_to_the_sdk(serve_ctx: Any, body: str, era: str) -> None:
    assert not exchange(serve_ctx, BODIES[body], HEADERS[era])[2]


def test_the_access_decision_comes_before_the_fast_path(serve_ctx: Any) -> None:
    serve, ring = serve_ctx
    seen: list[Any] = []

    async def spy(*args: Any) -> bool:
        seen.append(args)
        return False

    async def fn(c: httpx2.AsyncClient) -> None:
        raw = json.dumps(BODIES["search"]).encode()
        for headers in ({}, bearer("sk-wrong"), bearer("sk-alpha")):
            r = await c.post("/packs/beta/mcp", content=raw, headers={**LEGACY, **headers})
            assert r.status_code in (401, 403)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(http_app, "answer_tool_call", spy)
        with_client(serve, ring, fn)
    assert seen == []


def test_the_text_block_is_the_structured_content(serve_ctx: Any) -> None:
    status, data, answered = exchange(serve_ctx, BODIES["search"], LEGACY)
    result = data["result"]  # exchange() parsed the text block and dropped took_ms
    assert answered and status == 200 and not result.get("isError")
    assert result["content"][0]["text"] == result["structuredContent"]
    assert result["structuredContent"]["results"]
    found = result["structuredContent"]
    cited = {
        f"ep://{h.get('pack') or found['pack']}/file/{h['source_file']}" for h in found["results"]
    }
    links = [b for b in result["content"][1:] if b["type"] == "resource_link"]
    assert {b["uri"] for b in links} == cited  # the fast path links the files too
