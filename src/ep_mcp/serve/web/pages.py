"""The workbench's routes: pages (`/`, `/packs/{slug}/`, `.../read`, `.../health`, `.../eval`,
`/eval`), the HTML fragments they load (`/ui/*`), and its two static files.

A page is a shell. When the caller may see the pack without a key, the page also carries the
content, rendered on the server, so it works without JavaScript. Otherwise its `<main>` names
the fragment to load, and the script fetches it with the key the person entered (kept in
session storage, sent only as `Authorization: Bearer`). Every fragment is authorized with
`auth.decide`, exactly as `/search` is, and fails closed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from html import escape
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ep_mcp.errors import BadRequest, EpMcpError, QueryError, Refused
from ep_mcp.eval.report_html import render_body
from ep_mcp.library.runtime import Library
from ep_mcp.packs.reading import ReadRequest
from ep_mcp.serve import auth
from ep_mcp.serve.context import ServeContext, run_sync, until_ready
from ep_mcp.serve.http.search_api import parse_params
from ep_mcp.serve.web import data, views
from ep_mcp.serve.web.health import health_html

logger = logging.getLogger(__name__)

T = TypeVar("T")

STATIC = Path(__file__).with_name("static")
STATIC_TYPES = {
    "workbench.js": "text/javascript; charset=utf-8",
    "workbench.css": "text/css; charset=utf-8",
}
PAGES = ("read", "health", "eval")
EVAL_HINT = (
    "No evaluation report for this pack yet: run `ep-mcp eval --golden FILE --packs-root DIR` "
    "(it saves its report under $EP_MCP_HOME/reports) and reload."
)
e = views.e


def _pack_url(slug: str, page: str = "") -> str:
    return f"/packs/{quote(slug, safe='')}/{page}"


def shell(title: str, body: str, *, slug: str | None = None) -> str:
    """The page around ``body``: header, key form, navigation."""
    nav = ['<a href="/">search</a>', '<a href="/eval">evaluation</a>']
    if slug is not None:
        nav = [
            f'<a href="{e(_pack_url(slug))}">search {e(slug)}</a>',
            f'<a href="{e(_pack_url(slug, "health"))}">health</a>',
            f'<a href="{e(_pack_url(slug, "eval"))}">evaluation</a>',
            '<a href="/">all packs</a>',
        ]
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · ep-mcp workbench</title>"
        '<link rel=icon href="data:,"><link rel=stylesheet href="/ui/static/workbench.css">'
        '<script src="/ui/static/workbench.js" defer></script></head><body>'
        '<header class=top><a class=brand href="/">ep-mcp workbench</a>'
        f"<nav>{' · '.join(nav)}</nav>"
        "<form id=keyform class=key autocomplete=off><label>API key "
        "<input id=key type=password autocomplete=off spellcheck=false "
        'placeholder="only for keyed packs"></label> <button type=submit>use</button> '
        "<button type=button id=forget>forget</button> <span id=keystate class=muted></span>"
        f"</form></header><main id=main>{body}</main>"
        '<noscript><p class="note">Without JavaScript the workbench shows the packs that need '
        "no key.</p></noscript></body></html>"
    )


def _pending(why: str) -> str:
    return f'<p class="needs-key" data-pending>{e(why)}</p>'


class Workbench:
    """The workbench's handlers over one ServeContext and key ring."""

    def __init__(self, serve: ServeContext, ring: auth.KeyRing) -> None:
        self.serve = serve
        self.ring = ring

    # -- authorization ----------------------------------------------------------------------

    def decide(self, request: Request, slug: str | None) -> auth.Decision:
        """The same decision `/search` makes: one pack (or the only one), or refused."""
        served = self.serve.library.slugs()
        credential = auth.bearer_token(request.scope["headers"])
        if slug is not None and slug not in served:
            raise Refused(404, f"pack '{slug[:100]}' not found — list the packs at /packs")
        if slug is None and len(served) > 1:
            raise Refused(400, "several packs are served — choose one")
        target = slug or (served[0] if served else None)
        decision = auth.decide(self.ring, served, target, credential)
        if decision.status != 200:
            raise Refused(decision.status, decision.message)
        return decision

    def visible(self, request: Request) -> list[str]:
        served = self.serve.library.slugs()
        credential = auth.bearer_token(request.scope["headers"])
        return sorted(self.ring.access(credential, served, False).packs)

    async def content(
        self, request: Request, slug: str | None, make: Callable[[Library, T], str], arg: T
    ) -> str:
        """``make(library view, arg)`` for the pack the caller may see, on a worker thread;
        reading a pack waits for the start-up build (the health page does not)."""
        decision = self.decide(request, slug)
        if make == self._render_health:  # the health page shows the build as it goes
            view = data.restricted(self.serve.library, decision.allowed)
        else:
            view = await self.built_view(decision.allowed)
        return await run_sync(self.serve, make, view, arg)

    async def built_view(self, allowed: frozenset[str]) -> Library:
        """The packs ``allowed`` once the start-up build is over (the view is taken after the
        wait: the build may have reopened a pack's runtime)."""
        await until_ready(data.restricted(self.serve.library, allowed), "reload the page")
        return data.restricted(self.serve.library, allowed)

    # -- fragments --------------------------------------------------------------------------

    def _render_search(self, lib: Library, args: Mapping[str, object]) -> str:
        return views.results_html(data.search(lib, args))

    def _render_read(self, lib: Library, args: Mapping[str, str]) -> str:
        return views.read_html(data.read(lib, args))

    def _render_health(self, lib: Library, slug: str | None) -> str:
        return health_html(data.health(lib, slug), EVAL_HINT)

    def _render_eval(self, lib: Library, slugs: list[str]) -> str:
        names: set[str] = set()
        for slug in slugs:
            names |= data.report_names(lib.get(slug))
        latest, before = data.latest_reports(lib, names)
        if latest is None:
            return f'<p class="muted">{e(EVAL_HINT)}</p>'
        return f'<div class="eval" id="eval">{render_body(latest, before)}</div>'

    def search_args(self, request: Request) -> dict[str, object]:
        params = {k: v for k, v in request.query_params.items() if v != ""}
        try:
            return parse_params(params)
        except BadRequest as exc:
            raise Refused(exc.status, str(exc)) from None

    def read_args(self, request: Request) -> dict[str, str]:
        q = request.query_params
        args = {k: q[k] for k in ("id", "path", "section") if q.get(k)}
        try:
            ReadRequest.from_args(args)  # ep_read's own checks, before the page is drawn
        except QueryError as exc:
            raise Refused(400, str(exc)) from None
        return args

    async def fragment(self, request: Request) -> Response:
        kind = request.path_params["kind"]
        pack = request.query_params.get("pack") or None
        try:
            if kind == "search":
                args = self.search_args(request)
                html = await self.content(request, _pack(args), self._render_search, args)
            elif kind == "read":
                read = {**self.read_args(request), **({"pack": pack} if pack else {})}
                html = await self.content(request, pack, self._render_read, read)
            elif kind == "health":
                html = await self.content(request, pack, self._render_health, pack)
            elif kind == "eval":
                html = await self.eval_content(request, pack)
            else:
                raise Refused(404, "no such workbench fragment")
        except (Refused, EpMcpError) as exc:
            return _error(exc)
        return _html(html)

    async def eval_content(self, request: Request, pack: str | None) -> str:
        if pack is not None:
            decision = self.decide(request, pack)
        else:  # every pack this caller may see
            served = self.serve.library.slugs()
            credential = auth.bearer_token(request.scope["headers"])
            decision = auth.decide(self.ring, served, None, credential)
            if decision.status != 200:
                raise Refused(decision.status, decision.message)
        view = await self.built_view(decision.allowed)
        return await run_sync(self.serve, self._render_eval, view, sorted(decision.allowed))

    # -- pages ------------------------------------------------------------------------------

    async def search_page(self, request: Request) -> Response:
        slug = request.path_params.get("slug")
        q = request.query_params
        if slug is not None and slug not in self.serve.library.slugs():
            return _error(Refused(404, f"pack '{slug[:100]}' not found — list them at /packs"))
        visible = self.visible(request)
        chosen = slug or q.get("pack") or (visible[0] if visible else "")
        query = q.get("q", "")
        form = _search_form(slug, visible, chosen, q)
        results = ""
        if query.strip():
            params = {k: v for k, v in q.items() if k in ("q", "type", "tags", "n") and v}
            params["pack"] = slug or chosen
            src = "/ui/search?" + urlencode({k: v for k, v in params.items() if v})

            async def render() -> str:
                args = self.search_args(request)
                if slug is not None:
                    args["pack"] = slug
                elif chosen:
                    args["pack"] = chosen
                return await self.content(request, _pack(args), self._render_search, args)

            try:
                results = await self.page_part(src, render)
            except Refused as exc:
                return _error(exc)
        reader = '<aside id="reader" class="reader-panel" hidden></aside>'
        body = f'{form}<div class="layout"><div id="results">{results}</div>{reader}</div>'
        title = f"search {slug}" if slug else "search"
        return _html(shell(title, body, slug=slug))

    async def page_part(self, src: str, render: Callable[[], Awaitable[str]]) -> str:
        try:
            inner = await render()
        except Refused as exc:
            if exc.status == 404:
                raise
            if exc.status in (401, 403):
                inner = _pending(f"{exc} — enter the key above (kept for this tab only).")
            else:
                inner = f'<p class="error">{e(exc)}</p>'
        except EpMcpError as exc:
            inner = f'<p class="error">{e(exc)}</p>'
        return f'<div id="content" data-src="{e(src)}">{inner}</div>'

    async def pack_page(self, request: Request) -> Response:
        slug = request.path_params["slug"]
        kind = request.url.path.rsplit("/", 1)[-1]
        if slug not in self.serve.library.slugs():
            return _error(Refused(404, f"pack '{slug[:100]}' not found — list them at /packs"))
        if kind == "read":
            try:
                args = {**self.read_args(request), "pack": slug}
            except Refused as exc:
                return _error(exc)
            src = "/ui/read?" + urlencode(args)

            async def render() -> str:
                return await self.content(request, slug, self._render_read, args)

        elif kind == "health":
            src = "/ui/health?" + urlencode({"pack": slug})

            async def render() -> str:
                return await self.content(request, slug, self._render_health, slug)

        else:
            src = "/ui/eval?" + urlencode({"pack": slug})

            async def render() -> str:
                return await self.eval_content(request, slug)

        body = await self.page_part(src, render)
        return _html(shell(f"{kind} {slug}", f"<h1>{e(kind)}: {e(slug)}</h1>{body}", slug=slug))

    async def eval_page(self, request: Request) -> Response:
        async def render() -> str:
            return await self.eval_content(request, None)

        body = await self.page_part("/ui/eval", render)
        return _html(shell("evaluation", f"<h1>Evaluation</h1>{body}"))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_TYPES:
            return _error(Refused(404, "no such static file"))
        body = (STATIC / name).read_bytes()
        return Response(body, media_type=STATIC_TYPES[name], headers={"Cache-Control": "no-cache"})

    def routes(self) -> list[Route]:
        return [
            Route("/", self.search_page, methods=["GET"]),
            Route("/eval", self.eval_page, methods=["GET"]),
            Route("/packs/{slug}/", self.search_page, methods=["GET"]),
            *(Route(f"/packs/{{slug}}/{page}", self.pack_page, methods=["GET"]) for page in PAGES),
            Route("/ui/static/{name}", self.static, methods=["GET"]),
            Route("/ui/{kind}", self.fragment, methods=["GET"]),
        ]


def _pack(args: Mapping[str, object]) -> str | None:
    """The `pack` of parsed search arguments (a string when given)."""
    pack = args.get("pack")
    return pack if isinstance(pack, str) else None


def _search_form(slug: str | None, visible: list[str], chosen: str, q: Mapping[str, str]) -> str:
    action = _pack_url(slug) if slug else "/"
    if slug:
        pack_field = f'<input type=hidden name=pack value="{e(slug)}">'
    else:
        options = "".join(
            f'<option value="{e(s)}"{" selected" if s == chosen else ""}>{e(s)}</option>'
            for s in visible
        )
        pack_field = (
            f'<label>pack <select name=pack id=pack data-chosen="{e(chosen)}">{options}'
            "</select></label>"
        )
    n = q.get("n", "10")
    sizes = "".join(
        f"<option{' selected' if str(v) == n else ''}>{v}</option>" for v in (5, 10, 20, 50)
    )
    return (
        f'<form id=search class=search action="{e(action)}" method=get role=search>'
        f'<input name=q id=q type=search required maxlength=2000 value="{e(q.get("q", ""))}" '
        'placeholder="Ask the pack a question" autofocus>'
        f"{pack_field}"
        f'<label>type <input name=type id=type size=10 value="{e(q.get("type", ""))}"></label>'
        f'<label>tags <input name=tags id=tags size=14 value="{e(q.get("tags", ""))}" '
        'placeholder="a,b"></label>'
        f"<label>n <select name=n>{sizes}</select></label>"
        "<button type=submit>Search</button></form>"
    )


def _html(body: str, status: int = 200) -> Response:
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "private, no-store"})


def _error(exc: Exception) -> Response:
    status = getattr(exc, "status", 400)
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    body = f'<p class="error" data-status="{status}">{escape(str(exc))}</p>'
    return HTMLResponse(body, status_code=status, headers=headers)


def web_routes(serve: ServeContext, ring: auth.KeyRing) -> list[Route]:
    """The workbench's routes, to add to the HTTP app."""
    return Workbench(serve, ring).routes()
