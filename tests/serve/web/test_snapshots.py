"""Rendered workbench pages, byte for byte: a search page, read pages (a section in context and
a whole hostile file), health pages, the eval page and the OpenAPI document, against the files
in snapshots/. The only thing masked is the search time. A deliberate change to a page
rewrites them: `EP_UPDATE_SNAPSHOTS=1 pytest tests/serve/web/test_snapshots.py`."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import pytest

from workbench_support import GOLDEN_QUERY

SNAPSHOTS = Path(__file__).with_name("snapshots")
TOOK = re.compile(r"· [0-9.]+ ms</p>")
PAGES = {
    "search.html": "/?" + urlencode({"q": GOLDEN_QUERY, "pack": "ep-mcp-docs"}),
    "search-hostile.html": "/ui/search?" + urlencode({"q": "zebrafish payload", "pack": "hostile"}),
    "search-first-run.html": "/ui/search?"
    + urlencode({"q": "first run: build the index", "pack": "ep-mcp-docs", "n": "20"}),
    "read-section.html": "/packs/ep-mcp-docs/read?"
    + urlencode({"path": "howto/first-run.md", "section": "Step 3: build the index"}),
    "read-whole-hostile.html": "/packs/hostile/read?path=xss.md",
    "health.html": "/packs/ep-mcp-docs/health",
    "health-hostile.html": "/packs/hostile/health",
    "eval.html": "/eval",
    "openapi.json": "/openapi.json",
}


def get(app: Any, url: str) -> httpx2.Response:
    out: list[httpx2.Response] = []

    async def go() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            out.append(await c.get(url))

    anyio.run(go)
    return out[0]


def check(name: str, text: str) -> None:
    text = TOOK.sub("· <took> ms</p>", text)
    path = SNAPSHOTS / name
    if os.environ.get("EP_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no snapshot {name} — run with EP_UPDATE_SNAPSHOTS=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_rendered_page_matches_its_snapshot(wb_app: Any, name: str) -> None:
    r = get(wb_app, PAGES[name])
    assert r.status_code == 200
    check(name, r.text)


def test_the_top_hit_read_in_context_matches_its_snapshot(wb_app: Any) -> None:
    page = get(wb_app, PAGES["search.html"]).text
    href = re.search(r'href="(/packs/ep-mcp-docs/read\?[^"]+)"', page)
    assert href is not None
    url = href.group(1).replace("&amp;", "&")
    check("read-in-context.html", get(wb_app, url).text)
    check("read-in-context-fragment.html", get(wb_app, url.replace(
        "/packs/ep-mcp-docs/read?", "/ui/read?pack=ep-mcp-docs&")).text)  # fmt: skip
