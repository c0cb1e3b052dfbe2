"""The one name for a JSON object as results become JSON at the adapters."""

from __future__ import annotations

import dataclasses
from typing import Any

JsonObject = dict[str, object]  # a result ready for json.dumps (tools, hub, reading)


def fields_dict(record: Any) -> JsonObject:
    """A flat record's fields by name, in declaration order (its ``to_dict`` where every field
    is already a JSON value): one shallow read, no copying of nested values."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
