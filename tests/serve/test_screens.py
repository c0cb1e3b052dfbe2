"""The screens are exact: key names in the URL however spelled, blank credentials, no-store on
every answer to a credential, the JSON envelope on protocol-level 400s, and the body cap to the
byte — each through the real HTTP app (Starlette, all its middleware)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from ep_mcp.serve.auth import KeyRing

from .test_http import with_client

MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEGACY = {**MCP, "MCP-Protocol-Version": "2025-06-18"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}


@pytest.fixture(scope="module")
def mixed(open_ctx: Any) -> Iterator[tuple[Any, KeyRing]]:
    """alpha keyed (`sk-alpha`), beta open: the no-key caller sees beta."""
    ring = KeyRing.build({"alpha": ["sk-alpha"], "beta": []})
    yield dataclasses.replace(open_ctx, keyed=ring.keyed), ring


# -- blank and whitespace credentials ---------------------------------------------------------

BLANK = [b"", b" ", b"\t", b"  \t ", b"Bearer", b"Bearer ", b"bearer \t ", b"Bearer\t"]


@pytest.mark.parametrize("value", BLANK, ids=repr)
def test_a_blank_or_empty_bearer_credential_is_refused_where_no_header_is_not(
    mixed: tuple[Any, KeyRing], value: bytes
) -> None:
    """A present `Authorization:` that carries no key is a wrong key, not an absent one: on
    the routes that answer a caller without a header (the open pack), it gets 401."""
    serve, ring = mixed
    auth = {"Authorization": value}

    async def fn(c: httpx2.AsyncClient) -> None:
        # the control: without any header the open pack answers
        assert (await c.post("/mcp", json=INIT, headers=LEGACY)).status_code == 200
        assert (await c.get("/search", params={"q": "tomatoes"})).status_code == 200
        r = await c.post("/mcp", json=INIT, headers={**LEGACY, **auth})
        assert r.status_code == 401, r.text
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"]["code"] == "unauthorized"
        r = await c.get("/search", params={"q": "tomatoes"}, headers=auth)
        assert r.status_code == 401, r.text
        r = await c.post("/search", json={"q": "tomatoes"}, headers=auth)
        assert r.status_code == 401, r.text
        r = await c.get("/ui/eval", headers=auth)
        assert r.status_code == 401, r.text
        # a keyed pack stays closed to it too
        r = await c.get("/search", params={"q": "routing", "pack": "alpha"}, headers=auth)
        assert r.status_code == 401 and "Routing moves" not in r.text

    with_client(serve, ring, fn)


# -- key parameters in the URL ----------------------------------------------------------------

KEY_SPELLINGS = [
    "api_key=sk-alpha",
    "API_KEY=sk-alpha",
    "Api_Key=sk-alpha",
    "api%5Fkey=sk-alpha",
    "api%5fkey=sk-alpha",
    "API%5FKEY=sk-alpha",
    "%61pi_key=sk-alpha",
    "api%255Fkey=sk-alpha",  # encoded twice
    "api%252525255Fkey=sk-alpha",  # encoded five times
    "api+key=sk-alpha",
    "api%20key=sk-alpha",
    "api-key=sk-alpha",
    "ApiKey=sk-alpha",
    "x-api-key=sk-alpha",
    "%EF%BD%81%EF%BD%90%EF%BD%89_key=sk-alpha",  # fullwidth "api" (NFKC)
    "KEY=sk-alpha",
    "Token=sk-alpha",
    "ACCESS_TOKEN=sk-alpha",
    "access%2Dtoken=sk-alpha",
    "authorization=Bearer%20sk-alpha",
    "api_key",  # no value: still a key's name
    "x=1;API_KEY=sk-alpha",
    "q=a&&Api_Key=sk-alpha",
]


@pytest.mark.parametrize("param", KEY_SPELLINGS)
def test_a_key_parameter_in_the_url_is_refused_however_spelled_or_encoded(
    mixed: tuple[Any, KeyRing], param: str
) -> None:
    serve, ring = mixed

    async def fn(c: httpx2.AsyncClient) -> None:
        for method, path, body in (
            ("GET", "/search?q=routing&pack=alpha&", None),
            ("GET", "/search?", None),
            ("POST", "/packs/alpha/mcp?", INIT),
            ("POST", "/mcp?", INIT),
            ("GET", "/packs?", None),
            ("GET", "/ui/search?q=routing&pack=alpha&", None),
        ):
            r = await c.request(method, path + param, json=body, headers=LEGACY)
            assert r.status_code == 400, (path, r.status_code, r.text[:200])
            err = r.json()["error"]
            assert err["code"] == "bad_request" and "Authorization: Bearer" in err["message"]
            assert "sk-alpha" not in r.text and "Routing moves" not in r.text

    with_client(serve, ring, fn)


@pytest.mark.parametrize(
    "query",
    ["q=key+token&pack=beta", "q=tomatoes&pack=beta&monkey=1", "q=tomatoes&keys=1&tokens=2"],
)
def test_words_like_key_in_values_or_longer_names_pass_the_screen(
    mixed: tuple[Any, KeyRing], query: str
) -> None:
    serve, ring = mixed

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.get("/search?" + query)
        assert r.status_code == 200, r.text

    with_client(serve, ring, fn)


# -- no-store on every answer to a credential -------------------------------------------------


def _no_store(r: httpx2.Response) -> bool:
    return "no-store" in r.headers.get("cache-control", "").lower()


def test_every_answer_to_a_credential_and_every_refusal_is_no_store(serve_ctx: Any) -> None:
    """Search, MCP (the SDK's path and the fast tools/call path), resources, the pack list,
    the workbench — keyed content never lands in a browser's or a proxy's cache; nor do 401
    and 403, so the retry with a key reaches the server."""
    serve, ring = serve_ctx
    key = {"Authorization": "Bearer sk-alpha"}

    async def fn(c: httpx2.AsyncClient) -> None:
        answers = {
            "search": await c.get("/search", params={"q": "routing", "pack": "alpha"}, headers=key),
            "merged": await c.get("/search", params={"q": "routing"}, headers=key),
            "initialize": await c.post("/mcp", json=INIT, headers={**LEGACY, **key}),
            "tools/call": await c.post(
                "/packs/alpha/mcp",
                json=rpc("tools/call", {"name": "ep_list_topics", "arguments": {}}),
                headers={**LEGACY, **key},
            ),
            "resources/read": await c.post(
                "/packs/alpha/mcp",
                json=rpc("resources/read", {"uri": "ep://alpha/manifest"}),
                headers={**LEGACY, **key},
            ),
            "packs": await c.get("/packs", headers=key),
            "workbench": await c.get(
                "/ui/read", params={"pack": "alpha", "path": "concepts/routing.md"}, headers=key
            ),
            "no key, keyed pack (401)": await c.get(
                "/search", params={"q": "routing", "pack": "alpha"}
            ),
            "no key, MCP (401)": await c.post("/packs/alpha/mcp", json=INIT, headers=LEGACY),
            "another pack's key (403)": await c.post(
                "/packs/alpha/mcp",
                json=INIT,
                headers={**LEGACY, "Authorization": "Bearer sk-beta"},
            ),
            "a wrong key (401)": await c.get(
                "/search", params={"q": "routing"}, headers={"Authorization": "Bearer nope"}
            ),
        }
        assert answers["tools/call"].status_code == 200
        assert "Alpha Pack" in answers["resources/read"].text
        assert answers["packs"].json()["packs"][0]["slug"] == "alpha"
        status = {name: r.status_code for name, r in answers.items()}
        assert [s for s in status.values() if s not in (200, 401, 403)] == [], status
        cached = [name for name, r in answers.items() if not _no_store(r)]
        assert cached == [], cached

    with_client(serve, ring, fn)


# -- protocol-level 400s in the JSON envelope -------------------------------------------------


@pytest.mark.parametrize("path", ["/mcp", "/packs/beta/mcp"])
@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", ""]
)
def test_an_mcp_post_that_is_not_json_gets_400_in_the_envelope(
    open_ctx: Any, path: str, content_type: str | None
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if content_type is not None:
        headers["Content-Type"] = content_type

    async def fn(c: httpx2.AsyncClient) -> None:
        r = await c.post(path, content=json.dumps(INIT).encode(), headers=headers)
        assert r.status_code == 400, r.text
        assert r.headers["content-type"].startswith("application/json")
        err = r.json()["error"]
        assert err["code"] == "bad_request" and "Content-Type: application/json" in err["message"]

    with_client(open_ctx, KeyRing(), fn)


# -- the body cap, to the byte ----------------------------------------------------------------

CAP = 4096


def _body(size: int) -> bytes:
    """A valid `/search` JSON body of exactly ``size`` bytes (JSON allows trailing spaces)."""
    core = b'{"q": "tomatoes", "pack": "beta"}'
    return core + b" " * (size - len(core))


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "streamed"])
def test_a_body_of_exactly_the_cap_is_read_and_one_byte_more_is_413(
    open_ctx: Any, streamed: bool
) -> None:
    async def fn(c: httpx2.AsyncClient) -> None:
        for size, status in ((CAP - 1, 200), (CAP, 200), (CAP + 1, 413)):
            body = _body(size)
            assert len(body) == size

            async def chunks(data: bytes = body) -> Any:
                for i in range(0, len(data), 1000):
                    yield data[i : i + 1000]

            content: Any = chunks() if streamed else body
            headers = {"Content-Type": "application/json"}
            r = await c.post("/search", content=content, headers=headers)
            assert r.status_code == status, (size, r.text[:200])
            if status == 413:
                assert r.json()["error"]["code"] == "payload_too_large"
            else:
                assert r.json()["results"][0]["source_file"] == "gardening.md"

    with_client(open_ctx, KeyRing(), fn, max_body_bytes=CAP)


def test_an_mcp_body_of_exactly_the_cap_is_served_and_one_byte_more_is_413(
    open_ctx: Any,
) -> None:
    message = json.dumps(rpc("tools/list", {})).encode()

    async def fn(c: httpx2.AsyncClient) -> None:
        for size, status in ((CAP, 200), (CAP + 1, 413)):
            body = message + b" " * (size - len(message))
            r = await c.post("/packs/beta/mcp", content=body, headers=LEGACY)
            assert r.status_code == status, (size, r.text[:200])

            async def chunks(data: bytes = body) -> Any:
                yield data[: len(data) // 2]
                yield data[len(data) // 2 :]

            r = await c.post("/packs/beta/mcp", content=chunks(), headers=LEGACY)
            assert r.status_code == status, (size, "streamed", r.text[:200])

    with_client(open_ctx, KeyRing(), fn, max_body_bytes=CAP)
