"""Pack markdown renders inert: raw HTML as text, no script URLs, images as their alt text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.serve.web.markdown import render_markdown


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "</textarea><script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "![pixel](https://evil.example/p.png)",
        '<a href="javascript:alert(1)">x</a>',
        "<svg onload=alert(1)>",
        "[x](<javascript:alert(1)>)",
    ],
)
def test_hostile_markdown_renders_without_tags_or_script_urls(source: str) -> None:
    html = render_markdown(source)
    assert not re.search(r"<(script|img|svg|iframe|textarea)\b", html)
    assert not re.search(r'href="(javascript|vbscript|data):', html, re.I)
    assert not re.search(r"<[^>]+\son\w+=", html)


def test_links_are_kept_with_a_safe_rel_and_images_become_text() -> None:
    html = render_markdown("[docs](https://example.org/a) ![chart](c.png)")
    assert 'href="https://example.org/a" rel="noopener noreferrer nofollow"' in html
    assert "[image: chart]" in html and "<img" not in html


@given(st.text(max_size=300))
def test_no_text_at_all_produces_a_tag_with_an_event_handler(text: str) -> None:
    html = render_markdown(text)
    assert not re.search(r"<[a-z]+\s[^>]*\bon[a-z]+\s*=", html, re.I)
    assert "<script" not in html.lower()
