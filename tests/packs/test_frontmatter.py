from __future__ import annotations

import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.packs.frontmatter import (
    body_hash,
    body_of,
    first_heading,
    iter_prose_lines,
    parse_frontmatter,
    split_frontmatter,
)

from .conftest import shared


def test_frontmatter_is_split_and_the_body_line_counted() -> None:
    text = "---\ntitle: X\ntags: [a]\n---\n\n# X\nbody\n"
    raw, body_line = split_frontmatter(text)
    assert raw == "title: X\ntags: [a]\n"
    assert body_line == 5
    assert body_of(text, body_line) == "\n# X\nbody\n"


def test_text_without_frontmatter_is_all_body() -> None:
    fm = parse_frontmatter("# Title\n\ntext\n")
    assert fm.meta == {}
    assert fm.body_line == 1
    assert fm.problem is None


def test_unclosed_frontmatter_is_treated_as_body() -> None:
    assert split_frontmatter("---\ntitle: X\nno end\n") == (None, 1)


def test_crlf_frontmatter_is_recognised() -> None:
    fm = parse_frontmatter("---\r\ntitle: X\r\n---\r\nbody\r\n")
    assert fm.meta == {"title": "X"}
    assert fm.body_line == 4


def test_dates_in_frontmatter_stay_strings() -> None:
    fm = parse_frontmatter("---\nverified_at: 2026-04-21\n---\n")
    assert fm.meta == {"verified_at": "2026-04-21"}


def test_frontmatter_that_is_not_a_mapping_is_a_problem_not_a_failure() -> None:
    fm = parse_frontmatter("---\n- a\n- b\n---\nbody\n")
    assert fm.meta == {}
    assert fm.problem is not None and "not a mapping" in fm.problem
    assert not fm.hostile
    assert fm.body_line == 5


def test_invalid_frontmatter_yaml_reports_the_file_line() -> None:
    fm = parse_frontmatter("---\ntitle: ok\ntags: [a, b\n---\nbody\n")
    assert fm.problem is not None and fm.problem.startswith("frontmatter: invalid YAML")
    assert fm.problem_line is not None and fm.problem_line >= 3
    assert not fm.hostile


def test_hostile_frontmatter_is_flagged() -> None:
    fm = parse_frontmatter("---\nx: " + "[" * 30_000 + "\n---\nbody\n")
    assert fm.hostile
    assert fm.meta == {}


def test_body_hash_strips_leading_newlines() -> None:
    expected = "sha256:" + hashlib.sha256(b"# X\n").hexdigest()
    assert body_hash("\n\n# X\n") == expected


def test_body_hash_matches_the_declared_hash_of_a_real_pack_file() -> None:
    path = shared("packs", "solar-diy") / "process/gotchas/common-mistakes.md"
    text = path.read_text(encoding="utf-8")
    fm = parse_frontmatter(text)
    assert body_hash(body_of(text, fm.body_line)) == fm.meta["content_hash"]
    assert fm.meta["content_hash"].startswith("sha256:2aee66")


def test_first_heading_ignores_code_fences_and_deeper_headings() -> None:
    text = "intro\n```\n# not a title\n```\n## Sub\n# Real Title #\n"
    assert first_heading(text) == "Real Title"


def test_first_heading_keeps_a_trailing_hash_that_is_part_of_the_title() -> None:
    assert first_heading("# Learning C#\n") == "Learning C#"
    assert first_heading("no heading\n") is None


def test_frontmatter_with_thousands_of_nodes_is_hostile() -> None:
    fm = parse_frontmatter("---\nx: [" + "a," * 20_000 + "]\n---\nbody\n")
    assert fm.hostile
    assert fm.problem is not None and "YAML nodes" in fm.problem


def test_an_unclosed_block_is_a_problem_at_line_1_and_the_text_stays_body() -> None:
    fm = parse_frontmatter("---\ntitle: X\nno end\n")
    assert fm.problem is not None and fm.problem.startswith("frontmatter opened at line 1 is")
    assert fm.problem_line == 1 and fm.body_line == 1 and fm.meta == {} and not fm.hostile
    assert parse_frontmatter("# Just a body\n\n---\n").problem is None  # a rule, not a block


def _prose_by_the_rule(text: str) -> list[tuple[int, str]]:
    """CommonMark's fence rule read plainly: up to three spaces or tabs, then ``` or ~~~."""
    fence, out = None, []
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.match(r"[ \t]{0,3}(```|~~~)", line)
        if match:
            fence = (
                match.group(1) if fence is None else (None if match.group(1) == fence else fence)
            )
            continue
        if fence is None:
            out.append((number, line))
    return out


_LINE = st.builds(
    lambda indent, marker, rest: indent + marker + rest,
    st.text(alphabet=" \t", max_size=5),
    st.sampled_from(["", "```", "~~~", "``", "~~", "`~`"]),
    st.text(alphabet=" `~#ab[]", max_size=6),
)


@given(st.lists(_LINE, max_size=12))
def test_prose_lines_skip_exactly_the_fenced_ones(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert list(iter_prose_lines(text)) == _prose_by_the_rule(text)
