"""Hostile YAML against both loaders: crashes, limit bypasses, odd types, fast/slow disagreement."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ep_mcp.packs import yamlsafe
from ep_mcp.packs.frontmatter import parse_frontmatter
from ep_mcp.packs.yamlsafe import (
    C_MAX_BYTES,
    FRONTMATTER_MAX_BYTES,
    FRONTMATTER_MAX_NODES,
    MAX_DEPTH,
    MAX_NODES,
    YamlError,
    YamlLimitError,
    load_yaml,
)


def _slow(text: str) -> tuple[str, Any]:
    """The pure-Python loader's answer: ("ok", value) or ("err", exception type name)."""
    try:
        loader = yamlsafe._BoundedLoader(
            text, max_depth=MAX_DEPTH, max_aliases=100, max_nodes=MAX_NODES
        )
    except yaml.YAMLError as exc:  # the reader checks the characters up front
        return "err", type(exc).__name__
    try:
        return "ok", loader.get_single_data()
    except Exception as exc:
        return "err", type(exc).__name__
    finally:
        loader.dispose()


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types, NaN equal to NaN, mapping order included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict):
        return len(a) == len(b) and all(map(_same, a.items(), b.items()))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _assert_json_like(value: Any) -> None:
    """What every caller may assume: JSON-like values that print, encode and serialise."""
    stack = [value]
    while stack:
        item = stack.pop()
        assert isinstance(item, dict | list | str | int | float | type(None)), type(item)
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
            assert all(isinstance(k, str | int | float | bool | type(None)) for k in item)
        elif isinstance(item, list):
            stack.extend(item)
        str(item).encode("utf-8")  # no lone surrogates, no unprintable ints
    json.dumps(value)


# CPU-seconds of this thread, not the wall clock: the bounds hold beside a CPU hog. The guarded
# work costs at most ~0.8 s on a loaded 2-core machine (the deep frontmatter case; the rest
# ≤ 0.2 s); each input costs several times CPU_BOUND_S without its guard (measured: 6.7 s for
# the frontmatter node limit, 7 s for the number length limit).
CPU_BOUND_S = 1.5


def _time(text: str, **limits: Any) -> tuple[float, Any]:
    start = time.thread_time()
    try:
        value: Any = load_yaml(text, **limits)
    except YamlError as exc:
        value = exc
    return time.thread_time() - start, value


# Exceptions other than YamlError escaped load_yaml (and load_pack) before the fix.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 0x_", {"a": "0x_"}),  # int("", 16): ValueError
        ("a: -0b_", {"a": "-0b_"}),
        ("a: !!int", {"a": ""}),  # IndexError
        ("a: !!float abc", {"a": "abc"}),
        ("a: 1" + ":0" * 200 + ".5", {"a": "1" + ":0" * 200 + ".5"}),  # OverflowError
        (
            "a: 1:30\nb: 0x1F\nc: 1_000\nd: 1.5e+3\ne: 0o17",
            {"a": 90, "b": 31, "c": 1000, "d": 1500.0, "e": "0o17"},
        ),
    ],
)
def test_numbers_python_cannot_convert_stay_strings(text: str, expected: Any) -> None:
    assert load_yaml(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'a: "\\U00110000"',  # chr(0x110000): ValueError
        'a: "\\uD800"',  # a lone surrogate: unencodable, fails in SQLite or JSON later
        'a:\n  b: ["\\udc00"]',
        'a: "\\uDE00\\uD83D"',  # a pair in the wrong order is two lone surrogates
        "a: !!bool maybe",  # KeyError
    ],
)
def test_values_python_cannot_hold_are_yaml_errors(text: str) -> None:
    with pytest.raises(YamlError) as info:
        load_yaml(text)
    assert not isinstance(info.value, YamlLimitError)
    assert "\n" not in str(info.value)


def test_a_json_style_surrogate_pair_is_the_one_character_it_spells() -> None:
    assert load_yaml('a: "Rocket \\uD83D\\uDE80"') == {"a": "Rocket \U0001f680"}
    assert load_yaml('a: ["\\ud83d\\ude00", x]') == {"a": ["\U0001f600", "x"]}


def test_a_bad_escape_in_frontmatter_is_a_problem_not_an_exception() -> None:
    fm = parse_frontmatter('---\ntitle: "\\U00110000"\nx: 0x_\n---\n# T\n')
    assert fm.problem is not None and "escape" in fm.problem and fm.problem_line == 2
    assert parse_frontmatter("---\nx: 0x_\n---\n# T\n").meta == {"x": "0x_"}


# Numbers: quadratic to convert, or too big to print.


@pytest.mark.parametrize(
    "text",
    [
        "a: 1" + ":0" * 250_000,  # sexagesimal 60**250000: quadratic, 7 s CPU (26 s for 1 MB)
        "a: 1" + ":0" * 130_000 + ".5",  # OverflowError
        "a: 0x" + "f" * 500_000,  # fast to convert, but str() of it raises ValueError
        "a: " + "1" * 5000,  # int() refuses past 4300 digits
        "? 0x" + "f" * 5000 + "\n: 1\n",  # as a key, which frontmatter passes to str()
    ],
)
def test_huge_numbers_stay_strings_quickly(text: str) -> None:
    cpu_s, value = _time(text)
    assert cpu_s < CPU_BOUND_S
    _assert_json_like(value)
    assert all(isinstance(k, str) for k in value)


def test_a_huge_int_key_in_frontmatter_is_kept_as_text() -> None:
    key = "0x" + "f" * 5000
    assert parse_frontmatter(f"---\n? {key}\n: 1\n---\nbody\n").meta == {key: 1}


def test_numbers_up_to_the_length_limit_still_convert() -> None:
    digits = "9" * yamlsafe.MAX_NUMBER_CHARS
    assert load_yaml(f"a: {digits}") == {"a": int(digits)}
    assert load_yaml(f"a: {digits}9") == {"a": digits + "9"}


# Types callers do not expect.


@pytest.mark.parametrize(
    "text",
    [
        "a: !!binary aGVsbG8=",  # bytes
        "? !!binary aGVsbG8=\n: 1\n",  # a bytes key: json.dumps refuses it even with default=str
        "a: !!set {x, y}",
        "a: !!omap [x: 1, y: 2]",  # tuples
        "a: !!pairs [x: 1, x: 2]",
    ],
)
def test_non_json_types_are_refused(text: str) -> None:
    with pytest.raises(YamlError, match="not supported — use a plain"):
        load_yaml(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2: a\n~: b\ntrue: c\n1.5: d\n", {2: "a", None: "b", True: "c", 1.5: "d"}),
        ("a: !!timestamp 2026-04-21\nb: !!str 1\n", {"a": "2026-04-21", "b": "1"}),
        ("<<: {a: 1}\nb: 2\n", {"a": 1, "b": 2}),  # a merge without aliases: fast path
        ("x: &x {a: 1}\ny: {<<: *x, b: 2}\n", {"x": {"a": 1}, "y": {"a": 1, "b": 2}}),
    ],
)
def test_plain_yaml_features_keep_working(text: str, expected: Any) -> None:
    assert load_yaml(text) == expected


def test_non_string_frontmatter_keys_become_strings() -> None:
    assert parse_frontmatter("---\n1: a\n~: b\n---\n").meta == {"1": "a", "None": "b"}


@pytest.mark.parametrize("text", ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n", "[{[a]: 1}]"])
def test_unhashable_complex_keys_are_yaml_errors(text: str) -> None:
    with pytest.raises(YamlError, match="unhashable"):
        load_yaml(text)


# Limits on the pure loader: aliases through merges, streams, directives, long tokens.


def test_merge_keys_cannot_expand_past_the_node_limit() -> None:
    base = "a0: &a0 {" + ", ".join(f"k{j}: {j}" for j in range(50)) + "}\n"
    text = base + "".join(
        f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}], x{i}: 1}}\n" for i in range(1, 12)
    )
    cpu_s, value = _time(text)
    assert isinstance(value, YamlLimitError) and "expand" in str(value)
    assert cpu_s < CPU_BOUND_S


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a: 1\n---\nb: 2\n", "another document"),
        ("...\n" * 250_000 + "a: 1", "document end"),
        ("---\n" * 250_000, "another document"),
        ("%YAML 1.1\n%YAML 1.1\n--- a", "duplicate"),
        ("%TAG !e! tag:yaml.org,2002:python/\n--- !e!object:os.system x", "constructor"),
        ("a: !!python/object/apply:os.system [x]", "constructor"),
        ("a: &" + "a" * 100_000 + " [*" + "a" * 100_000 + "]", "recursive"),
        ("a: &é 1\nb: *é\n", "alphabetic or numeric"),  # anchors are ASCII only
    ],
)
def test_streams_directives_and_tags_are_refused(text: str, match: str) -> None:
    cpu_s, value = _time(text, max_bytes=2_000_000)
    assert isinstance(value, YamlError) and match in str(value)
    assert cpu_s < CPU_BOUND_S


@pytest.mark.parametrize(
    "text",
    [
        "- " * 500_000 + "x",  # block nesting through indicators, not indentation
        "? " * 500_000 + "x",
        "-\t" * 500_000 + "x",
        "".join(" " * i + "k:\n" for i in range(1400)),  # through indentation
        "".join(" " * i + "-\n" for i in range(1400)),
        "a:\n" + "".join(" " * i + "- k:\n" for i in range(0, 2800, 2)),
        "{a: " * 70 + "1" + "}" * 70,
        "[a: " * 70 + "1" + "]" * 70,  # single-pair mappings inside flow sequences
        "\r".join(" " * i + "k:" for i in range(1400)),  # unusual line breaks
        "\x85".join(" " * i + "k:" for i in range(1400)),
        "\u2028".join(" " * i + "k:" for i in range(1400)),
    ],
)
def test_deep_nesting_of_every_kind_is_refused_quickly(text: str) -> None:
    cpu_s, value = _time(text, max_bytes=2_000_000)
    assert isinstance(value, YamlError), value
    assert cpu_s < CPU_BOUND_S


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "x" * (FRONTMATTER_MAX_BYTES - 10),  # one long scalar
        'a: "' + "\\x41" * (FRONTMATTER_MAX_BYTES // 4 - 2) + '"',
        "a: |\n" + "  x\n" * (FRONTMATTER_MAX_BYTES // 4 - 2),
        "[" * 63 + "a," * (FRONTMATTER_MAX_BYTES // 2 - 100) + "]" * 63,  # node limit, deep
        "\n" * (FRONTMATTER_MAX_BYTES - 10) + "a: 1",
    ],
)
def test_frontmatter_sized_attacks_are_bounded_in_time(text: str) -> None:
    limits = {"max_bytes": FRONTMATTER_MAX_BYTES, "max_nodes": FRONTMATTER_MAX_NODES}
    cpu_s, value = _time(text, **limits)
    assert cpu_s < CPU_BOUND_S
    if not isinstance(value, YamlError):
        _assert_json_like(value)


# libyaml (the fast path) never nests deeper than max_depth.

_LIBYAML_IN_A_SMALL_STACK = """
import sys, threading
from ep_mcp.packs.yamlsafe import YamlError, load_yaml
texts = [
    "- " * 2047 + "x",
    "? " * 2047 + "x",
    "- - " * 1023 + "x",
    "".join(" " * i + "-\\n" for i in range(90)),
    "[" * 63 + "- " * 1900 + "]" * 63,
]
def run():
    for text in texts:
        try:
            load_yaml(text)
        except YamlError:
            pass
    print("survived")
threading.stack_size(256 * 1024)  # libyaml 0.2.6 segfaulted at ~800 levels here
thread = threading.Thread(target=run)
thread.start()
thread.join()
"""


def test_block_nesting_never_reaches_libyaml_deep_enough_to_crash() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _LIBYAML_IN_A_SMALL_STACK],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0 and "survived" in run.stdout, (run.returncode, run.stderr[-500:])


@pytest.mark.parametrize(
    "text",
    [
        "- " * 2000 + "x",
        "? " * 2000 + "x",
        "- a:\n" + "".join(" " * i + "- b:\n" for i in range(2, 120, 2)),
        "".join(" " * i + "k:\n" for i in range(40)),
        "a: [" + "[" * 40 + "]" * 40 + "]",
    ],
)
def test_the_fast_path_refuses_texts_that_could_nest_too_deep(text: str) -> None:
    assert len(text) <= C_MAX_BYTES
    assert not yamlsafe._fast_ok(text, MAX_DEPTH)


# The fast path agrees with the pure loader, or leaves the text to it.


@pytest.mark.parametrize(
    "text",
    [
        "\n\ufeff",  # libyaml skips a BOM after a line break; PyYAML keeps it
        "a: [1,\n\ufeff2]",
        "|#c",  # libyaml accepts a comment glued to a block scalar indicator
        "a: >#b\n",
        "[y? ]\n",  # libyaml reads `y?` as a plain scalar in flow context
        "{b? }\n",
    ],
)
def test_spellings_the_two_parsers_disagree_on_go_to_the_pure_loader(text: str) -> None:
    assert yamlsafe._load_fast(text, MAX_DEPTH, MAX_NODES) == (False, None)
    outcome, value = _slow(text)
    if outcome == "ok":
        assert _same(load_yaml(text), value)
    else:
        with pytest.raises(YamlError):
            load_yaml(text)


_SCALARS = st.sampled_from(
    [
        *("a", "k k", "1", "-1", "+1", "1_000", "0b101", "0x_1", "0o17", "017", "09", "1:30"),
        *("1.5", "1e3", "-.5", ".5", "1:30.5", "true", "yes", "No", "off", "~", "null", ""),
        *(".inf", ".NaN", "2026-04-21", "2026-04-21 10:00:00", "=", "<<", "'s'", "'it''s'"),
        *('"d\\te"', '"\\x41"', '"\\U0001F600"', '"\\uD800"', '"a\\\nb"', "a b", "a #b", "é"),
        *("x:y", "-x", "?x", "@", "`x", "9" * 101),
    ]
)
_PIECES = st.sampled_from(
    [
        *("- ", "-", "? ", ": ", ":", ",", "[", "]", "{", "}", "#c", " ", "  ", "\t", "\n"),
        *("\r\n", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "|", ">", "|-", ">+", "---"),
        *("...", "'", '"', "\\", "\u00a0", "\x00", "&a", "*a", "!!str", "%"),
    ]
)


@st.composite
def _flow(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return draw(_SCALARS)
    items = draw(st.lists(st.just(0), max_size=3))
    if draw(st.booleans()):
        return "[" + ", ".join(draw(_flow(depth + 1)) for _ in items) + "]"
    sep = draw(st.sampled_from([": ", ":", " : "]))
    return "{" + ", ".join(draw(_SCALARS) + sep + draw(_flow(depth + 1)) for _ in items) + "}"


@st.composite
def _block(draw: st.DrawFn, depth: int = 0, indent: int = 0) -> str:
    kind = draw(st.sampled_from(["scalar", "seq", "map", "flow", "compact"]))
    if depth > 4 or kind == "scalar":
        return " " + draw(_SCALARS) + "\n"
    if kind == "flow":
        return " " + draw(_flow()) + "\n"
    if kind == "compact":
        return " -" + draw(_block(depth + 1, indent + 2))
    step = draw(st.sampled_from([0, 1, 2, 4]))
    pad = " " * (indent + step)
    items = draw(st.lists(st.just(0), min_size=1, max_size=3))
    if kind == "seq":
        return "\n" + "".join(pad + "-" + draw(_block(depth + 1, indent + step + 1)) for _ in items)
    return "\n" + "".join(
        pad + draw(_SCALARS) + ":" + draw(_block(depth + 1, indent + step)) for _ in items
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: b\t", {"a": "b"}),  # a trailing tab, as editors leave them
        ("a:\tb", {"a": "b"}),
        ("title: foo\tbar", {"title": "foo\tbar"}),
        ("- a\t\n- b", ["a", "b"]),
    ],
)
def test_tabs_yaml_allows_are_read_in_frontmatter(text: str, expected: Any) -> None:
    """PyYAML's own scanner refuses them (YAML 1.2 allows them); small texts are read by
    libyaml, which reads them as YAML says — as before the attack review."""
    assert load_yaml(text) == expected
    if isinstance(expected, dict):
        assert parse_frontmatter(f"---\n{text}\n---\n# T\n").meta == expected


@st.composite
def _documents(draw: st.DrawFn) -> str:
    """Small YAML: mostly well formed, sometimes with a stray piece inserted."""
    text = draw(
        st.one_of(
            st.builds(lambda k, v: k + ":" + v, _SCALARS, _block()),
            st.builds(lambda v: "-" + v, _block(indent=1)),
            _flow(),
            st.lists(_PIECES | _SCALARS, max_size=12).map("".join),
        )
    )
    for piece, at in draw(st.lists(st.tuples(_PIECES, st.integers(0, 10_000)), max_size=2)):
        at %= len(text) + 1
        text = text[:at] + piece + text[at:]
    return text


_FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@_FAST
@given(_documents())
def test_the_fast_path_gives_the_pure_loaders_answer_or_none(text: str) -> None:
    took, value = yamlsafe._load_fast(text, MAX_DEPTH, MAX_NODES)
    outcome, expected = _slow(text)
    if took and outcome != "ok":  # only where YAML allows a tab PyYAML's scanner refuses
        assert "\t" in text and expected == "ScannerError", (text, value, expected)
    elif took:
        assert _same(value, expected), (text, value, expected)
    if outcome == "ok":
        _assert_json_like(expected)


@_FAST
@given(_documents())
def test_the_depth_bound_is_never_below_the_real_depth(text: str) -> None:
    outcome, value = _slow(text)
    if outcome == "ok":
        assert yamlsafe._shape(value)[0] <= yamlsafe._depth_bound(text), text


@_FAST
@given(_documents())
def test_load_yaml_returns_json_like_values_or_raises_yaml_error(text: str) -> None:
    try:
        value = load_yaml(text)
    except YamlError:
        return
    _assert_json_like(value)
