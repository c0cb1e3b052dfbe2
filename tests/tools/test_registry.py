"""The tool registry's argument checks: schema violations and invalid text, in one short line."""

from __future__ import annotations

import pytest

from ep_mcp.config.model import Settings
from ep_mcp.errors import QueryError
from ep_mcp.library.runtime import Library
from ep_mcp.tools.registry import ToolContext, call_tool


def context() -> ToolContext:
    return ToolContext(library=Library(Settings(), {}, None), hub=None)


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "\ud800"},
        {"query": "ok", "tags": ["fine", "bad\udfff"]},
        {"query": "ok", "pack": "x\ud83d"},
    ],
)
def test_unpaired_surrogates_in_any_argument_are_refused(arguments: dict[str, object]) -> None:
    with pytest.raises(QueryError, match="unpaired surrogate"):
        call_tool(context(), "ep_search", arguments)


def test_a_huge_argument_is_not_echoed_in_the_error() -> None:
    with pytest.raises(QueryError) as info:
        call_tool(context(), "ep_search", {"query": "a" * 900_000})
    assert len(str(info.value)) < 200 and "longer than" in str(info.value)
