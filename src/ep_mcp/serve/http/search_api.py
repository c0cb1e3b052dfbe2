"""`GET /search` and `POST /search`: parse, authorize, call `ep_search` through the registry.

GET: `?q=&pack=&n=10&type=&tags=a,b&reconstruct=true`. POST: the same keys as JSON (`q` or
`query`), plus an optional caller-supplied `vector` whose dimension must match the pack's.
Malformed input → 400, well-formed but invalid values → 422, unknown pack → 404.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ep_mcp.errors import BadRequest, EpMcpError
from ep_mcp.json_types import JsonObject
from ep_mcp.library.runtime import Library
from ep_mcp.retrieval.types import MAX_RESULTS, out_of_range
from ep_mcp.serve import auth
from ep_mcp.serve.context import ServeContext, run_sync, until_ready
from ep_mcp.serve.oauth_http import Gate
from ep_mcp.tools.pack_tools import SEARCH_INPUT
from ep_mcp.tools.registry import ToolContext, call_tool

logger = logging.getLogger(__name__)

ErrorFn = Callable[..., Response]
MAX_VECTOR_DIM = 8192
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise BadRequest(400, f"`{name}` must be true or false — got {str(value)[:40]!r}")


def _int(value: object, name: str) -> int:
    if isinstance(value, bool):
        raise BadRequest(400, f"`{name}` must be an integer")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text.lstrip("-").isdigit() or len(text) > 9:
        raise BadRequest(400, f"`{name}` must be an integer — got {text[:40]!r}")
    return int(text)


def _count(value: object, name: str) -> int:
    """`n` checked here, so a refusal names `n` and not the tool's `max_results`."""
    n = _int(value, name)
    if not 1 <= n <= MAX_RESULTS:
        raise BadRequest(422, out_of_range(name, 1, MAX_RESULTS, n))
    return n


def _tags(value: object, name: str = "tags") -> list[str]:
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return [t.strip() for t in value if t.strip()]
    if not isinstance(value, str):
        raise BadRequest(
            400,
            f"`{name}` must be comma-separated text or a list of strings — got "
            f"{type(value).__name__}",
        )
    return [t.strip() for t in value.split(",") if t.strip()]


def _check_text(value: str, name: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(
            400, f"`{name}` contains an unpaired surrogate (e.g. \\ud800) — send valid Unicode"
        ) from None
    return value


def _string(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise BadRequest(400, f"`{name}` must be a string")
    return value


@dataclass(frozen=True)
class Param:
    """One search parameter as `/search` takes it (query string or JSON key) and the
    `ep_search` argument it becomes; `openapi.json` is generated from these."""

    name: str
    arg: str
    schema: Mapping[str, object]
    description: str
    parse: Callable[[object, str], object]


def _tool_property(name: str) -> dict[str, object]:

    properties = SEARCH_INPUT["properties"]
    assert isinstance(properties, Mapping)
    prop = properties[name]
    return {k: v for k, v in prop.items() if k != "description"}


SEARCH_PARAMS: tuple[Param, ...] = (
    Param("n", "max_results", _tool_property("max_results"), "How many hits (1-50).", _count),
    Param("pack", "pack", _tool_property("pack"), "Slug of the pack to search; without it "
          "every pack your key opens is searched and merged into one ranking, each hit naming "
          "its `pack` (GET /packs lists them).", _string),
    Param("type", "type", _tool_property("type"), "Only hits whose frontmatter type is this.",
          _string),
    Param("tags", "tags", {"type": "string", "maxLength": 10000}, "Only hits carrying at "
          "least one of these tags, comma-separated (JSON: also a list).", _tags),
    Param("reconstruct", "reconstruct", {"type": "boolean"}, "Add exact provenance: fragment "
          "id, line range, byte offsets, original markdown, staleness.", _flag),
    Param("include_low_confidence", "include_low_confidence", {"type": "boolean"}, "Return "
          "the hits even below min_answerable (the pack does not seem to cover it).", _flag),
    Param("rerank", "rerank", {"type": "boolean"}, "false: skip the server's reranker (when "
          "one is configured) for this query.", _flag),
)  # fmt: skip
QUERY_PARAM = Param(
    "q",
    "query",
    _tool_property("query"),
    "What to look for, in plain words (POST: `q` or `query`).",
    _string,
)


def parse_params(data: Mapping[str, object]) -> dict[str, object]:
    """Search parameters from query params or a JSON body, into ep_search arguments."""
    for name, value in data.items():
        if isinstance(value, str):
            _check_text(value, str(name)[:40])
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    _check_text(item, str(name)[:40])
    query = data.get("q", data.get("query"))
    if query is None or query == "":  # a blank one is ep_search's to refuse (BLANK_QUERY)
        raise BadRequest(400, "missing `q` — pass the words to search for, e.g. /search?q=install")
    if not isinstance(query, str):
        raise BadRequest(400, "`q` must be a string")
    args: dict[str, object] = {"query": query}
    for param in SEARCH_PARAMS:
        value = data.get(param.name)
        if value is None or (value == "" and param.parse is _string):
            continue
        parsed = param.parse(value, param.name)
        if parsed != []:
            args[param.arg] = parsed
    return args


def parse_vector(value: object) -> tuple[float, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_VECTOR_DIM:
        raise BadRequest(422, "`vector` must be a non-empty list of numbers")
    out = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            raise BadRequest(422, "`vector` must contain only finite numbers")
        out.append(float(x))
    return tuple(out)


async def _body(request: Request) -> dict[str, object]:
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest(
            400, 'the body is not valid JSON — send an object like {"q": "install", "n": 5}'
        ) from None
    if not isinstance(data, dict):
        raise BadRequest(400, 'the body must be a JSON object like {"q": "install"}')
    return {str(k): v for k, v in data.items()}


def _check_dimension(lib: Library, slug: str | None, vector: tuple[float, ...]) -> None:
    for rt in [lib.get(slug)] if slug is not None or len(lib.runtimes) < 2 else list(lib):
        dim = rt.store.features().get("dimension") or (
            rt.embedder.dimension if rt.embedder is not None else None
        )
        if not dim or not rt.store.has_vectors():
            raise BadRequest(422, f"pack '{rt.slug}' has no vectors — search it with `q` only")
        if len(vector) != int(dim):
            raise BadRequest(
                422, f"`vector` has {len(vector)} dimensions, pack '{rt.slug}' expects {dim}"
            )


def _run(
    serve: ServeContext,
    allowed: frozenset[str],
    args: dict[str, object],
    vector: tuple[float, ...] | None,
) -> JsonObject:
    view = serve.library.only(allowed)
    if vector is not None:
        pack = args.get("pack")
        _check_dimension(view, pack if isinstance(pack, str) else None, vector)
    ctx = ToolContext(library=view, hub=serve.hub, extras={"vector": vector} if vector else {})
    return call_tool(ctx, "ep_search", args)


async def search_endpoint(
    request: Request, serve: ServeContext, gate: Gate, error: ErrorFn
) -> Response:
    ring = gate.ring
    started = time.perf_counter()
    try:
        if request.method == "POST":
            data = await _body(request)
            args = parse_params(data)
            vector = parse_vector(data["vector"]) if data.get("vector") is not None else None
        else:
            args = parse_params(request.query_params)
            vector = None
        served = serve.library.slugs()
        credential = await gate.credential(request.scope)
        visible = ", ".join(sorted(ring.access(credential, served, False).packs)) or "none"
        pack = args.get("pack")
        wanted = pack if isinstance(pack, str) else None
        if wanted is not None and wanted not in served and not ring.hides():
            raise BadRequest(
                404, f"pack '{wanted[:100]}' not found — packs you can search: {visible}"
            )
        # no pack: one served pack, or every pack the key opens (auth decides which; merged)
        target = wanted or (served[0] if len(served) == 1 else None)
        decision = auth.decide(ring, served, target, credential)
        if decision.status != 200:
            return error(decision.status, decision.message, gate.challenge(decision))
        await until_ready(serve.library.only(decision.allowed), "search")
        result = await run_sync(serve, _run, serve, decision.allowed, args, vector)
    except EpMcpError as exc:  # BadRequest included
        return error(exc.status, str(exc))
    took = time.perf_counter() - started
    if serve.query_log is not None:
        serve.query_log.write("http", result, args, took)
    logger.debug(
        "search %s: %.1f ms (engine %.1f ms)",
        result.get("pack", result.get("packs")),
        took * 1000,
        result.get("took_ms", 0.0),
    )
    keyed = ring.oauth or (target in ring.keyed if target else bool(decision.allowed & ring.keyed))
    headers = {"Cache-Control": "private, no-store"} if keyed else None
    return JSONResponse(result, headers=headers)
