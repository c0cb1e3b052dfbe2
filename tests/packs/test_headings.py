"""Headings read without the CommonMark parse (flat bodies, scanned structure) are the parse's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PACKS
from ep_mcp.packs.headings import (
    _flat_headings,
    _parsed_headings,
    _scan,
    _scanned_headings,
    find_headings,
    is_flat,
)
from ep_mcp.packs.loader import load_pack

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


_BLOCK_STARTS = [
    *["", " ", "  ", "   ", "    ", "      ", "\t", " \t", "a", "Title", "\\#", "[a]: /u"],
    *["- ", "* ", "+ ", "1. ", "2) ", "> ", ">", "> > ", "  - ", "   1. ", "> - "],
    *["-  ", "-     ", "   * ", "- - -", "* * *", "- --", "--", "  ---"],
    *["#", "##", "#######", " #", "   #", "    #", "===", "---", "- - -", "=", "-"],
    *["```", "````", "~~~", " ```", "  ```", "   ```", "    ```", "- ```", "> ```"],
    *["<!--", " <!--", "  <!--", "-->", "<div>", "<b>", "  <p>"],
]
_BLOCK_PARTS = [" ", "\t", "#", " #", "x", "Title", "`", "```", "~~~", "-->", "<!--", "---", "="]
block_lines = st.builds(
    lambda start, parts: start + "".join(parts),
    st.sampled_from(_BLOCK_STARTS),
    st.lists(st.sampled_from(_BLOCK_PARTS), max_size=4),
)
structured = st.lists(block_lines, max_size=16).map("\n".join) | st.lists(
    block_lines, max_size=16
).map(lambda ls: "\n".join(ls) + "\n")


@settings(max_examples=300, deadline=None)
@given(structured, st.integers(min_value=0, max_value=30))
def test_a_scanned_body_has_the_headings_and_titles_the_parse_finds(body: str, offset: int) -> None:
    # lists, quotes, fences, comments and underlines: the scan vouches for a body or says None
    scanned = _scanned_headings(body, offset)
    if scanned is not None:
        assert scanned == _parsed_headings(body, offset)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="#  \t\nab-=>*`~<!1.[]:", max_size=80))
def test_any_body_the_scan_takes_is_read_like_the_parse(body: str) -> None:
    scanned = _scanned_headings(body, 0)
    if scanned is not None:
        assert scanned == _parsed_headings(body, 0)


def test_fences_comments_and_lists_are_scanned_not_parsed() -> None:
    body = (
        "# Title\n\nText.\n\n```yaml\n# a comment, not a heading\n```\n\n"
        "1. Step\n   ```yaml\n   # also code\n   ```\n2. Next\n\n"
        "<!-- refresh\n# hidden\n-->\n\n## Section ##\n- item\n- item\n\n### Last\n"
    )
    assert not is_flat(body)
    scanned = _scanned_headings(body, 4)
    assert scanned == _parsed_headings(body, 4)
    assert [(h.level, h.title, h.line) for h in scanned or []] == [
        (1, "Title", 5),
        (2, "Section", 23),
        (3, "Last", 27),
    ]


def test_a_stretch_with_a_nested_heading_or_an_underline_is_parsed() -> None:
    body = "# One\n\n- # in a list\n\n## Two\n\nUnder\n---\n\n## Three\n\ntext\n"
    scanned = _scanned_headings(body, 0)
    assert scanned == _parsed_headings(body, 0)
    assert [h.title for h in scanned or []] == ["One", "in a list", "Two", "Under", "Three"]


def test_a_body_where_a_fence_or_html_may_hide_a_heading_goes_to_the_parse_whole() -> None:
    for body in (
        "<div>\n# hidden in html\n</div>\n",
        "  ```\n# in a fence, or after a list item's\n  ```\n",
        "\t```\n# x\n",
        "  <!--\n# x\n-->\n",
    ):
        assert _scanned_headings(body, 0) is None, body


def test_an_underline_after_a_bullet_items_lines_is_no_heading_and_needs_no_parse() -> None:
    # home-assistant's "sources" blocks: a rule closes the list, no paragraph is underlined
    body = "---\nsources:\n  - type: docs\n    url: x\n---\n\n# Title\n\nText\n---\n"
    lines = body.split("\n")
    assert _scan(lines) == ([6], {7})  # the underlined "Text" after the title is parsed
    assert _scanned_headings(body, 0) == _parsed_headings(body, 0)
    assert [h.title for h in _parsed_headings(body, 0)] == ["Title", "Text"]


def test_building_the_packs_headings_never_imports_the_markdown_parser() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ep_mcp.packs.headings import find_headings\n"
        "from ep_mcp.packs.loader import load_pack\n"
        "for name in ('home-assistant', 'blender-3d', 'solar-diy'):\n"
        "    for doc in load_pack(Path(sys.argv[1]) / name).documents:\n"
        "        find_headings(doc)\n"
        "print('markdown_it' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(PACKS)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_the_packs_structured_files_are_scanned_with_the_parse_headings() -> None:
    scanned = 0
    for name in ("home-assistant", "blender-3d", "solar-diy"):
        for doc in load_pack(PACKS / name).documents:
            if is_flat(doc.body):
                continue
            got = _scanned_headings(doc.body, doc.body_line - 1)
            assert got == _parsed_headings(doc.body, doc.body_line - 1), doc.path
            scanned += 1
    assert scanned > 100


# markdown-it 4.3 raises IndexError in its HTML-block rule on this body (a quote in a list)
PARSER_BREAKER = "# Title\n\n\t\n- ---\n*  ===-->\n> - <!-- ===\n> "


def test_a_body_the_parser_fails_on_is_indexed_with_its_atx_headings(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "broken.md").write_text(PARSER_BREAKER, encoding="utf-8")
    (pack / "kilns.md").write_text("# Kilns\n\nFire the kiln slowly.\n", encoding="utf-8")
    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    cli = "from ep_mcp.cli import main; main()"
    args = [sys.executable, "-c", cli, "index", str(pack), "--provider", "none"]
    done = subprocess.run(
        [*args, "--index-dir", str(tmp_path / "idx"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-600:]
    assert "Traceback" not in done.stderr
    (broken,) = [d for d in load_pack(pack).documents if d.path == "broken.md"]
    headings = find_headings(broken)
    assert [(h.level, h.title) for h in headings] == [(1, "Title")]
