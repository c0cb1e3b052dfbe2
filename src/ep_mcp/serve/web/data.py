"""What the workbench asks of the core, one function per fragment, each over a library view
restricted to the packs the caller's key opens (the same `auth.decide` as `/search`).

These run on a worker thread (`run_sync`); they return the library's own records (a
`SearchResult`, a `DocumentRead`, a `PackHealth`) and the views turn them into HTML. Saved
evaluation reports are JSON read from disk and stay JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ep_mcp.config.load import known_providers
from ep_mcp.errors import ConfigError, Refused
from ep_mcp.eval.report import history, load_report, only_packs
from ep_mcp.json_types import JsonObject
from ep_mcp.library.runtime import Library, PackRuntime
from ep_mcp.packs.reading_results import DocumentRead
from ep_mcp.retrieval.settings import today_of
from ep_mcp.retrieval.types import SearchResult
from ep_mcp.serve.web.health import IndexState, PackHealth, pack_health
from ep_mcp.tools.registry import ToolContext, call_tool_record


def restricted(lib: Library, allowed: frozenset[str]) -> Library:
    """The same library, showing only ``allowed`` packs."""
    return lib.only(allowed)


def search(lib: Library, args: Mapping[str, object]) -> SearchResult:
    """`ep_search` through the registry, answered with provenance and the explain trace (the
    data of `ep-mcp search --reconstruct --explain --json`); ``lib`` is one pack's view."""
    ctx = ToolContext(library=lib, extras={"explain": True})
    result = call_tool_record(ctx, "ep_search", {**args, "reconstruct": True})
    if not isinstance(result, SearchResult):  # several packs: the caller chose none
        raise Refused(400, "several packs are served — choose one")
    return result


def read(lib: Library, args: Mapping[str, str]) -> DocumentRead:
    """`ep_read` through the registry (`id` or `path`, maybe `section`, `pack`); centred on a
    section, with its neighbours."""
    result = call_tool_record(ToolContext(library=lib, extras={"centre": True}), "ep_read", args)
    assert isinstance(result, DocumentRead)
    return result


def index_state(rt: PackRuntime) -> IndexState:
    """What the index says of itself: its `index_features` name the embedder its vectors were
    made with (`provider/model`, None when lexical only) and their dimension."""
    features = rt.store.features()
    counts = rt.store.counts()
    model = rt.store.embedding_model()
    dimension = features.get("dimension")
    return IndexState(
        files=counts.get("files"),
        chunks=counts.get("chunks"),
        vectors=counts.get("vectors"),
        pending=counts.get("pending", 0),
        model=model,
        dimension=int(dimension) if model is not None and dimension else None,
        provider=provider_of(model, rt.settings.embedding.provider),
    )


def provider_of(model: str | None, configured: str) -> str | None:
    """The provider that made an index's vectors: the `provider/` its embedder's name starts
    with when that is a provider's name (`local/…`, `openai/…`), else the configured one (the
    test provider `hashing` names its vectors `fake/…`); None for a lexical-only index."""
    if model is None:
        return None
    prefix = model.split("/", 1)[0]
    return prefix if prefix in known_providers() else configured


def report_names(rt: PackRuntime) -> set[str]:
    """The names an evaluation report may use for this pack (slug or folder name)."""
    return {rt.slug, rt.pack.root.name}


def reports_dir(lib: Library) -> Path | None:
    home = lib.settings.home
    return home / "reports" if home is not None else None


def latest_reports(lib: Library, names: set[str]) -> tuple[JsonObject | None, JsonObject | None]:
    """The newest saved report that covers any of ``names``, and the one before it (both
    restricted to those packs); unreadable files are skipped."""
    folder = reports_dir(lib)
    found: list[JsonObject] = []
    for path in history(folder) if folder is not None else []:
        try:
            report = only_packs(load_report(path), names)
        except ConfigError:  # a damaged history file is skipped, not fatal
            continue
        if report["packs"]:
            found.append(report)
        if len(found) == 2:
            break
    return (found[0] if found else None, found[1] if len(found) > 1 else None)


def health(lib: Library, slug: str | None) -> PackHealth:
    rt = lib.get(slug)
    report, _ = latest_reports(lib, report_names(rt))
    return pack_health(
        rt.pack,
        index_state(rt),
        today_of(lib.settings.retrieval),
        report,
        dict(rt.view.skill_of),
    )
