"""What the workbench asks of the core, one function per fragment, each over a library view
restricted to the packs the caller's key opens (the same `auth.decide` as `/search`).

These run on a worker thread (`run_sync`); they return the JSON the tools already return,
and the views turn it into HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ep_mcp.errors import ConfigError, QueryError
from ep_mcp.eval.report import history, load_report, only_packs
from ep_mcp.packs.fragments import TOP, split_fragment_id
from ep_mcp.retrieval.settings import today_of
from ep_mcp.retrieval.types import SearchRequest
from ep_mcp.runtime import Library, PackRuntime
from ep_mcp.tools.registry import ToolContext, call_tool, get_tool, validate_arguments


def restricted(lib: Library, allowed: frozenset[str]) -> Library:
    """The same library, showing only ``allowed`` packs."""
    return Library(
        lib.settings, {s: lib.runtimes[s] for s in lib.slugs() if s in allowed}, lib.embedder
    )


def search(lib: Library, args: Mapping[str, Any]) -> dict[str, Any]:
    """`ep_search`'s arguments, checked against its schema, answered with provenance and the
    explain trace (the data of `ep-mcp search --reconstruct --explain --json`)."""
    validate_arguments(get_tool("ep_search"), args)
    rt = lib.get(args.get("pack"))
    query = str(args["query"])
    if not query.strip():
        raise QueryError("the query is blank — type some words to search for")
    request = SearchRequest(
        query=query,
        k=int(args.get("max_results", 10)),
        type=args.get("type") or None,
        tags=tuple(args.get("tags") or ()),
        reconstruct=True,
        explain=True,
    )
    result: dict[str, Any] = rt.search(request).to_dict()
    return result


def read(lib: Library, args: Mapping[str, Any]) -> dict[str, Any]:
    """`ep_read` through the registry; centred on a section, with its neighbours."""
    fragment = split_fragment_id(str(args.get("id") or args.get("path") or ""))
    centred = "section" in args or (fragment is not None and fragment[1] != TOP)
    return call_tool(ToolContext(library=lib), "ep_read", {**args, "neighbors": centred})


def index_state(rt: PackRuntime) -> dict[str, Any]:
    features = rt.store.features()
    counts = rt.store.counts()
    pending = counts.get("pending", 0)
    return {
        "files indexed": counts.get("files"),
        "chunks": counts.get("chunks"),
        "vectors": counts.get("vectors"),
        "embeddings pending": pending,
        "build": "complete" if not pending else f"{pending} chunks wait for embeddings",
        "model": features.get("model") or "none (lexical only)",
        "dimension": features.get("dimension") or "-",
        "provider": features.get("provider") or "-",
    }


def report_names(rt: PackRuntime) -> set[str]:
    """The names an evaluation report may use for this pack (slug or folder name)."""
    return {rt.slug, rt.pack.root.name}


def reports_dir(lib: Library) -> Path | None:
    home = lib.settings.home
    return home / "reports" if home is not None else None


def latest_reports(
    lib: Library, names: set[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The newest saved report that covers any of ``names``, and the one before it (both
    restricted to those packs); unreadable files are skipped."""
    folder = reports_dir(lib)
    found: list[dict[str, Any]] = []
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


def health(lib: Library, slug: str | None) -> dict[str, Any]:
    from ep_mcp.serve.web.health import pack_health

    rt = lib.get(slug)
    report, _ = latest_reports(lib, report_names(rt))
    return pack_health(
        rt.pack,
        index_state(rt),
        today_of(lib.settings.retrieval),
        report,
        dict(rt.view.skill_of),
    )
