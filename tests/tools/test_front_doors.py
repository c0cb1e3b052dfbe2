"""Every front door refuses a bad search or read in the same words: the MCP tools (the SDK
client, in-process), `GET /search`, the workbench and the CLI all check their arguments through
`SearchRequest.from_args` / `ReadRequest.from_args` (and the registry's schema), so a blank
query, a count out of range, a missing file or a read without exactly one of path/id reads the
same wherever it is sent."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings
from ep_mcp.errors import BadRequest, EpMcpError, NotFoundError, Refused
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.reading import NEIGHBORS_NEED_SECTION, PATH_OR_ID, find_document
from ep_mcp.retrieval.types import BLANK_QUERY

PACK = {
    "manifest.yaml": "slug: alpha\nname: Alpha\ntype: product\n",
    "routing.md": "---\ntitle: Routing\ntype: concept\n---\n# Routing\n\n"
    "Routing moves packets between networks.\n\n## Ports\n\nOpen port 8080.\n",
}
RANGE = "must be between 1 and 50 — got 0"  # the wording of a count out of range, everywhere
BLANK = "   "


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doors") / "alpha"
    for rel, text in PACK.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def missing(pack: Path) -> str:
    """What ep_read says of a file the pack does not have (the message's first part)."""
    with pytest.raises(NotFoundError) as caught:
        find_document(load_pack(pack), "missing.md")
    return str(caught.value.args[0])


@pytest.fixture(scope="module")
def served(pack: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    from ep_mcp.serve.app import open_context

    data = {
        "packs": [{"path": str(pack)}],
        "embedding": {"provider": "hashing"},
        "server": {"watch": False},
    }
    settings = dataclasses.replace(
        load_settings(data=data), home=tmp_path_factory.mktemp("doors-home")
    )
    serve, ring = open_context(settings)
    yield serve, ring
    serve.library.close()


def _get(served: tuple[Any, Any], url: str) -> httpx2.Response:
    from ep_mcp.serve.http.app import create_app

    serve, ring = served
    app = create_app(serve, load_settings(data={}).server, ring)
    out: list[httpx2.Response] = []

    async def go() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            out.append(await c.get(url))

    anyio.run(go)
    return out[0]


def test_the_mcp_tools_refuse_in_the_shared_words(served: tuple[Any, Any], missing: str) -> None:
    from ep_mcp.serve.mcp.server import build_server

    server = build_server(served[0])
    calls = {
        "blank": ("ep_search", {"query": BLANK}),
        "empty": ("ep_search", {"query": ""}),  # the schema's minLength: the same words
        "range": ("ep_search", {"query": "ports", "max_results": 0}),
        "missing": ("ep_read", {"path": "missing.md"}),
        "neither": ("ep_read", {"section": "Ports"}),
        "neighbors": ("ep_read", {"path": "routing.md", "neighbors": True}),
    }
    texts: dict[str, str] = {}

    async def go() -> None:
        async with Client(server) as c:
            for label, (name, args) in calls.items():
                r = await c.call_tool(name, args)
                assert r.is_error, label
                texts[label] = " ".join(getattr(part, "text", "") for part in r.content)

    anyio.run(go)
    assert BLANK_QUERY in texts["blank"]
    assert texts["empty"] == texts["blank"]
    assert "ep_search: `max_results` " + RANGE in texts["range"]
    assert missing in texts["missing"]
    assert PATH_OR_ID in texts["neither"]
    assert NEIGHBORS_NEED_SECTION in texts["neighbors"]


def test_get_search_refuses_in_the_shared_words(served: tuple[Any, Any]) -> None:
    blank = _get(served, "/search?q=%20%20%20")
    assert blank.status_code == 422
    assert blank.json()["error"]["message"] == BLANK_QUERY
    count = _get(served, "/search?q=ports&n=0")
    assert count.status_code == 422
    assert count.json()["error"]["message"] == "`n` " + RANGE


def test_the_workbench_refuses_in_the_shared_words(served: tuple[Any, Any], missing: str) -> None:
    blank = _get(served, "/ui/search?q=%20%20%20&pack=alpha")
    assert blank.status_code == 422 and escape(BLANK_QUERY) in blank.text
    count = _get(served, "/ui/search?q=ports&n=0&pack=alpha")
    assert count.status_code == 422 and escape("`n` " + RANGE) in count.text
    gone = _get(served, "/ui/read?path=missing.md&pack=alpha")
    assert gone.status_code == 404 and escape(missing) in gone.text
    neither = _get(served, "/ui/read?section=Ports&pack=alpha")
    assert neither.status_code == 400 and escape(PATH_OR_ID) in neither.text


def test_the_cli_refuses_in_the_shared_words(pack: Path, missing: str) -> None:
    def ep(*args: str) -> Any:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    blank = ep("search", str(pack), BLANK, "--provider", "hashing")
    assert blank.exit_code == 1 and f"error: {BLANK_QUERY}" in blank.stderr
    count = ep("search", str(pack), "ports", "-n", "0", "--provider", "hashing")
    assert count.exit_code == 2 and "`-n` " + RANGE in count.stderr
    gone = ep("read", str(pack), "missing.md")
    assert gone.exit_code == 1 and missing in gone.stderr
    neither = ep("read", str(pack), "--section", "Ports")
    assert neither.exit_code == 2 and PATH_OR_ID in neither.stderr


def test_the_http_refusals_are_errors_of_the_family_with_their_status() -> None:
    assert isinstance(BadRequest(400, "bad JSON"), EpMcpError)
    assert BadRequest(422, "bad vector").status == 422
    assert isinstance(Refused(401, "needs a key"), EpMcpError)
    assert Refused(404, "no such pack").status == 404
    assert BadRequest.status == 400 and Refused.status == 403
