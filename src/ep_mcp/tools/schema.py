"""JSON-schema shapes shared by the tool modules: closed input objects, open output objects."""

from __future__ import annotations

from collections.abc import Mapping

from ep_mcp.errors import QueryError
from ep_mcp.json_types import JsonObject

JsonSchema = JsonObject  # a JSON schema is a JSON object (one alias: json_types.JsonObject)


def input_object(properties: Mapping[str, object], required: tuple[str, ...] = ()) -> JsonSchema:
    """A tool's arguments: exactly these properties (an unknown key is an error)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def output_object(properties: Mapping[str, object], required: tuple[str, ...] = ()) -> JsonSchema:
    """A result: at least the ``required`` properties; more may be added without a break."""
    return {"type": "object", "properties": dict(properties), "required": list(required)}


def arg_str(args: Mapping[str, object], key: str) -> str:
    """A required string argument (the input schema has already checked its type)."""
    return str(args[key])


def arg_opt_str(args: Mapping[str, object], key: str) -> str | None:
    """An optional string argument; absent or empty is None."""
    value = args.get(key)
    return str(value) if value else None


def arg_int(args: Mapping[str, object], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, int | float):
        return int(value)
    raise QueryError(f"`{key}` must be an integer")


def arg_bool(args: Mapping[str, object], key: str, default: bool = False) -> bool:
    return bool(args.get(key, default))


def arg_opt_bool(args: Mapping[str, object], key: str) -> bool | None:
    value = args.get(key)
    return None if value is None else bool(value)


def arg_strs(args: Mapping[str, object], key: str) -> tuple[str, ...] | None:
    """An optional list of strings; absent is None."""
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    raise QueryError(f"`{key}` must be a list of strings")
