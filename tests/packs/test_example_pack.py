"""The bundled example pack — what `ep-mcp serve` shows a new user first — validates clean."""

from __future__ import annotations

from conftest import EXAMPLE_PACK
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.validate import validate_pack


def test_the_example_pack_has_no_validation_problem() -> None:
    problems = validate_pack(load_pack(EXAMPLE_PACK))
    assert not problems, [str(p) for p in problems]
