"""The first moments of `serve`: the query model and the packs, opened on threads.

Loading the local model is native work (onnxruntime releases the GIL), and so is much of an
index build (the tokenizer, SQLite). Started before the MCP SDK is imported (about a second of
pure Python), they run beside that import instead of after it. Nothing here imports the SDK.

When queries are answered by their words until the model is loaded (one `serve` process), the
load waits for the packs to open first (`open_packs`; at most ``OPEN_FIRST_S``): loading the
model begins with Python work (importing onnxruntime) that would share the interpreter with
the opening, and the first answer needs the packs, not the model.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Literal, TypeVar

from ep_mcp.config.model import Settings
from ep_mcp.errors import BuildStopped, ConfigError, EpMcpError

if TYPE_CHECKING:  # what the model thread needs is imported first, the rest after it starts
    from ep_mcp.index.embed.base import Embedder
    from ep_mcp.library.runtime import Library

logger = logging.getLogger(__name__)
T = TypeVar("T")

OPEN_FIRST_S = 10.0  # the longest a model's load waits for its packs to open
# embedder → set once its packs are open (`open_packs`): its load may begin
_OPENING: weakref.WeakKeyDictionary[object, threading.Event] = weakref.WeakKeyDictionary()


def warm_up(embedder: Embedder, after: threading.Event | None = None) -> None:
    """Load the query model now, so the first client does not wait for it. Queries that come
    meanwhile are answered by their words (`start_warm_up`); from its end on, by both legs.
    ``after``: wait for it first (the packs opening; at most ``OPEN_FIRST_S``)."""
    from ep_mcp.index.buildstate import BuildCancelled  # start-up time: on the model's thread

    if after is not None:
        after.wait(timeout=OPEN_FIRST_S)
    loading: threading.Event | None = getattr(embedder, "loading", None)
    model: Embedder = getattr(embedder, "embedder", embedder) if loading is not None else embedder
    try:
        model.embed_query("warm up")
    except BuildCancelled:  # the server stopped before its model was compiled
        return
    except EpMcpError as exc:  # a dead provider degrades queries to lexical; say so once
        logger.warning("query embedding is unavailable (%s) — queries will be lexical", exc)
    finally:
        if loading is not None:
            loading.set()


def start_warm_up(embedder: Embedder, *, words_meanwhile: bool, after_open: bool = False) -> None:
    """Load ``embedder``'s model on a daemon thread. ``words_meanwhile`` (one `serve`
    process): a local model's queries (the query cache of `make_embedder` in front of it) are
    answered lexically, at once, until it is loaded — a restart's first answer does not wait
    for the model (``mode: lexical``, with a note); else they wait for it (HTTP workers).
    ``after_open`` (with ``words_meanwhile``): the load begins once `open_packs` has opened
    the packs for this embedder."""
    # start-up time (these and all below): nothing heavy before serve's threads start
    from ep_mcp.index.embed.base import query_cost
    from ep_mcp.index.embed.cache import QueryEmbeddingCache

    local = query_cost(embedder) == "compute"
    gate: threading.Event | None = None
    if words_meanwhile and isinstance(embedder, QueryEmbeddingCache) and local:
        embedder.loading = threading.Event()
        if after_open:
            gate = _OPENING.setdefault(embedder, threading.Event())
    threading.Thread(
        target=warm_up, args=(embedder, gate), name="ep-mcp-warm-up", daemon=True
    ).start()


def warming(
    settings: Settings, *, behind: bool = True, words_meanwhile: bool = False
) -> Embedder | None:
    """The configured embedder, its model loading on a daemon thread; ``behind``: a local
    model not compiled yet is compiled by a low-priority child process meanwhile (the words
    are served first: `index.embed.compiled`); ``words_meanwhile``: queries do not wait for
    the load (`start_warm_up`)."""
    from ep_mcp.index.embed import compiled  # start-up time: numpy, after serve's first lines
    from ep_mcp.index.embed.factory import make_embedder

    embedder = make_embedder(settings)
    if behind:
        compiled.resume()
        compile_behind(embedder)
    if embedder is not None:
        start_warm_up(embedder, words_meanwhile=words_meanwhile, after_open=True)
    return embedder


def compile_behind(embedder: object) -> None:
    """Have the local model (if ``embedder`` is, or wraps, one) compile behind the start."""
    while embedder is not None:
        if hasattr(embedder, "behind"):
            setattr(embedder, "behind", True)  # noqa: B010 (any local model, wrapped or not)
            return
        inner = getattr(embedder, "embedder", None)
        embedder = inner if inner is not embedder else None


def open_packs(
    settings: Settings,
    embedder: Embedder | None,
    *,
    build: bool | Literal["later"] = True,
    words_first: bool | None = None,
) -> Library:
    """Open every pack and (``build``) bring its index up to date, words first
    (``words_first``; None: unless embedding is trivial); ``"later"``: leave that to
    `finish`. Say what each pack warns of, and what is still to embed."""
    from ep_mcp.library.opening import (
        open_library,  # start-up time: the stores, on the packs' thread
    )

    if settings.home is None:
        raise ConfigError("no data directory — set EP_MCP_HOME or `home` in the config")
    try:
        library = open_library(
            settings,
            settings.home,
            build=build,
            show_progress=None,
            embedder=embedder,
            words_first=words_first,
        )
    finally:  # opened, or failed to: the model's load may begin (`start_warm_up`)
        opened = _OPENING.pop(embedder, None) if embedder is not None else None
        if opened is not None:
            opened.set()
    for rt in library:
        for warning in rt.pack.warnings:
            logger.warning("%s: %s", rt.slug, warning)
    if build is True:
        _say_pending(library)
    return library


def finish(library: Library) -> None:
    """The start-up build of a library opened with ``build="later"`` (on a thread while the
    server answers); a failure is logged here and answered to every tool call."""
    from ep_mcp.library.opening import finish_build  # start-up time: as in open_packs

    if library.readiness.done.is_set():
        return  # opened with its build done (or none to do)
    try:
        finish_build(library)
    except BuildStopped as exc:  # asked to stop: not a failure
        logger.info("%s", exc)
        return
    except EpMcpError as exc:
        logger.error("%s", exc.for_cli())
        return
    except Exception:  # kept in readiness.error too: every tool call answers it
        logger.exception("the index build failed — the packs cannot be searched")
        return
    _say_pending(library)


def _say_pending(library: Library) -> None:
    for rt in library:
        state = rt.build_state()
        if state["pending"]:
            logging.getLogger("ep_mcp.progress").info(
                "pack %s: %d of %d chunks to embed — answers are lexical until they are in",
                rt.slug,
                state["pending"],
                state["chunks"],
            )


def prepare_tools() -> None:
    """Register the built-in tools and build their argument validators now (importing
    jsonschema is otherwise a noticeable part of the first call)."""
    from ep_mcp.tools.registry import tools, validator_for  # start-up time: on the build thread

    for spec in tools():
        validator_for(spec)


def in_background(work: Callable[[], T], name: str) -> Future[T]:
    """``work()`` on a daemon thread (an interrupted start does not wait for it); its result
    or its exception comes out of the future."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work())
        except BaseException as exc:  # handed to whoever waits for the result
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
