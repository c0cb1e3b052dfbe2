"""The workbench over an ASGI client: pages, fragments, auth, escaping, security headers."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest

from workbench_support import GOLDEN_QUERY, GOLDEN_TOP, LOCKED_KEY

Call = Callable[[httpx2.AsyncClient], Awaitable[None]]
PAGE_BUDGET = 100_000  # bytes (issue #12)


def run(app: Any, fn: Call) -> None:
    async def go() -> None:  # no lifespan: the workbench's routes need no MCP session manager
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
            await fn(c)

    anyio.run(go)


def get(app: Any, url: str, **kw: Any) -> httpx2.Response:
    out: list[httpx2.Response] = []

    async def fn(c: httpx2.AsyncClient) -> None:
        out.append(await c.get(url, **kw))

    run(app, fn)
    return out[0]


def test_the_search_page_renders_the_golden_top_hit_on_the_server(wb_app: Any) -> None:
    r = get(wb_app, "/", params={"q": GOLDEN_QUERY, "pack": "ep-mcp-docs"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    first = re.search(r'<li class="hit">.*?</li>', r.text, re.S)
    assert first is not None and GOLDEN_TOP in first.group(0)
    assert 'id="explain"' in r.text and "why #1?" in r.text
    assert len(r.content) <= PAGE_BUDGET


def test_the_page_without_a_query_is_a_small_form_listing_the_open_packs_only(
    wb_app: Any,
) -> None:
    r = get(wb_app, "/")
    assert r.status_code == 200 and "<form id=search" in r.text
    options = re.findall(r'<option value="([^"]+)"', r.text)
    assert options == ["ep-mcp-docs", "hostile"]  # "locked" needs a key
    assert len(r.content) < 10_000


@pytest.mark.parametrize(
    "path", ["/", "/packs/ep-mcp-docs/", "/packs/ep-mcp-docs/health", "/eval", "/openapi.json"]
)
def test_every_page_carries_a_strict_csp_nosniff_and_frame_denial(wb_app: Any, path: str) -> None:
    r = get(wb_app, path)
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"


def test_pages_have_no_inline_script_or_style_attribute(wb_app: Any) -> None:
    for path in ("/", f"/?q={GOLDEN_QUERY}&pack=ep-mcp-docs", "/packs/ep-mcp-docs/health",
                 "/eval"):  # fmt: skip
        html = get(wb_app, path).text
        scripts = re.findall(r"<script\b[^>]*>", html)
        assert scripts == ['<script src="/ui/static/workbench.js" defer>'], path
        assert " style=" not in html, path


def test_a_hostile_pack_renders_as_text_in_results_and_in_the_reader(wb_app: Any) -> None:
    r = get(wb_app, "/ui/search", params={"q": "zebrafish payload", "pack": "hostile"})
    assert r.status_code == 200 and "xss.md" in r.text
    fid = re.search(r'data-panel="([^"]+)"', r.text)
    assert fid is not None
    read = get(wb_app, fid.group(1).replace("&amp;", "&"))
    assert read.status_code == 200 and "Zebrafish" in read.text
    for html in (r.text, read.text):
        assert "<script" not in html and "<img" not in html and "<iframe" not in html
        assert "<svg onload" not in html and "<style" not in html
        assert not re.search(r"<[^>]+\son\w+=", html)  # no event-handler attribute
        assert "javascript:" not in html.lower().replace("javascript:alert", "")  # text only
        assert not re.search(r'href="\s*javascript:', html, re.I)
        assert "</textarea><script" not in html
    assert "&lt;script&gt;" in read.text


def test_a_keyed_pack_is_refused_without_its_key_and_served_with_it(wb_app: Any) -> None:
    url = "/ui/search?q=vault&pack=locked"
    assert get(wb_app, url).status_code == 401
    assert get(wb_app, url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = get(wb_app, url, headers={"Authorization": f"Bearer {LOCKED_KEY}"})
    assert ok.status_code == 200 and "vault.md" in ok.text
    page = get(wb_app, "/packs/locked/health")
    assert page.status_code == 200 and "data-pending" in page.text and "vault" not in page.text
    for frag in ("/ui/health?pack=locked", "/ui/read?pack=locked&path=vault.md"):
        assert get(wb_app, frag).status_code == 401
        assert get(wb_app, frag, headers={"Authorization": f"Bearer {LOCKED_KEY}"}).is_success


def test_a_key_in_the_url_is_refused_before_any_page(wb_app: Any) -> None:
    r = get(wb_app, "/", params={"q": "vault", "pack": "locked", "key": LOCKED_KEY})
    assert r.status_code == 400 and "not accepted in the URL" in r.text


def test_pages_keep_the_host_and_origin_rules(wb_app: Any) -> None:
    assert get(wb_app, "/", headers={"Host": "evil.example"}).status_code == 421
    r = get(wb_app, "/ui/search?q=x&pack=hostile", headers={"Origin": "https://evil.example"})
    assert r.status_code == 403


def test_unknown_packs_and_fragments_are_404(wb_app: Any) -> None:
    assert get(wb_app, "/packs/nope/").status_code == 404
    assert get(wb_app, "/packs/nope/health").status_code == 404
    assert get(wb_app, "/ui/nope").status_code == 404
    assert get(wb_app, "/ui/static/../../config.py").status_code == 404
    assert get(wb_app, "/ui/static/secret.txt").status_code == 404


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/ui/search?pack=hostile", 400),
        ("/ui/search?q=x&pack=hostile&n=500", 422),
        ("/ui/search?q=x&pack=hostile&n=abc", 400),
        ("/ui/search?q=x", 400),  # several packs: choose one
        ("/ui/read?pack=hostile", 400),
        ("/ui/read?pack=hostile&path=../../etc/passwd", 404),
    ],
)
def test_bad_fragment_requests_are_4xx_html(wb_app: Any, url: str, status: int) -> None:
    r = get(wb_app, url)
    assert r.status_code == status and r.headers["content-type"].startswith("text/html")


def test_the_health_page_shows_findings_freshness_graph_coverage_and_index(wb_app: Any) -> None:
    r = get(wb_app, "/ui/health", params={"pack": "hostile"})
    assert r.status_code == 200
    text = r.text
    assert "xss.md:" in text and "nowhere-at-all" in text  # broken wikilink with its line
    assert "Freshness" in text and "stale" in text  # verified 2020, refresh P30D
    assert "<svg" in text and "Verified age" in text
    assert "Index" in text and "chunks" in text
    example = get(wb_app, "/ui/health", params={"pack": "ep-mcp-docs"}).text
    assert "from the evaluation report 2026-12-01T10:00:00Z" in example


def test_the_health_page_names_the_model_and_provider_the_index_was_built_with(
    wb_app: Any,
) -> None:
    text = get(wb_app, "/ui/health", params={"pack": "ep-mcp-docs"}).text
    index = re.search(r'<table class="index">.*?</table>', text, re.S)
    assert index is not None
    rows = dict(re.findall(r"<th scope=row>(.*?)</th><td>(.*?)</td>", index.group(0)))
    assert rows["model"] == "fake/hashing-64" and rows["dimension"] == "64"
    assert rows["provider"] == "hashing"
    assert "lexical only" not in index.group(0)


def test_the_provider_of_an_index_is_the_prefix_of_its_model_when_that_names_a_provider() -> None:
    from ep_mcp.serve.web.data import provider_of

    assert provider_of("local/all-MiniLM-L6-v2-int8", "hashing") == "local"
    assert provider_of("openai/text-embedding-3-small", "local") == "openai"
    assert provider_of("fake/hashing-64", "hashing") == "hashing"
    assert provider_of(None, "local") is None


def test_the_eval_page_shows_per_pack_and_category_tables_misses_and_the_difference(
    wb_app: Any,
) -> None:
    r = get(wb_app, "/eval")
    assert r.status_code == 200
    assert 'id="per-pack"' in r.text and "example" in r.text
    assert "per category" in r.text and "Difference" in r.text and "Before → after" in r.text
    assert get(wb_app, "/packs/locked/eval").status_code == 200  # pending, no data


def test_openapi_describes_search_health_and_packs_from_the_handlers_parameters(
    wb_app: Any,
) -> None:
    from ep_mcp.serve.http.search_api import SEARCH_PARAMS

    doc = get(wb_app, "/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {"/search", "/health", "/packs"}
    names = [p["name"] for p in doc["paths"]["/search"]["get"]["parameters"]]
    assert names == ["q", *(p.name for p in SEARCH_PARAMS)]
    n = next(p for p in doc["paths"]["/search"]["get"]["parameters"] if p["name"] == "n")
    assert n["schema"]["maximum"] == 50  # from ep_search's own input schema


def test_static_files_are_served_with_their_types(wb_app: Any) -> None:
    js = get(wb_app, "/ui/static/workbench.js")
    css = get(wb_app, "/ui/static/workbench.css")
    assert js.headers["content-type"].startswith("text/javascript")
    assert css.headers["content-type"].startswith("text/css")
    assert "sessionStorage" in js.text and "Authorization" in js.text
