"""`serve`'s whole life, in order: bind, start the slow parts, import the MCP SDK meanwhile,
open what is served, build on a thread, run until stopped, close.

The order is measured (docs/BENCHMARKS.md, "Time to first answer"): the query model and the
packs start on threads before the MCP SDK (about a second of pure Python) is imported, so they
run beside that import instead of after it. So this module imports nothing heavy at its top:
`serve.app`, which imports the SDK, is imported inside `serve`, once the threads run. The CLI
only parses flags into `Settings` and calls `serve`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Literal

from ep_mcp.config.model import Settings
from ep_mcp.serve import startup

logger = logging.getLogger(__name__)
Transport = Literal["stdio", "http"]
Announce = Callable[[str, Sequence[str]], None]  # the URL, the slugs served (HTTP only)


def serve(
    settings: Settings,
    transport: Transport,
    *,
    watch: bool,
    workers: int,
    announce: Announce | None = None,
) -> None:
    """Serve ``settings``' packs over ``transport`` until the client (stdio) or a signal (HTTP)
    ends it; ``announce`` hears the HTTP service's URL and slugs once its port is bound."""
    sock = None
    if transport == "http":  # the port first: a busy one is said before anything is built
        from ep_mcp.serve.app import bind  # start-up time: HTTP imports the SDK here, first

        sock = bind(settings.server.host, settings.server.port)
    # The model loads and the packs open while the MCP SDK imports. One process then answers
    # at once and builds the indexes on a thread (tools wait for it: Library.readiness),
    # words first: its backfill thread adds the vectors; a model never compiled on this home
    # is compiled behind that, by a low-priority child; queries are answered by their words
    # until the model is loaded. Workers have no backfill: their parent builds whole (vectors
    # included) before they start.
    one = workers == 1
    embedder = startup.warming(settings, behind=one, words_meanwhile=one)
    opening = startup.in_background(
        lambda: startup.open_packs(
            settings,
            embedder,
            build="later" if one else True,
            words_first=None if one else False,
        ),
        "ep-mcp-open-packs",
    )
    from ep_mcp.serve import app  # start-up time: the MCP SDK, imported beside the threads

    context, ring = app.open_context(settings, child_env=os.environ, library=opening.result())

    def finish() -> None:
        startup.finish(context.library)
        startup.prepare_tools()

    starting = startup.in_background(finish, "ep-mcp-index")

    def on_ready(url: str) -> None:
        if announce is None:
            logger.info("serving on %s", url)
        else:
            announce(url, context.library.slugs())

    with app.closing(context, starting):
        app.run(context, ring, settings, transport, watch=watch, workers=workers,
                on_ready=on_ready, sock=sock)  # fmt: skip
