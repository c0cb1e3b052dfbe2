"""JSON-schema shapes shared by the tool modules: closed input objects, open output objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def input_object(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's arguments: exactly these properties (an unknown key is an error)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def output_object(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A result: at least the ``required`` properties; more may be added without a break."""
    return {"type": "object", "properties": dict(properties), "required": list(required)}
