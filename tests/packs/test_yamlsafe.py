from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.errors import PackError
from ep_mcp.packs.yamlsafe import YamlError, YamlLimitError, load_yaml, load_yaml_file

LAUGHS = "".join(
    f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS


def test_the_342_byte_billion_laughs_bomb_is_rejected() -> None:
    assert len(BOMB) == 342
    with pytest.raises(YamlLimitError, match="expand"):
        load_yaml(BOMB)


def test_too_many_aliases_are_rejected() -> None:
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * 101) + "]\n"
    with pytest.raises(YamlLimitError, match="more than 100 YAML aliases"):
        load_yaml(text)


def test_a_few_aliases_are_fine() -> None:
    assert load_yaml("a: &a [1, 2]\nb: *a\n") == {"a": [1, 2], "b": [1, 2]}


def test_a_recursive_alias_is_rejected() -> None:
    with pytest.raises(YamlLimitError, match="recursive"):
        load_yaml("a: &a [*a]\n")


@pytest.mark.parametrize("depth", [65, 30_000, 250_000])
def test_deep_flow_nesting_is_rejected_without_crashing(depth: int) -> None:
    for text in ("[" * depth + "]" * depth, "[" * depth, "{a: " * depth):
        with pytest.raises(YamlLimitError, match="nested deeper than 64"):
            load_yaml(text, max_bytes=2_000_000)


def test_deep_block_nesting_is_rejected() -> None:
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(100)) + "  " * 100 + "v\n"
    with pytest.raises(YamlLimitError, match="nested deeper"):
        load_yaml(text)


def test_nesting_up_to_the_limit_parses() -> None:
    assert load_yaml("[" * 63 + "]" * 63) is not None


def test_dates_stay_strings() -> None:
    data = load_yaml("verified_at: 2026-04-21\nstamp: 2026-04-21T10:00:00Z\n")
    assert data == {"verified_at": "2026-04-21", "stamp": "2026-04-21T10:00:00Z"}


def test_invalid_yaml_names_the_line() -> None:
    with pytest.raises(YamlError) as info:
        load_yaml("a: 1\nb: [1, 2\nc: 3\n", source="x.yaml")
    assert info.value.line is not None
    assert str(info.value).startswith("x.yaml:")
    assert "\n" not in str(info.value)
    assert not isinstance(info.value, YamlLimitError)


def test_oversized_text_is_rejected() -> None:
    with pytest.raises(YamlLimitError, match="larger than 10 bytes"):
        load_yaml("a: 123456789", max_bytes=10)


def test_yaml_errors_are_pack_errors() -> None:
    assert issubclass(YamlError, PackError)


def test_control_characters_are_a_yaml_error() -> None:
    with pytest.raises(YamlError):
        load_yaml("a: \x00\n")


def test_empty_text_is_none() -> None:
    assert load_yaml("") is None


@given(st.text(max_size=200))
def test_any_text_either_parses_or_raises_yaml_error(text: str) -> None:
    with contextlib.suppress(YamlError):
        load_yaml(text)


def test_load_yaml_file_reads_a_config(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("packs:\n  - path: ./x\n", encoding="utf-8")
    assert load_yaml_file(path) == {"packs": [{"path": "./x"}]}


def test_load_yaml_file_reports_invalid_utf8_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(YamlError, match=r"c\.yaml:2: not valid UTF-8"):
        load_yaml_file(path)


def test_load_yaml_file_reports_bad_yaml_with_the_path(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: [\n", encoding="utf-8")
    with pytest.raises(YamlError, match=str(path)):
        load_yaml_file(path)


def test_load_yaml_file_refuses_huge_files_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: " + "x" * 100, encoding="utf-8")
    with pytest.raises(YamlLimitError, match="larger than 50 bytes"):
        load_yaml_file(path, max_bytes=50)


def test_load_yaml_file_lets_a_missing_file_raise_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        load_yaml_file(tmp_path / "missing.yaml")


def test_documents_with_too_many_nodes_are_rejected_early() -> None:
    text = "[" + "a," * 50_000 + "]"
    with pytest.raises(YamlLimitError, match="more than 1000 YAML nodes"):
        load_yaml(text, max_nodes=1000)


def _frontmatters() -> list[str]:
    from conftest import PACKS  # ../shared/packs, or EP_MCP_SHARED's (read only)

    texts = []
    for root in sorted(PACKS.glob("*")):
        for md in sorted(root.rglob("*.md")):
            text = md.read_text(encoding="utf-8", errors="replace")
            if text.startswith("---\n") and "\n---" in text[4:]:
                texts.append(text[4 : text.index("\n---", 4)])
    return texts


def test_the_libyaml_fast_path_reads_every_real_frontmatter_exactly_as_the_pure_loader() -> None:
    from ep_mcp.packs import yamlsafe

    texts = _frontmatters() or ["title: A\ndate: 2026-04-21\ntags: [a, b]\n"]
    fast = 0
    for text in texts:
        took, value = yamlsafe._load_fast(text, yamlsafe.MAX_DEPTH, yamlsafe.MAX_NODES)
        if took:
            fast += 1
            loader = yamlsafe._BoundedLoader(
                text, max_depth=64, max_aliases=100, max_nodes=yamlsafe.MAX_NODES
            )
            try:
                assert value == loader.get_single_data(), text
            finally:
                loader.dispose()
    assert fast >= len(texts) * 0.9  # the fast path is the common one


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 70 + "]" * 70,  # flow nesting past the limit
        "a: " + "- " * 80 + "x",  # block nesting past the limit, well under C_MAX_BYTES
        "a: &x [1]\nb: *x\n",  # aliases
        "a: !!python/object:os.system x\n",  # tags
        "a: [unclosed\n",  # invalid
    ],
)
def test_texts_the_fast_path_cannot_vouch_for_go_to_the_pure_loader(text: str) -> None:
    from ep_mcp.packs import yamlsafe

    assert yamlsafe._load_fast(text, yamlsafe.MAX_DEPTH, yamlsafe.MAX_NODES)[0] is False
