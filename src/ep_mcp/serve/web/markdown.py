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

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

LINK_REL = "noopener noreferrer nofollow"


# Render rules are bound to the renderer: markdown-it calls them as its own methods.
def _image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    alt = "".join(c.content for c in token.children or []) or token.content
    return f'<span class="img-alt">[image: {escape(alt)}]</span>'


def _link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", LINK_REL)
    return self.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


def render_markdown(text: str) -> str:
    """Safe HTML for a span of pack markdown."""
    return str(_parser().render(text))
