"""`ep-mcp eval` (golden sets) and `ep-mcp bench beir|query` (quality and latency)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    emit_json,
    fail_cleanly,
    golden_option,
    index_dir_option,
    json_option,
    main,
    packs_root_option,
    provider_option,
    resolve_settings,
)
from ep_mcp.config.model import IndexEngine, Settings

work_option = click.option(
    "--work",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for cached indexes (default: under EP_MCP_HOME).",
)


def _settings(config: Path | None, provider: str | None) -> tuple[Settings, Path]:
    settings = resolve_settings(config, provider=provider)
    assert settings.home is not None
    return settings, settings.home


@main.command("eval")
@golden_option
@packs_root_option
@click.option(
    "--split",
    type=click.Choice(["dev", "test", "all"]),
    default="dev",
    show_default=True,
    help="Queries to run: dev (tune on these), test (held out: report, never tune) or all.",
)
@click.option("-k", "k", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the full report (every query's ranked files) as JSON here.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write a self-contained HTML report (tables, SVG plots, misses) here.",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="An earlier report (JSON) to compare with in --html and --plots.",
)
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write the plots as standalone .svg files into this folder.",
)
@click.option(
    "--merged",
    is_flag=True,
    help="Ask every query of all the sets' packs at once (a multi-pack server's merged "
    "search) and compare with each pack alone: hit@1/3/5, MRR, negatives.",
)
@click.option("--label", default="", help="A note stored with the report (e.g. the change).")
@click.option(
    "--engine",
    "index_engine",
    type=click.Choice(["sqlite", "postgres"]),
    help="Serve the packs from this index engine (default: index.engine of --config, else "
    "sqlite). postgres builds each pack in SQLite, loads it into the server of --dsn (or "
    "index.dsn / index.dsn_file of --config) as its current version, and answers from there.",
)
@click.option(
    "--dsn",
    help="The libpq DSN of the PostgreSQL to evaluate on (implies --engine postgres); "
    "prefer index.dsn_file in --config for a DSN holding a password.",
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Keep the report in $EP_MCP_HOME/reports (the workbench's eval page reads it).",
)
@config_option
@provider_option
@work_option
@json_option
@fail_cleanly
def eval_cmd(
    golden: Path,
    roots: tuple[Path, ...],
    split: str,
    k: int,
    report_path: Path | None,
    html_path: Path | None,
    baseline: Path | None,
    plots_dir: Path | None,
    merged: bool,
    label: str,
    index_engine: str | None,
    dsn: str | None,
    save: bool,
    config: Path | None,
    provider: str | None,
    work: Path | None,
    as_json: bool,
) -> None:
    """Run golden sets: recall@1/3/5, MRR, must_not violations, negatives answered empty.

    Constants are tuned on the dev split; the test split is held out for reporting.
    """
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.eval.golden import load_golden, load_golden_dir, render_table
    from ep_mcp.eval.report import build_report, load_report, save_report
    from ep_mcp.eval.report_html import render_document, write_plots
    from ep_mcp.eval.run import evaluate_golden

    settings, home = _settings(config, provider)
    settings = _served_by(settings, index_engine, dsn)
    if merged:
        _eval_merged(golden, roots, split, k, settings, work or home / "eval", as_json)
        return
    before = load_report(baseline) if baseline is not None else None
    sets = load_golden_dir(golden) if golden.is_dir() else [load_golden(golden)]
    reports = evaluate_golden(sets, list(roots), settings, work or home / "eval", k=k, split=split)
    full = build_report(reports, k=k, label=label)
    written: list[str] = []
    if save:
        written.append(f"report saved: {save_report(full, home / 'reports')}")
    if report_path is not None:
        report_path.write_text(json.dumps(full, indent=1, ensure_ascii=False), encoding="utf-8")
        written.append(f"report: {report_path}")
    if html_path is not None:
        html_path.write_text(render_document(full, before), encoding="utf-8")
        written.append(f"HTML report: {html_path}")
    if plots_dir is not None:
        written += [f"plot: {p}" for p in write_plots(full, plots_dir, before)]
    if not as_json:  # --json output stays one JSON document
        for line in written:
            click.echo(line, err=True)
    if as_json:
        emit_json([r.to_dict() for r in reports])
        return
    click.echo(render_table(reports))
    for rep in reports:
        for miss in rep.to_dict()["misses"]:
            click.echo(
                f"  {rep.pack} {miss['id']} [{miss['category']}] rank {miss['rank']}: "
                f"{miss['query']!r} → {', '.join(miss['got'][:3]) or 'nothing'}",
                err=True,
            )


def _served_by(settings: Settings, index_engine: str | None, dsn: str | None) -> Settings:
    """``settings`` with the engine of ``--engine`` / ``--dsn`` (unchanged without either)."""
    if index_engine is None and dsn is None:
        return settings
    if index_engine == "sqlite" and dsn is not None:
        raise click.UsageError("--dsn names a PostgreSQL: use it with --engine postgres")
    engine = IndexEngine.SQLITE if index_engine == "sqlite" else IndexEngine.POSTGRES
    index = dataclasses.replace(settings.index, engine=engine)
    if dsn is not None:
        index = dataclasses.replace(index, dsn=dsn, dsn_file=None)
    if engine == IndexEngine.POSTGRES and index.dsn is None and index.dsn_file is None:
        raise click.UsageError(
            "--engine postgres needs a server: give --dsn, or index.dsn / index.dsn_file in "
            "--config"
        )
    return dataclasses.replace(settings, index=index)


def _eval_merged(
    golden: Path,
    roots: tuple[Path, ...],
    split: str,
    k: int,
    settings: Settings,
    work: Path,
    as_json: bool,
) -> None:
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.eval.golden import load_golden, load_golden_dir
    from ep_mcp.eval.merged import evaluate_merged, render_merged

    sets = load_golden_dir(golden) if golden.is_dir() else [load_golden(golden)]
    reports = evaluate_merged(sets, list(roots), settings, work, k=k, split=split)
    served = reports["served"]
    if as_json:
        emit_json([r.to_dict() for r in served])
        return
    click.echo(render_merged(served))


@bench.command("beir")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--split", default="test", show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "lexical", "dense"]),
    default="hybrid",
    show_default=True,
    help="Both legs, the lexical pipeline alone, or dense alone.",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(10, 1000),
    default=100,
    show_default=True,
    help="Hits asked for with the floor off (recall@100 needs 100).",
)
@click.option(
    "--served-k",
    type=click.IntRange(10, 1000),
    default=10,
    show_default=True,
    help="Hits asked for as served (ep_search's default request asks for 10).",
)
@config_option
@provider_option
@work_option
@json_option
@fail_cleanly
def beir_cmd(
    folder: Path,
    split: str,
    mode: str,
    k: int,
    served_k: int,
    config: Path | None,
    provider: str | None,
    work: Path | None,
    as_json: bool,
) -> None:
    """nDCG@10 as served and with the floor off, recall@100, latency and index time on a
    BEIR-layout FOLDER.

    The served figure (first) is what ep_search answers, floor included: a query answered with
    nothing scores 0. The floor-off figure ranks every query whole (include_low_confidence)."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench.query import run_beir

    settings, home = _settings(config, provider)
    rep = run_beir(
        folder,
        settings,
        work or home / "bench" / folder.name,
        split=split,
        mode=mode,
        k=k,
        served_k=served_k,
    )
    if as_json:
        emit_json(rep.to_dict())
        return
    click.echo(
        f"{rep.name} {rep.split} ({rep.queries} queries, {rep.docs} docs) mode {rep.mode}\n"
        f"  served (k={rep.served_k}, floor on):   nDCG@10 {rep.served_ndcg_at_10:.4f}  "
        f"answered with nothing {rep.withheld}/{rep.queries} (counted as misses)\n"
        f"  floor off (k={rep.k}, ranking whole): nDCG@10 {rep.ndcg_at_10:.4f}  "
        f"recall@100 {rep.recall_at_100:.4f}\n"
        f"  p50 {rep.p50_ms:.1f} ms  p95 {rep.p95_ms:.1f} ms (served)  "
        f"index {rep.index_seconds:.1f} s"
    )


@bench.command("query")
@click.argument("pack", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--golden",
    "golden",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Take the queries from this golden YAML (default: the pack's titles).",
)
@click.option("--repeats", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option(
    "--synthetic",
    type=click.IntRange(0, 2_000_000),
    default=0,
    help="Also time a synthetic index of this many chunks (e.g. 100000).",
)
@config_option
@provider_option
@work_option
@index_dir_option
@json_option
@fail_cleanly
def query_cmd(
    pack: Path | None,
    golden: Path | None,
    repeats: int,
    synthetic: int,
    config: Path | None,
    provider: str | None,
    work: Path | None,
    index_dir: Path | None,
    as_json: bool,
) -> None:
    """Query latency p50/p95 on PACK: embedding the query, cached, and lexical only."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench.query import Latency, cold_over_model, query_latency, synthetic_latency
    from ep_mcp.eval.golden import load_golden
    from ep_mcp.eval.run import open_runtime
    from ep_mcp.index.embed.factory import make_embedder

    settings, home = _settings(config, provider)
    base = work or home / "bench"
    rows: list[Latency] = []
    extra: dict[str, float] = {}
    if pack is not None:
        rt = open_runtime(pack, settings, make_embedder(settings), base, index_dir=index_dir)
        try:
            if golden is not None:
                queries = [q.query for q in load_golden(golden).queries]
            else:
                queries = [d.title for d in rt.pack.documents if d.title and not d.navigation]
            rows += query_latency(rt, queries[:100], repeats=repeats)
            extra["chunks"] = rt.store.counts()["chunks"]
            extra.update(cold_over_model(rows))
        finally:
            rt.close()
    if synthetic:
        row, build = synthetic_latency(base, settings, chunks=synthetic)
        rows.append(row)
        extra["synthetic_build_seconds"] = round(build, 1)
    if as_json:
        emit_json({"latency": [r.to_dict() for r in rows], **extra})
        return
    for r in rows:
        cpu = f"  cpu p50 {r.cpu_p50_ms:7.2f} ms" if r.cpu_p50_ms is not None else ""
        click.echo(
            f"{r.label:<44} n={r.queries:<4} p50 {r.p50_ms:7.2f} ms  p95 {r.p95_ms:7.2f} ms{cpu}"
        )
    for key, value in extra.items():
        click.echo(f"{key}: {value}")


@bench.command("scale")
@click.option(
    "--chunks",
    "sizes",
    type=click.IntRange(100, 5_000_000),
    multiple=True,
    default=(100_000,),
    show_default=True,
    help="Synthetic index size; repeat for several (e.g. --chunks 100000 --chunks 300000).",
)
@click.option("--queries", type=click.IntRange(5, 1000), default=50, show_default=True)
@click.option(
    "--engine",
    "engines",
    type=click.Choice(["numpy", "sqlite-vec", "postgres"]),
    multiple=True,
    help="Engines to measure (default: numpy and sqlite-vec; postgres loads the index into "
    "the server of index.dsn, from --config).",
)
@config_option
@work_option
@json_option
@fail_cleanly
def scale_cmd(
    sizes: tuple[int, ...],
    queries: int,
    engines: tuple[str, ...],
    config: Path | None,
    work: Path | None,
    as_json: bool,
) -> None:
    """Build time, file size, RSS and p50/p95 query latency of synthetic N-chunk indexes."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench.scale import ENGINES, render, scale_row

    settings, home = _settings(config, None)
    base = work or home / "bench"
    rows = [
        scale_row(base, n, settings, queries=queries, engines=engines or ENGINES) for n in sizes
    ]
    if as_json:
        emit_json({"scale": [r.to_dict() for r in rows]})
        return
    click.echo(render(rows))
