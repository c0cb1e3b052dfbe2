"""Tools by name: a JSON schema for input and output, and a handler over the core.

Adapters (the MCP server, `/search`, the workbench, the CLI) list tools and call them through
here, so a tool is written once. Handlers take a `ToolContext` and the validated arguments and
return the library's own record (a dataclass with ``to_dict``): `call_tool_record` hands it
back as it is (the workbench and the CLI render it), `call_tool` as JSON-ready structured
content (MCP, `/search`). They raise `EpMcpError` subclasses for bad input, which every
adapter renders its own way (MCP `isError`, HTTP error envelope, an HTML error, CLI exit 1).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ep_mcp.errors import NotFoundError, QueryError
from ep_mcp.json_types import JsonObject
from ep_mcp.retrieval.types import BLANK_QUERY, out_of_range
from ep_mcp.tools.quickschema import conforms

if TYPE_CHECKING:  # annotations only: this module stays import-light
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

    from ep_mcp.hub.hub import SkillHub
    from ep_mcp.library.runtime import Library

Arguments = Mapping[str, object]  # validated against the tool's input schema


@dataclass
class ToolContext:
    """What handlers may use: the served packs and, when enabled, the skills hub."""

    library: Library
    hub: SkillHub | None = None  # when the skill tools are enabled
    # adapter-only inputs outside the tool schema (POST /search: "vector"; the CLI and the
    # workbench: "explain"; the workbench: "centre", a read with the sections around it)
    extras: dict[str, Any] = field(default_factory=dict)


class ToolResult(Protocol):
    """What a handler returns: a record that knows its JSON."""

    def to_dict(self) -> JsonObject: ...


Handler = Callable[[ToolContext, Arguments], ToolResult]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, object]
    handler: Handler
    output_schema: Mapping[str, object] | None = None
    title: str | None = None
    group: str = "pack"  # "pack" tools need packs; "skills" tools need the hub
    open_world: bool = False  # reaches outside the served packs (GitHub search)


_REGISTRY: dict[str, ToolSpec] = {}


def register(spec: ToolSpec) -> ToolSpec:
    _REGISTRY[spec.name] = spec
    return spec


def tools(group: str | None = None) -> list[ToolSpec]:
    _load_builtins()
    return [t for t in _REGISTRY.values() if group is None or t.group == group]


def get_tool(name: str) -> ToolSpec:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise NotFoundError(
            f"unknown tool '{name}' — available: {', '.join(sorted(_REGISTRY))}"
        ) from None


_VALIDATORS: dict[int, tuple[ToolSpec, Validator]] = {}


def validator_for(spec: ToolSpec) -> Validator:
    """The spec's Draft 2020-12 validator, built once per spec (building one costs more
    than validating a call)."""
    cached = _VALIDATORS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    import jsonschema

    validator: Validator = jsonschema.Draft202012Validator(spec.input_schema)
    _VALIDATORS[id(spec)] = (spec, validator)
    return validator


MAX_ERROR_CHARS = 200  # a validation message never echoes more of the caller's input


def _describe(err: ValidationError) -> str:
    """One short line for a schema violation, without repeating a large offending value."""
    kind, limit = err.validator, err.validator_value
    if kind == "maxLength":
        return f"is longer than {limit} characters"
    if kind == "maxItems":
        return f"has more than {limit} items"
    if kind == "type":
        return f"must be of type {limit}"
    message = str(err.message)
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS] + "…"


def validate_arguments(spec: ToolSpec, arguments: Arguments) -> None:
    """Check arguments against the tool's input schema; one readable line on failure. A call
    certainly valid is known without jsonschema (`quickschema`: a restart's first answer does
    not import it); any other is judged, and its error said, by jsonschema."""
    instance: Any = dict(arguments)  # jsonschema's stubs want JSON-typed values, not object
    errors: list[ValidationError] = []
    if not conforms(spec.input_schema, instance):
        validator = validator_for(spec)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.path) or "arguments"
        bounds = err.schema if isinstance(err.schema, Mapping) else {}
        lo, hi = bounds.get("minimum"), bounds.get("maximum")
        if spec.name == "ep_search" and where == "query" and err.instance == "":
            raise QueryError(BLANK_QUERY)  # the words a query of spaces gets, at every door
        if err.validator in ("minimum", "maximum") and isinstance(lo, int) and isinstance(hi, int):
            # the wording /search and the CLI give for their own count (`n`, -n)
            raise QueryError(f"{spec.name}: {out_of_range(where, lo, hi, err.instance)}")
        raise QueryError(f"{spec.name}: {where}: {_describe(err)}")
    bad = _unencodable(arguments)
    if bad is not None:
        raise QueryError(
            f"{spec.name}: {bad}: contains an unpaired surrogate (e.g. \\ud800) — "
            "send valid Unicode text"
        )


def _unencodable(value: object, where: str = "arguments") -> str | None:
    """The path of the first string that is not valid Unicode (lone surrogates), if any."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, Mapping):
        items: Iterable[tuple[object, object]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _unencodable(key, where) or _unencodable(
            item, str(key) if where == "arguments" else f"{where}.{key}"
        )
        if found is not None:
            return found
    return None


def call_tool_record(ctx: ToolContext, name: str, arguments: Arguments | None) -> ToolResult:
    """Validate and run one tool; its record as the handler made it. A pack tool never reads
    an index the start-up build has not finished (the serving adapters wait for it first:
    `serve.mcp_server.until_ready`)."""
    spec = get_tool(name)
    args = dict(arguments or {})
    validate_arguments(spec, args)
    if spec.group == "pack":
        ctx.library.check_ready(f"call {name}")
    return spec.handler(ctx, args)


def call_tool(ctx: ToolContext, name: str, arguments: Arguments | None) -> JsonObject:
    """`call_tool_record`, the record as JSON-ready structured content."""
    return call_tool_record(ctx, name, arguments).to_dict()


_loaded = False
_load_lock = threading.Lock()


def _load_builtins() -> None:
    """Import the modules that register the built-in tools (once, even under concurrency)."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        for module in ("ep_mcp.tools.pack_tools", "ep_mcp.tools.skill_tools"):
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
        _loaded = True
