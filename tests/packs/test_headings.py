"""Headings read from a flat body without the CommonMark parse are the parse's headings."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ep_mcp.packs.headings import _flat_headings, _parsed_headings, is_flat

_LINE_STARTS = [
    "",
    " ",
    "  ",
    "   ",
    "    ",
    " #",
    "   #",
    " x",
    "#",
    "##",
    "###",
    "####",
    "######",
    "#######",
    "a",
    "É",
    "(",
    "!",
    "\\",
]
_LINE_PARTS = [" ", "\t", "#", "##", " #", " ##", "x", "Title", "é", "\\#", "`", "*", "  "]

lines = st.builds(
    lambda start, parts: start + "".join(parts),
    st.sampled_from(_LINE_STARTS),
    st.lists(st.sampled_from(_LINE_PARTS), max_size=6),
)
bodies = st.lists(lines, max_size=12).map("\n".join) | st.lists(lines, max_size=12).map(
    lambda ls: "\n".join(ls) + "\n"
)


@settings(max_examples=500, deadline=None)
@given(bodies, st.integers(min_value=0, max_value=30))
def test_a_flat_body_has_the_headings_and_titles_the_parse_finds(body: str, offset: int) -> None:
    if not is_flat(body):
        return
    assert _flat_headings(body, offset) == _parsed_headings(body, offset)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="#  \t\nab-=>*`~<[1\r\x0c\u2028", max_size=60))
def test_any_body_the_flat_reading_takes_is_read_like_the_parse(body: str) -> None:
    if not is_flat(body):
        return
    assert _flat_headings(body, 0) == _parsed_headings(body, 0)


def test_bodies_with_structure_go_to_the_parse() -> None:
    for body in (
        "- # in a list\n",
        "> # quoted\n",
        "```\n# in a fence\n```\n",
        "    # indented code\n",
        "Title\n=====\n",
        "Title\n---\n",
        "<div>\n# html\n</div>\n",
        "[ref]: /url\n",
        "1. # numbered\n",
        "a\rb\n# h\n",
        "a\x0cb\n# h\n",
    ):
        assert not is_flat(body), body


def test_the_abstracts_of_a_beir_set_are_flat_and_read_alike() -> None:
    body = "# The title: a study (2010) #\n\nText with # signs, [brackets] and 2010 numbers.\n"
    assert is_flat(body)
    assert _flat_headings(body, 0) == _parsed_headings(body, 0)
    assert [h.title for h in _flat_headings(body, 0)] == ["The title: a study (2010)"]


def test_serving_and_flat_bodies_do_not_import_the_markdown_parser() -> None:
    # a restart with nothing changed parses no file: the parser's import (~50 modules) waits
    code = (
        "import sys\n"
        "import ep_mcp.library.opening, ep_mcp.serve.app, ep_mcp.serve.mcp.server\n"
        "from ep_mcp.packs.headings import _flat_headings\n"
        "assert _flat_headings('# Title\\n\\ntext\\n', 0)[0].title == 'Title'\n"
        "print('markdown_it' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
