"""Commands over one pack: index, search, validate; and doctor (reading: read_cmds)."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    emit_json,
    fail_cleanly,
    index_dir_option,
    json_option,
    main,
    provider_option,
    resolve_settings,
    warn,
)
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import PackError
from ep_mcp.logsafe import one_line
from ep_mcp.retrieval.types import MAX_RESULTS, out_of_range

if TYPE_CHECKING:  # the runtime pulls in numpy and the stores; `index` with no change skips it
    from ep_mcp.library.indexing import IndexOutcome
    from ep_mcp.library.runtime import Library, PackRuntime
    from ep_mcp.retrieval.types import SearchResult

STOPPED = "stopped — the next `ep-mcp index` resumes where this one stopped"
pack_argument = click.argument("pack", type=click.Path(path_type=Path, file_okay=False))


def pack_settings(
    pack: Path, provider: str | None, index_dir: Path | None, config: Path | None = None
) -> Settings:
    """Settings for one pack: the config file's (embedding, retrieval, index, home) when given,
    and its entry for this folder (slug, kind, index_dir) if it lists one; flags win."""
    if not pack.is_dir():
        raise PackError(f"no pack folder at {pack} — pass the path of a folder of markdown files")
    settings = resolve_settings(config, [], provider=provider)
    root = pack.resolve()
    listed = [p for p in settings.packs if p.path.resolve() == root]
    entry = listed[0] if listed else PackSettings(path=root)
    entry = dataclasses.replace(entry, path=root)
    if index_dir is not None:
        entry = dataclasses.replace(entry, index_dir=index_dir)
    return dataclasses.replace(settings, packs=(entry,))


def _open_one(
    pack: Path,
    provider: str | None,
    index_dir: Path | None,
    build: bool = True,
    config: Path | None = None,
) -> tuple[Library, PackRuntime]:
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.library.opening import open_library

    settings = pack_settings(pack, provider, index_dir, config)
    assert settings.home is not None
    lib = open_library(settings, settings.home, build=build)
    return lib, lib.get()


@main.command("index")
@click.argument("pack", type=click.Path(path_type=Path, file_okay=False), required=False)
@config_option
@provider_option
@index_dir_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Publish a versioned artifact to DIR/<slug>/ and point DIR/<slug>/current at it.",
)
@click.option("--keep", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="With --out: versions kept (older ones are deleted).")  # fmt: skip
@click.option("--force", is_flag=True, help="With --out: publish even when nothing changed.")
@click.option(
    "--to",
    "to",
    type=click.Choice(["artifact", "postgres"]),
    default="artifact",
    show_default=True,
    help="With --out: also load the version into PostgreSQL (index.dsn) and make it current.",
)
@click.option(
    "--check",
    "check",
    type=click.Path(path_type=Path, file_okay=False),
    help="Verify the artifact(s) in DIR (checksum, schema, manifest) instead of indexing.",
)
@json_option
@fail_cleanly
def index_cmd(
    pack: Path | None,
    config: Path | None,
    provider: str | None,
    index_dir: Path | None,
    out: Path | None,
    keep: int,
    force: bool,
    to: str,
    check: Path | None,
    as_json: bool,
) -> None:
    """Build or update the index of PACK (only changed files are re-read and re-embedded).

    If the embedding provider fails, the lexical index is still written (exit 0), every vector
    already stored is kept, and the chunks still without one are embedded by the next run.

    With --out DIR the index is published as an artifact for `serve` (docs/deploy.md);
    `ep-mcp index --check DIR` verifies one and exits 1 with one line when it is not sound.
    """
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.cli import artifact_cmds

    if check is not None:
        if pack is not None or out is not None:
            raise click.UsageError("--check DIR takes no PACK and no --out")
        artifact_cmds.check_artifact(check, as_json)
        return
    if pack is None:
        raise click.UsageError("missing argument PACK (or use --check DIR)")
    if to == "postgres" and out is None:
        raise click.UsageError("--to postgres publishes an artifact first: give --out DIR too")
    settings = pack_settings(pack, provider, index_dir, config)
    if out is not None:
        artifact_cmds.publish_artifact(settings, out, keep, force, as_json, to)
        return
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.library.indexing import update_index

    try:
        done = update_index(settings)
    except KeyboardInterrupt:  # Ctrl-C: what is stored stays (vectors cached, index whole)
        click.echo(f"\n{STOPPED}", err=True)
        raise SystemExit(130) from None
    _print_index(pack, done, as_json)


def _print_index(pack: Path, done: IndexOutcome, as_json: bool) -> None:
    slug, index, warnings = done.slug, done.index, done.warnings
    report: Mapping[str, Any] = done.report
    if as_json:
        emit_json({"pack": slug, "index": str(index), **report, "warnings": list(warnings)})
    else:
        click.echo(
            f"{slug}: {report['files']} files, {report['chunks']} chunks "
            f"({report['changed']} changed, {report['removed']} removed, "
            f"{report['embedded']} embedded, {report['reused']} from cache) "
            f"in {report['seconds']:.2f}s → {index}"
        )
    repaired = [
        f"repaired {report['repaired']} damaged or missing vectors"
        if report.get("repaired")
        else "",
        f"re-indexed {report['repaired_files']} files whose chunk rows were missing"
        if report.get("repaired_files")
        else "",
    ]
    if not as_json and any(repaired):
        click.echo(f"{slug}: " + ", ".join(r for r in repaired if r))
    for warning in warnings:
        warn(f"warning: {warning}")
    if not report["files"]:
        # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
        from ep_mcp.packs.loader import empty_pack_message

        click.echo(f"warning: {one_line(empty_pack_message(pack.resolve()))}", err=True)
    if report.get("pending"):  # exit 0 all the same: the lexical index is written and usable
        click.echo(
            f"warning: the embedding provider failed ({report.get('embedding_error')}) — "
            f"{report['pending']} chunk(s) await embeddings and are found by words only; "
            "the next `ep-mcp index` embeds them",
            err=True,
        )


def render_result(result: SearchResult) -> str:
    if not result.hits:
        return f"no results for {result.query!r} ({result.mode})"
    lines = [f"{len(result.hits)} results · mode {result.mode} · {result.took_ms:.1f} ms"]
    for i, hit in enumerate(result.hits, start=1):
        where = " › ".join(hit.heading_path) or hit.title  # noqa: RUF001
        flags = " [requires]" if hit.requires_expanded else " [graph]" if hit.graph_expanded else ""
        lines.append(
            one_line(
                f"{i:>2}. {hit.source_file}:{hit.line_range[0]}-{hit.line_range[1]}  "
                f"{where}  (score {hit.score:.4f}){flags}"
            )
        )
        snippet = one_line(" ".join(hit.text.split())[:220])
        lines.append(textwrap.indent(textwrap.fill(snippet, 96), "    "))
    return "\n".join(lines)


def _search(lib: Library, args: Mapping[str, object], explain: bool) -> SearchResult:
    """`ep_search` through the registry, as the MCP tool and `/search` call it."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.retrieval.types import SearchResult
    from ep_mcp.tools.registry import ToolContext, call_tool_record

    ctx = ToolContext(library=lib, extras={"explain": explain})
    result = call_tool_record(ctx, "ep_search", args)
    assert isinstance(result, SearchResult)  # one pack opened
    return result


class Count(click.IntRange):
    """-n: 1-50, refused in the words `/search` and the tools use for theirs."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        n = click.INT.convert(value, param, ctx)
        if not 1 <= n <= MAX_RESULTS:
            self.fail(out_of_range("-n", 1, MAX_RESULTS, n), param, ctx)
        return n


@main.command("search")
@pack_argument
@click.argument("query")
@click.option("-n", "--max-results", "n", type=Count(1, MAX_RESULTS), default=10,
              show_default=True)  # fmt: skip
@click.option("--type", "type_", help="Only hits of this frontmatter type.")
@click.option("--tags", help="Only hits with any of these tags (comma-separated).")
@click.option("--reconstruct", is_flag=True, help="Add exact line/byte provenance to each hit.")
@click.option("--explain", is_flag=True, help="Show what each candidate scored at each stage.")
@click.option(
    "--include-low-confidence",
    "low",
    is_flag=True,
    help="Show the hits even when the pack does not appear to cover the question.",
)
@config_option
@provider_option
@index_dir_option
@json_option
@fail_cleanly
def search_cmd(
    pack: Path,
    query: str,
    n: int,
    type_: str | None,
    tags: str | None,
    reconstruct: bool,
    explain: bool,
    low: bool,
    config: Path | None,
    provider: str | None,
    index_dir: Path | None,
    as_json: bool,
) -> None:
    """Search PACK for QUERY (the index is brought up to date first)."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.retrieval.types import SearchRequest
    from ep_mcp.tools.registry import get_tool, validate_arguments

    tag_list = tuple(t.strip() for t in (tags or "").split(",") if t.strip())
    args: dict[str, object] = {"query": query, "max_results": n, "reconstruct": reconstruct,
                               "include_low_confidence": low}  # fmt: skip
    if type_ is not None:
        args["type"] = type_
    if tag_list:
        args["tags"] = list(tag_list)
    validate_arguments(get_tool("ep_search"), args)  # refused before the index is brought up
    SearchRequest.from_args(args)
    lib, _ = _open_one(pack, provider, index_dir, config=config)
    try:
        result = lib.retry_reopened(lambda _: _search(lib, args, explain))  # damage: once more
        rt = lib.get()
        # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
        from ep_mcp.packs.reading import filter_warnings

        for warning in filter_warnings(rt.pack, type_, tag_list):
            warn(f"warning: {warning}")
        if as_json:
            emit_json(result.to_dict())
        else:
            click.echo(render_result(result))
            for note in result.notes:
                warn(f"note: {note}")
            if explain:
                # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
                from ep_mcp.retrieval.explain import render_explain

                click.echo(render_explain(result.explain))
    finally:
        lib.close()


@main.command("validate")
@pack_argument
@json_option
@fail_cleanly
def validate_cmd(pack: Path, as_json: bool) -> None:
    """Report every problem found in PACK, with file and line. Exits 1 when there are any."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.packs.loader import load_pack
    from ep_mcp.packs.validate import no_frontmatter_files, validate_pack

    if not pack.is_dir():
        raise PackError(f"no pack folder at {pack} — pass the path of a folder of markdown files")
    loaded = load_pack(pack.resolve())
    problems = validate_pack(loaded)
    skipped = no_frontmatter_files(loaded)
    if as_json:
        emit_json(
            {
                "pack": loaded.slug,
                "kind": loaded.kind,
                "files": len(loaded.documents),
                "problems": [dataclasses.asdict(p) for p in problems],
                "no_frontmatter_needed": skipped,
            }
        )
    else:
        for p in problems:
            click.echo(one_line(str(p)))
        if skipped:
            click.echo(
                "not asked for frontmatter (standard ExpertPack files that carry none): "
                + ", ".join(one_line(name) for name in skipped)
            )
        if not loaded.documents:
            # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
            from ep_mcp.packs.loader import empty_pack_message

            click.echo(f"warning: {one_line(empty_pack_message(loaded.root))}", err=True)
        click.echo(
            f"{loaded.slug} ({loaded.kind}): {len(loaded.documents)} files, "
            f"{len(problems)} problem(s)"
        )
    if problems:
        raise SystemExit(1)


@main.command("doctor")
@config_option
@json_option
def doctor_cmd(config: Path | None, as_json: bool) -> None:
    """Check the installation: versions, SQLite, sqlite-vec, the local model, the data
    directory (indexes, taps), the outside tools (git, gh, an LLM) and, with --config, the
    config file (its problems and deprecated keys)."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.config.model import default_home
    from ep_mcp.doctor import config_check, run_checks

    checks = run_checks(default_home(os.environ), os.environ)
    if config is not None:
        checks.append(config_check(config))
    if as_json:
        emit_json([dataclasses.asdict(c) for c in checks])
        return
    for c in checks:
        mark = "ok " if c.ok else "!! "
        click.echo(f"{mark}{c.name:<16} {c.detail}")


@bench.command("index")
@pack_argument
@provider_option
@click.option(
    "--runs",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="No-change re-index runs (the median is reported).",
)
@click.option(
    "--query",
    help="Also time `ep-mcp serve` to its first answer to this query: first from a new home "
    "(no compiled model), then with no index, then restarted with nothing changed.",
)
@json_option
@fail_cleanly
def bench_index_cmd(
    pack: Path, provider: str | None, runs: int, query: str | None, as_json: bool
) -> None:
    """Time a full build, a no-change re-index and a one-file change of PACK (fresh processes)."""
    import tempfile  # here, not at the top: no other command needs it

    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench.index import bench_index, render

    if not pack.is_dir():
        raise PackError(f"no pack folder at {pack} — pass the path of a folder of markdown files")
    with tempfile.TemporaryDirectory(prefix="ep-bench-") as work:
        result = bench_index(
            pack.resolve(), Path(work), os.environ, provider=provider, runs=runs, query=query
        )
    if as_json:
        emit_json(result)
    else:
        click.echo(render(result))
