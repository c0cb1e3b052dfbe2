"""A valid call recognised without importing jsonschema (about 40 modules: referencing,
attrs, format checkers — a tenth of a second before a restart's first answer).

`conforms` understands only the keywords the built-in tools' input schemas use and answers
True only when the arguments certainly satisfy them; anything else — a keyword it does not
know, a float where an integer is wanted, any violation — is False, and the caller then asks
jsonschema, whose message is the one said (`registry.validate_arguments`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ANNOTATIONS = frozenset({"description", "default", "title", "examples"})
KNOWN = ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
}


def conforms(schema: object, value: object) -> bool:
    """Whether ``value`` certainly satisfies ``schema`` (False: not sure, or it does not)."""
    if schema is True:
        return True
    if not isinstance(schema, Mapping) or not KNOWN.issuperset(schema):
        return False
    kind = schema.get("type")
    if kind is not None and not _is_type(kind, value):
        return False
    if isinstance(value, str) and not _string(schema, value):
        return False
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if numeric and not _number(schema, value):  # type: ignore[arg-type]
        return False
    if isinstance(value, list) and not _array(schema, value):
        return False
    return not isinstance(value, dict) or _object(schema, value)


def _is_type(kind: object, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return False  # number, null, a list of types: jsonschema decides


def _string(schema: Mapping[str, object], value: str) -> bool:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if not isinstance(low, int) or len(value) < low:
        return False
    return high is None or (isinstance(high, int) and len(value) <= high)


def _number(schema: Mapping[str, object], value: float) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    for bound in (low, high):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, float))):
            return False
    if isinstance(low, (int, float)) and not value >= low:
        return False
    return not isinstance(high, (int, float)) or value <= high


def _array(schema: Mapping[str, object], value: Sequence[object]) -> bool:
    most = schema.get("maxItems")
    if most is not None and (not isinstance(most, int) or len(value) > most):
        return False
    items = schema.get("items", True)
    return all(conforms(items, item) for item in value)


def _object(schema: Mapping[str, object], value: Mapping[str, object]) -> bool:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return False
    if any(name not in value for name in required):
        return False
    for name, item in value.items():
        sub = properties.get(name, extra)
        if sub is False or not conforms(sub, item):
            return False
    return True
