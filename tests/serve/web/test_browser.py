"""The workbench in a real browser: headless Chromium (the system's, e.g. Debian's `chromium`)
driven by Playwright for Python. Skipped, with the reason, where either is missing.

Screenshots of every page go to `$EP_SCREENSHOTS` (default: a temporary folder); the ones in
docs/img/ were made with `EP_SCREENSHOTS=docs/img pytest tests/serve/web/test_browser.py`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from workbench_support import GOLDEN_QUERY, GOLDEN_TOP, LOCKED_KEY

CHROMIUM = os.environ.get("EP_CHROMIUM") or next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
)
try:
    import playwright.sync_api  # noqa: F401

    PLAYWRIGHT = True
except ImportError:  # pragma: no cover - depends on the environment
    PLAYWRIGHT = False

pytestmark = [
    pytest.mark.browser,  # not in the default run: `pytest -m browser` (.ci/run runs it)
    pytest.mark.skipif(
        not PLAYWRIGHT, reason="playwright is not installed (pip install -e .[dev])"
    ),
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no chromium binary found (apt-get install chromium, or set EP_CHROMIUM)",
    ),
]


@dataclass
class Seen:
    """What a page did: dialogs it opened, every URL it requested, console errors."""

    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    def foreign(self, allowed: str) -> list[str]:
        host = urlsplit(allowed).netloc
        return [u for u in self.requests if urlsplit(u).netloc not in (host, "")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("EP_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, Seen]]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    seen = Seen()

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.on("request", lambda r: seen.requests.append(r.url))
    tab.on("console", lambda m: seen.console.append(m.text) if m.type == "error" else None)
    yield tab, seen
    context.close()


def search(tab: Any, base: str, pack: str, query: str) -> None:
    tab.goto(f"{base}/")
    tab.select_option("#pack", pack)
    tab.fill("#q", query)
    tab.press("#q", "Enter")
    tab.wait_for_selector("#results #hits, #results li.empty")


def test_a_golden_query_typed_in_the_page_has_its_expected_top_hit_and_an_explain_trace(
    page: tuple[Any, Seen], live_url: str, shots: Path
) -> None:
    tab, seen = page
    search(tab, live_url, "ep-mcp-docs", GOLDEN_QUERY)
    first = tab.locator("#hits li.hit").first
    assert GOLDEN_TOP in first.locator(".where code").inner_text()
    assert "q=how+do+I+connect" in tab.url
    first.locator("details.why summary").click()
    why = first.locator("table.why")
    assert why.is_visible() and "lexical" in why.inner_text()
    assert "rank by stage" in first.inner_text()
    tab.evaluate("window.scrollTo(0, 0)")
    tab.screenshot(path=str(shots / "workbench-search.png"))
    tab.locator("#explain summary").click()
    for stage in ("fusion", "threshold", "mmr"):
        assert tab.locator(f'section.stage[data-stage="{stage}"]').is_visible()
    tab.locator("#explain").scroll_into_view_if_needed()
    tab.screenshot(path=str(shots / "workbench-explain.png"))
    assert not seen.dialogs and not seen.foreign(live_url) and not seen.console


def test_open_in_context_shows_the_section_between_its_neighbours(
    page: tuple[Any, Seen], live_url: str, shots: Path
) -> None:
    tab, seen = page
    search(tab, live_url, "ep-mcp-docs", "fusion weights per intent")
    tab.locator("#hits li.hit a.open").first.click()
    reader = tab.locator("#reader")
    reader.locator("section.focus").wait_for()
    assert reader.is_visible() and reader.locator("section.focus .md").inner_text().strip()
    tab.evaluate("window.scrollTo(0, 0)")
    tab.screenshot(path=str(shots / "workbench-reader.png"))
    assert not seen.dialogs and not seen.foreign(live_url)


INERT_CHECK = """() => ({
  scripts: [...document.scripts].map(s => s.src),
  handlers: [...document.querySelectorAll('*')].filter(
      el => [...el.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
  jsLinks: [...document.querySelectorAll('a[href]')].filter(
      a => a.href.trim().toLowerCase().startsWith('javascript:')).length,
  frames: document.querySelectorAll('iframe, object, embed, img, textarea').length,
})"""


def test_a_hostile_pack_renders_inert_in_results_reader_and_health(
    page: tuple[Any, Seen], live_url: str
) -> None:
    tab, seen = page
    search(tab, live_url, "hostile", "zebrafish payload")
    assert "<script>" in tab.locator("#hits").inner_text()  # shown as text
    tab.locator("#hits li.hit a.open").first.click()
    tab.locator("#reader section.focus").wait_for()
    for hit in tab.locator("#hits details.why summary").all():
        hit.click()
    tab.locator("#explain summary").click()
    checks = [tab.evaluate(INERT_CHECK)]
    tab.goto(f"{live_url}/packs/hostile/health")
    tab.locator("#health").wait_for()
    checks.append(tab.evaluate(INERT_CHECK))
    tab.goto(f"{live_url}/packs/hostile/read?path=xss.md")
    tab.locator("section.focus").wait_for()
    checks.append(tab.evaluate(INERT_CHECK))
    for found in checks:
        assert found["scripts"] == [f"{live_url}/ui/static/workbench.js"]
        assert found["handlers"] == 0 and found["jsLinks"] == 0 and found["frames"] == 0
    assert seen.dialogs == []
    assert seen.foreign(live_url) == []


def test_the_health_page_answers_what_is_stale(
    page: tuple[Any, Seen], live_url: str, shots: Path
) -> None:
    tab, seen = page
    tab.goto(f"{live_url}/packs/ep-mcp-docs/health")
    health = tab.locator("#health")
    assert "stale or expired" in health.locator(".summary").inner_text()
    assert tab.locator("table.stale tr").count() > 1
    tab.screenshot(path=str(shots / "workbench-health.png"), full_page=True)
    assert not seen.dialogs and not seen.foreign(live_url)


def test_the_eval_page_shows_the_per_pack_table(
    page: tuple[Any, Seen], live_url: str, shots: Path
) -> None:
    tab, seen = page
    tab.goto(f"{live_url}/eval")
    table = tab.locator("#per-pack")
    assert "example" in table.inner_text() and "MRR" in table.inner_text()
    assert tab.locator("#eval svg").count() >= 2
    tab.screenshot(path=str(shots / "workbench-eval.png"), full_page=True)
    assert not seen.dialogs and not seen.foreign(live_url)


def test_a_key_entered_once_opens_a_keyed_pack_and_never_appears_in_a_url(
    page: tuple[Any, Seen], live_url: str
) -> None:
    tab, seen = page
    tab.goto(f"{live_url}/packs/locked/health")
    assert "needs an API key" in tab.locator("#content").inner_text()
    tab.fill("#key", LOCKED_KEY)
    tab.press("#key", "Enter")
    tab.locator("#health").wait_for()
    assert "vault.md" in tab.locator("#health").inner_text()
    assert tab.evaluate("sessionStorage.getItem('ep-mcp-key')") == LOCKED_KEY
    tab.reload()  # the key is kept for this tab: the content loads again by itself
    tab.locator("#health").wait_for()
    tab.goto(f"{live_url}/packs/locked/")
    tab.fill("#q", "brass key")
    tab.press("#q", "Enter")
    tab.locator("#hits li.hit").first.wait_for()
    assert all(LOCKED_KEY not in u for u in seen.requests)
    assert LOCKED_KEY not in tab.url


def test_the_eval_html_report_opens_offline_with_no_request(
    page: tuple[Any, Seen], wb_settings: Any, tmp_path: Path, shots: Path
) -> None:
    from ep_mcp.eval.report import history, load_report
    from ep_mcp.eval.report_html import render_document

    newest, older = history(wb_settings.home / "reports")[:2]
    out = tmp_path / "report.html"
    out.write_text(render_document(load_report(newest), load_report(older)), encoding="utf-8")
    tab, seen = page
    tab.context.set_offline(True)
    tab.goto(out.as_uri())
    assert "example" in tab.locator("#per-pack").inner_text()
    assert seen.requests == [out.as_uri()]
    tab.screenshot(path=str(shots / "eval-report.png"), full_page=True)


def test_without_javascript_an_open_pack_still_searches_and_opens_sections(
    browser: Any, live_url: str
) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        tab = context.new_page()
        tab.goto(f"{live_url}/packs/ep-mcp-docs/")
        tab.fill("#q", GOLDEN_QUERY)
        tab.click("form#search button[type=submit]")
        first = tab.locator("#hits li.hit").first
        assert GOLDEN_TOP in first.locator(".where code").inner_text()
        first.locator("a.open").click()  # a plain link to the read page
        assert tab.locator("section.focus").is_visible()
        assert "/packs/ep-mcp-docs/read?id=" in tab.url
    finally:
        context.close()


IN_VIEW = """(sel) => {
  const el = document.querySelector(sel);
  const box = el.getBoundingClientRect();
  const panel = el.closest('.reader-panel');
  const view = panel ? panel.getBoundingClientRect() : {top: 0, bottom: innerHeight};
  return {top: box.top, viewTop: Math.max(view.top, 0),
          viewBottom: Math.min(view.bottom, innerHeight)};
}"""


def _in_view(tab: Any, sel: str) -> bool:
    """The top of ``sel`` is on screen (inside its scrolling reader panel, if in one)."""
    found = tab.evaluate(IN_VIEW, sel)
    return bool(found["viewTop"] - 1 <= found["top"] < found["viewBottom"] - 20)


def test_open_in_context_scrolls_to_the_hits_own_section_below_a_long_neighbour(
    browser: Any, live_url: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 560})
    context.set_default_timeout(15_000)
    try:
        tab = context.new_page()
        search(tab, live_url, "ep-mcp-docs", GOLDEN_QUERY)
        hit = tab.locator("#hits li.hit").filter(has_text="reference/configuration.md:184")
        link = hit.locator("a.open")
        link.click()  # its section (reranker) follows the long `retrieval` section
        tab.locator("#reader section.focus").wait_for()
        assert "reranker" in tab.locator("#reader section.focus p.where").inner_text()
        tab.wait_for_function("() => document.querySelector('#reader').scrollTop > 0")
        assert _in_view(tab, "#reader section.focus")
        href = link.get_attribute("href")
        assert href is not None and href.endswith("#hit")
        tab.goto(live_url + href)  # the read page itself (also the link without JavaScript)
        tab.locator("section.focus").wait_for()
        assert _in_view(tab, "section.focus")
    finally:
        context.close()
