"""Pack markdown to HTML for the workbench, inert by construction.

CommonMark with raw HTML disabled (`<script>`, `onerror=`, `</textarea>` come out as text),
markdown-it's link check (no `javascript:`, `vbscript:`, `file:` or `data:` links), images
shown as their alt text (a page never fetches a pack's image from anywhere), and every link
marked `rel="noopener noreferrer nofollow"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

LINK_REL = "noopener noreferrer nofollow"


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = "".join(c.content for c in token.children or []) or token.content
    return f'<span class="img-alt">[image: {escape(alt)}]</span>'


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", LINK_REL)
    return str(self.renderToken(tokens, idx, options, env))


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str) -> str:
    """Safe HTML for a span of pack markdown."""
    return str(_parser().render(text))
