"""The pack tools: ep_search, ep_read, ep_list_topics, ep_graph_traverse (SPEC §5).

Each is a JSON schema plus a handler over the core (`PackRuntime.search`, `ep_mcp.packs.reading`)
returning the core's record; the MCP server, `/search`, the workbench and the CLI's `search`
reach them through the registry. Arguments are checked by `SearchRequest.from_args` and
`ReadRequest.from_args`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ep_mcp.errors import QueryError
from ep_mcp.packs.fragments import MAX_PATH_CHARS
from ep_mcp.retrieval.lexical import MAX_QUERY_CHARS
from ep_mcp.retrieval.types import SearchRequest, SearchResult
from ep_mcp.tools.registry import Arguments, ToolContext, ToolSpec, register
from ep_mcp.tools.schema import (
    JsonSchema,
    arg_int,
    arg_opt_str,
    arg_str,
    arg_strs,
    input_object,
    output_object,
)

if TYPE_CHECKING:  # the reading modules are imported by their handlers
    from ep_mcp.library.runtime import PackRuntime
    from ep_mcp.packs.reading_results import DocumentRead, Topics, Traversal
    from ep_mcp.retrieval.merge import MergedResult

PACK_PROPERTY: dict[str, object] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": "Slug of the pack to use. Required only when several packs are served "
    "(see ep://{slug}/manifest or GET /packs); ep_search without it searches them all.",
}

_PATH = {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS}
_TAGS = {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 50}


def _schema(properties: Mapping[str, object], required: tuple[str, ...] = ()) -> JsonSchema:
    """A pack tool's arguments: ``properties`` plus the optional ``pack``."""
    return input_object({**properties, "pack": PACK_PROPERTY}, required)


SEARCH_INPUT = _schema(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for, in plain words (no query syntax needed).",
        },
        "type": {
            "type": "string",
            "maxLength": 200,
            "description": "Only hits whose frontmatter type is this (e.g. concept, howto).",
        },
        "tags": {**_TAGS, "description": "Only hits carrying at least one of these tags."},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "default": 10,
            "description": "How many hits to return (1-50).",
        },
        "reconstruct": {
            "type": "boolean",
            "default": False,
            "description": "Add exact provenance: fragment id, line range, byte "
            "offsets, original markdown and a staleness check.",
        },
        "include_low_confidence": {
            "type": "boolean",
            "default": False,
            "description": "Return the hits even when the pack does not appear to cover the "
            "question (`answerable` below the server's min_answerable).",
        },
        "rerank": {
            "type": "boolean",
            "default": True,
            "description": "Let the server's reranker (when one is configured) reorder the "
            "top hits; false skips it for this query.",
        },
    },
    ("query",),
)

_HIT = output_object(
    {
        "id": {"type": "string"},
        "source_file": {"type": "string"},
        "title": {"type": "string"},
        "type": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "heading_path": {"type": "array", "items": {"type": "string"}},
        "text": {"type": "string"},
        "score": {"type": "number"},
        "confidence": {"type": "number"},
        "content_hash": {"type": "string"},
        "line_range": {"type": "array", "items": {"type": "integer"}},
        "graph_expanded": {"type": "boolean"},
        "requires_expanded": {"type": "boolean"},
        "pack": {"type": "string"},
        "pack_score": {"type": "number"},
    },
    ("id", "source_file", "text", "score"),
)

SEARCH_OUTPUT = output_object(
    {
        "query": {"type": "string"},
        "pack": {"type": "string"},
        "packs": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string"},
        "took_ms": {"type": "number"},
        "answerable": {"type": "number"},
        "covered": {"type": "boolean"},
        "results": {"type": "array", "items": _HIT},
    },
    ("query", "mode", "results"),
)

READ_INPUT = _schema(
    {
        "path": {
            **_PATH,
            "description": "Pack-relative file path, e.g. concepts/x.md "
            "(navigation files such as _index.md are readable too).",
        },
        "id": {
            **_PATH,
            "description": "Frontmatter id of the atom, e.g. pack/concepts/x, or a "
            "`fragment_id` from ep_search (opens that section).",
        },
        "section": {
            "type": "string",
            "minLength": 1,
            "maxLength": 500,
            "description": "Return only this section: a heading ('Ports') or a heading "
            "path ('Routing > Setup > Ports').",
        },
        "neighbors": {
            "type": "boolean",
            "default": False,
            "description": "With `section`: also return the sections just before and after it.",
        },
        "reconstruct": {
            "type": "boolean",
            "default": False,
            "description": "Add byte offsets, a span hash and a fragment id.",
        },
    }
)

_SPAN = output_object(
    {"text": {"type": "string"}, "line_range": {"type": "array", "items": {"type": "integer"}}},
    ("text", "line_range"),
)

READ_OUTPUT = output_object(
    {
        "pack": {"type": "string"},
        "path": {"type": "string"},
        "id": {"type": ["string", "null"]},
        "title": {"type": "string"},
        "type": {"type": "string"},
        "text": {"type": "string"},
        "line_range": {"type": "array", "items": {"type": "integer"}},
        "section": {"type": ["array", "null"], "items": {"type": "string"}},
        "requires_resolved": {"type": "array", "items": {"type": "string"}},
        "neighbors": {"type": "array", "items": _SPAN},
    },
    ("pack", "path", "text", "line_range"),
)

TOPICS_INPUT = _schema(
    {
        "type": {
            "type": "string",
            "maxLength": 200,
            "description": "Only files of this frontmatter type.",
        }
    }
)

TOPICS_OUTPUT = output_object(
    {
        "pack": {"type": "string"},
        "files": {"type": "integer"},
        "topics": {
            "type": "array",
            "items": output_object(
                {
                    "type": {"type": "string"},
                    "count": {"type": "integer"},
                    "files": {"type": "array", "items": {"type": "object"}},
                },
                ("type", "count", "files"),
            ),
        },
    },
    ("pack", "files", "topics"),
)

GRAPH_INPUT = _schema(
    {
        "file_path": {**_PATH, "description": "Start from this pack-relative file."},
        "node_id": {**_PATH, "description": "Or start from this node / frontmatter id."},
        "depth": {
            "type": "integer",
            "minimum": 1,
            "maximum": 3,
            "default": 1,
            "description": "How many hops to follow (1-3).",
        },
        "edge_kinds": {
            **_TAGS,
            "description": "Only these edge kinds (e.g. wikilink, related, "
            "or a _graph.yaml kind such as requires).",
        },
    }
)

GRAPH_OUTPUT = output_object(
    {
        "pack": {"type": "string"},
        "start": {"type": "string"},
        "depth": {"type": "integer"},
        "nodes": {"type": "array", "items": {"type": "object"}},
        "edges": {
            "type": "array",
            "items": output_object(
                {
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                    "kind": {"type": "string"},
                },
                ("source", "target", "kind"),
            ),
        },
    },
    ("pack", "start", "nodes", "edges"),
)


def _runtime(ctx: ToolContext, args: Arguments) -> PackRuntime:
    return ctx.library.get(arg_opt_str(args, "pack") if "pack" in args else None)


def search_handler(ctx: ToolContext, args: Arguments) -> SearchResult | MergedResult:
    request = SearchRequest.from_args(
        args,
        vector=ctx.extras.get("vector"),  # POST /search only; not in the MCP schema
        explain=bool(ctx.extras.get("explain", False)),  # the CLI's --explain, the workbench
    )
    if "pack" not in args and len(ctx.library.runtimes) > 1:  # every pack the caller sees
        return ctx.library.search_all(request)
    return _runtime(ctx, args).search(request)


def read_handler(ctx: ToolContext, args: Arguments) -> DocumentRead:
    from ep_mcp.packs.reading import ReadRequest  # on the first read: a search needs none of it

    request = ReadRequest.from_args(args, centre=bool(ctx.extras.get("centre", False)))
    return request.read(_runtime(ctx, args).pack)


def topics_handler(ctx: ToolContext, args: Arguments) -> Topics:
    from ep_mcp.packs.reading import list_topics  # on first use, as in read_handler

    doc_type = arg_str(args, "type") if "type" in args else None
    return list_topics(_runtime(ctx, args).pack, doc_type)


def graph_handler(ctx: ToolContext, args: Arguments) -> Traversal:
    if ("file_path" in args) == ("node_id" in args):
        raise QueryError("ep_graph_traverse: pass exactly one of `file_path` or `node_id`")
    from ep_mcp.packs.reading import traverse  # on first use, as in read_handler

    rt = _runtime(ctx, args)
    start = str(args.get("file_path") or args.get("node_id"))
    kinds = arg_strs(args, "edge_kinds")
    return traverse(rt.pack, start, arg_int(args, "depth", 1), kinds)


register(
    ToolSpec(
        name="ep_search",
        title="Search the pack",
        description=(
            "Hybrid (keyword + semantic) search over the pack's markdown atoms. Returns the best "
            "sections with their file, heading path, score and text. Then read the whole atom "
            "behind a hit with ep_read, follow its `requires`, and stop when you can answer. "
            "An empty result means the pack does not cover the question: say so, do not guess. "
            "With several packs served, leave out `pack` to search them all: one ranking, "
            "each hit naming its `pack`."
        ),
        input_schema=SEARCH_INPUT,
        output_schema=SEARCH_OUTPUT,
        handler=search_handler,
    )
)

register(
    ToolSpec(
        name="ep_read",
        title="Read an atom",
        description=(
            "Read one file of the pack exactly as written (frontmatter included), by `path` or "
            "frontmatter `id`; or only one `section` (a heading or 'A > B' heading path), with "
            "`neighbors` for the sections around it. Navigation files (_index.md) are readable."
        ),
        input_schema=READ_INPUT,
        output_schema=READ_OUTPUT,
        handler=read_handler,
    )
)

register(
    ToolSpec(
        name="ep_list_topics",
        title="List the pack's topics",
        description=(
            "The pack's structure: every file grouped by frontmatter type (concept, howto, ...), "
            "with title, id and whether it is a navigation file. Filter with `type`."
        ),
        input_schema=TOPICS_INPUT,
        output_schema=TOPICS_OUTPUT,
        handler=topics_handler,
    )
)

register(
    ToolSpec(
        name="ep_graph_traverse",
        title="Walk the link graph",
        description=(
            "Files linked to a start file or node id through _graph.yaml edges, wikilinks and "
            "related: entries, in both directions, up to `depth` hops (1-3), optionally only "
            "some `edge_kinds`."
        ),
        input_schema=GRAPH_INPUT,
        output_schema=GRAPH_OUTPUT,
        handler=graph_handler,
    )
)
