"""A valid tool call is recognised without jsonschema, and never one jsonschema refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ep_mcp.tools.quickschema import conforms
from ep_mcp.tools.registry import tools

SCHEMAS = [spec.input_schema for spec in tools()]

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-100, 3000)
    | st.floats(allow_nan=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=60) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=80,
)


def arguments_for(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-formed calls (each property drawn from any JSON value or a likely one)."""
    names = [*schema.get("properties", {}), "unknown"]
    likely = st.one_of(
        st.text(max_size=2500), st.integers(-5, 60), st.booleans(), st.lists(st.text(), max_size=3)
    )
    return st.dictionaries(st.sampled_from(names), likely | VALUES, max_size=len(names))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_call_said_valid_is_valid_for_jsonschema(data: st.DataObject) -> None:
    schema = data.draw(st.sampled_from(SCHEMAS))
    args = data.draw(arguments_for(schema))
    if conforms(schema, args):
        jsonschema.Draft202012Validator(schema).validate(args)


@pytest.mark.parametrize(
    "args",
    [
        {"query": "zigbee"},
        {"query": "x" * 2000, "max_results": 50, "tags": ["a"] * 50, "rerank": False},
        {"query": "é", "type": "howto", "pack": "p", "reconstruct": True},
    ],
)
def test_ordinary_searches_are_known_valid_without_jsonschema(args: dict[str, Any]) -> None:
    (search,) = [spec for spec in tools() if spec.name == "ep_search"]
    assert conforms(search.input_schema, args)


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"query": ""},
        {"query": "x" * 2001},
        {"query": "q", "max_results": 0},
        {"query": "q", "max_results": 51},
        {"query": "q", "max_results": True},
        {"query": "q", "max_results": 5.0},  # jsonschema's call, not ours
        {"query": "q", "tags": ["a"] * 51},
        {"query": "q", "tags": [1]},
        {"query": "q", "other": 1},
        {"query": 3},
    ],
)
def test_anything_else_is_left_to_jsonschema(args: dict[str, Any]) -> None:
    (search,) = [spec for spec in tools() if spec.name == "ep_search"]
    assert not conforms(search.input_schema, args)
    assert not conforms({"type": "object", "pattern": "x"}, {})  # an unknown keyword


def test_a_words_first_answer_does_not_import_jsonschema(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Zebras\n\nZebras graze on the savanna.\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ep_mcp.config.model import PackSettings, Settings\n"
        "from ep_mcp.serve import startup\n"
        "from ep_mcp.tools.registry import ToolContext, call_tool\n"
        f"settings = Settings(packs=(PackSettings(path=Path({str(pack)!r})),), "
        f"home=Path({str(tmp_path / 'home')!r}))\n"
        "library = startup.open_packs(settings, None, build='later')\n"
        "startup.finish(library)\n"
        "got = call_tool(ToolContext(library), 'ep_search', {'query': 'zebras'})\n"
        "assert got['results'][0]['source_file'] == 'a.md', got\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
