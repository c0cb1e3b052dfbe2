"""`GET /openapi.json`: an OpenAPI 3.1 description of `/search`, `/health` and `/packs`.

Generated from the definitions the handlers use — `search_api.SEARCH_PARAMS` (which take
their JSON schemas from `ep_search`'s input schema) and `ep_search`'s output schema — so the
contract cannot drift from the code. Error statuses share the one error envelope.
"""

from __future__ import annotations

from ep_mcp.json_types import JsonObject
from ep_mcp.serve.http.middleware import CODES
from ep_mcp.serve.http.search_api import MAX_VECTOR_DIM, QUERY_PARAM, SEARCH_PARAMS
from ep_mcp.tools.pack_tools import SEARCH_OUTPUT

ERROR_STATUSES = (400, 401, 403, 404, 413, 422, 429, 503)
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": sorted(set(CODES.values()))},
                "message": {"type": "string"},
            },
        }
    },
}
HEALTH = {
    "type": "object",
    "required": ["status", "packs"],
    "properties": {
        "status": {
            "type": "string",
            "description": "ok, degraded (answering; see reasons) or error",
        },
        "packs": {"type": "integer", "minimum": 0},
        "reasons": {
            "type": "array",
            "items": {"type": "string"},
            "description": "With status degraded: what degrades the answers, one line each "
            "(a disk refusing writes, vectors awaiting repair)",
        },
        "index": {
            "type": "object",
            "description": "The index build over all packs: phase (ready, embedding, lexical, "
            "lexical-only), mode (hybrid or lexical), chunks, embedded, pending",
            "properties": {
                "phase": {"type": "string"},
                "mode": {"type": "string"},
                "chunks": {"type": "integer", "minimum": 0},
                "embedded": {"type": "integer", "minimum": 0},
                "pending": {"type": "integer", "minimum": 0},
            },
        },
    },
}
PACKS = {
    "type": "object",
    "required": ["packs"],
    "properties": {
        "packs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["slug", "name", "kind", "files", "auth", "mcp"],
                "properties": {
                    "slug": {"type": "string"},
                    "name": {"type": "string"},
                    "kind": {"type": "string"},
                    "files": {"type": "integer"},
                    "auth": {"type": "string", "enum": ["api_key", "oauth", "none"]},
                    "mcp": {"type": "string"},
                },
            },
        }
    },
}


def _json(schema: JsonObject | str, description: str) -> JsonObject:
    ref = {"$ref": f"#/components/schemas/{schema}"} if isinstance(schema, str) else schema
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def _responses(ok: JsonObject, *errors: int) -> JsonObject:
    """``ok`` as the 200 response, then a reference to the error envelope per status."""
    refs = {str(s): {"$ref": f"#/components/responses/{CODES[s]}"} for s in errors}
    return {"200": ok, **refs}


def _search_body() -> JsonObject:
    props: JsonObject = {
        QUERY_PARAM.name: {**QUERY_PARAM.schema, "description": QUERY_PARAM.description},
        "query": {**QUERY_PARAM.schema, "description": "Same as `q`."},
    }
    for p in SEARCH_PARAMS:
        schema = dict(p.schema)
        if p.name == "tags":
            schema = {"oneOf": [schema, {"type": "array", "items": {"type": "string"}}]}
        props[p.name] = {**schema, "description": p.description}
    props["vector"] = {
        "type": "array",
        "items": {"type": "number"},
        "minItems": 1,
        "maxItems": MAX_VECTOR_DIM,
        "description": "A query embedding of the pack's dimension (skips embedding `q`).",
    }
    return {"type": "object", "properties": props}


def openapi_document(version: str) -> JsonObject:
    """The OpenAPI 3.1 document of the plain HTTP API."""

    params = [
        {
            "name": p.name,
            "in": "query",
            "required": p is QUERY_PARAM,
            "description": p.description,
            "schema": dict(p.schema),
        }
        for p in (QUERY_PARAM, *SEARCH_PARAMS)
    ]
    searched = _responses(
        _json("SearchResult", "Hits, best first, with the mode that answered."), *ERROR_STATUSES
    )
    security: list[dict[str, list[str]]] = [{}, {"bearer": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ep-mcp HTTP API",
            "version": version,
            "description": "Hybrid search over the served packs. Packs with API keys need "
            "`Authorization: Bearer <key>`; MCP is served at /mcp and /packs/{slug}/mcp.",
        },
        "paths": {
            "/search": {
                "get": {
                    "operationId": "searchGet",
                    "summary": "Search a pack",
                    "parameters": params,
                    "security": security,
                    "responses": searched,
                },
                "post": {
                    "operationId": "searchPost",
                    "summary": "Search a pack (JSON body, optional query vector)",
                    "security": security,
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _search_body()}},
                    },
                    "responses": searched,
                },
            },
            "/health": {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness and the number of packs served",
                    "responses": _responses(_json("Health", "The service answers."), 429),
                }
            },
            "/packs": {
                "get": {
                    "operationId": "packs",
                    "summary": "The packs this caller may see",
                    "security": security,
                    "responses": _responses(_json("Packs", "Visible packs."), 429),
                }
            },
        },
        "components": {
            "schemas": {
                "SearchResult": SEARCH_OUTPUT,
                "Error": ERROR,
                "Health": HEALTH,
                "Packs": PACKS,
            },
            "responses": {
                CODES[s]: _json("Error", f"{s} {CODES[s]}: the error envelope")
                for s in ERROR_STATUSES
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
