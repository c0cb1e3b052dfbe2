"""Skills-hub commands: tap, untap, taps, update, reindex, `skills …` and `bench skills`.

The `skills` subcommands call the registry's tools (as the MCP server does), so the CLI and MCP
answer the same thing.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    emit_json,
    fail_cleanly,
    json_option,
    main,
    resolve_settings,
    warn,
)
from ep_mcp.logsafe import one_line
from ep_mcp.tools.registry import Arguments, get_tool, validate_arguments

if TYPE_CHECKING:
    from ep_mcp.hub.hub import SkillHub
    from ep_mcp.hub.results import ReindexReport


@contextmanager
def open_hub(config: Path | None) -> Iterator[SkillHub]:
    settings = resolve_settings(config)
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.hub.hub import SkillHub

    hub = SkillHub(settings, os.environ)
    try:
        yield hub
    finally:
        hub.close()


def _reindex_line(report: ReindexReport) -> str:
    mode = "lexical + vectors" if report.dense else "lexical"
    line = f"reindex ({mode}): {report.reindexed} reindexed, {report.reused} reused"
    for err in report.errors:
        line += f"\nwarning: {err.tap}: {err.error}"
    return line


@main.command("tap")
@click.argument("source")
@click.option(
    "--allow-file", is_flag=True, help="Allow cloning a local repository (path or file:// URL)."
)
@config_option
@json_option
@fail_cleanly
def tap_cmd(source: str, allow_file: bool, config: Path | None, as_json: bool) -> None:
    """Clone a skills repository (https URL, git@host:owner/repo, owner/repo) and index it."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.hub.git import CREDENTIALS_DROPPED, strip_credentials

    if strip_credentials(source)[1]:
        click.echo(f"warning: {CREDENTIALS_DROPPED}", err=True)
    with open_hub(config) as hub:
        report = hub.tap(source, allow_file=allow_file)
    if as_json:
        emit_json(report.to_dict())
        return
    skills = sum(t.skills for t in report.report.taps)
    click.echo(f"tapped {report.tap} ({skills} skills) → {report.path}")


@main.command("untap")
@click.argument("name")
@config_option
@fail_cleanly
def untap_cmd(name: str, config: Path | None) -> None:
    """Remove a tap (its clone and its index)."""
    with open_hub(config) as hub:
        click.echo(f"untapped {hub.untap(name)}")


@main.command("taps")
@config_option
@json_option
@fail_cleanly
def taps_cmd(config: Path | None, as_json: bool) -> None:
    """List taps with their commit, skill count and when they were last indexed."""
    with open_hub(config) as hub:
        rows = hub.list_taps()
    if as_json:
        emit_json([r.to_dict() for r in rows])
        return
    if not rows:
        click.echo("no taps — add one with `ep-mcp tap owner/repo`")
    for r in rows:
        commit = (r.commit or "?")[:12]
        indexed = r.index.indexed_at or "never (run `ep-mcp reindex`)"
        flags = " [stale: run `ep-mcp reindex`]" if r.stale else ""
        flags += " [vectors]" if r.index.dense else ""
        click.echo(f"{r.tap:<32} {commit:<12} {r.skills or 0:>5} skills  indexed {indexed}{flags}")
        if r.error:
            click.echo(one_line(f"    error: {r.error}"))


@main.command("update")
@click.argument("names", nargs=-1)
@config_option
@json_option
@fail_cleanly
def update_cmd(names: tuple[str, ...], config: Path | None, as_json: bool) -> None:
    """Refresh taps (all, or NAMES) from their origin, then reindex the ones that changed."""
    with open_hub(config) as hub:
        report = hub.update(names)
    if as_json:
        emit_json(report.to_dict())
        return
    for u in report.updated:
        if u.error:
            warn(f"{u.tap}: failed — {u.error}")
        elif u.changed:
            click.echo(f"{u.tap}: {(u.old or 'new')[:12]} → {str(u.new)[:12]}")
        else:
            click.echo(f"{u.tap}: up to date")
    click.echo(f"{report.changed} changed · " + _reindex_line(report.report))


@main.command("reindex")
@click.option(
    "--dense/--lexical",
    default=None,
    help="Add embeddings (remembered), or go back to the lexical index only.",
)
@click.option("--force", is_flag=True, help="Rebuild every tap, even unchanged ones.")
@config_option
@json_option
@fail_cleanly
def reindex_cmd(dense: bool | None, force: bool, config: Path | None, as_json: bool) -> None:
    """Index every tap; taps whose git commit did not change are reused."""
    with open_hub(config) as hub:
        report = hub.reindex(dense=dense, force=force)
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(_reindex_line(report))


@main.group("skills")
def skills_group() -> None:
    """Search, list, inspect and discover skills (the same tools the MCP server offers)."""


def _check(tool: str, args: Arguments) -> None:
    """Refuse what the MCP tool would refuse, with the same message."""
    validate_arguments(get_tool(tool), args)


@skills_group.command("search")
@click.argument("query")
@click.option("-n", "--limit", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--smart", is_flag=True, default=None, help="LLM rerank of the shortlist.")
@click.option(
    "--include-low-confidence",
    "low",
    is_flag=True,
    help="Show the closest skills even when none matches the task well.",
)
@config_option
@json_option
@fail_cleanly
def search_cmd(
    query: str, limit: int, smart: bool | None, low: bool, config: Path | None, as_json: bool
) -> None:
    """Find the best skill for QUERY across every tap (none, with a note, when no skill
    matches it well)."""
    _check("skill_search", {"query": query, "limit": limit})
    with open_hub(config) as hub:
        data = hub.search(query, limit, smart=True if smart else None, include_low_confidence=low)
    data = data.with_hint("add --include-low-confidence to see the closest anyway")
    if as_json:
        emit_json(data.to_dict())
        return
    click.echo(f"{len(data.results)} skills · ranker {data.ranker} · {data.took_ms} ms")
    for i, hit in enumerate(data.results, start=1):
        s, m = hit.skill, hit.match
        where = " > ".join(m.heading_path) if m else ""
        span = f":{m.line_range[0]}-{m.line_range[1]}" if m else ""
        source = m.source_file if m else s.path
        click.echo(one_line(f"{i:>2}. {s.id}  ({s.name})  {source}{span}  {where}"))
        snippet = one_line((m.snippet if m else "") or s.description)
        click.echo(textwrap.indent(textwrap.fill(snippet, 96), "    "))
    for note in data.notes:
        warn(f"note: {note}")


@skills_group.command("list")
@config_option
@json_option
@fail_cleanly
def list_cmd(config: Path | None, as_json: bool) -> None:
    """Every skill of every tap."""
    with open_hub(config) as hub:
        data = hub.list_skills()
        taps = len(hub.list_taps()) if not data.skills else None
    if as_json:
        emit_json(data.to_dict())
    else:
        for r in data.skills:
            click.echo(one_line(f"{r.id:<60} {r.description[:80]}"))
    if taps == 0:
        click.echo("warning: no taps — add one with `ep-mcp tap owner/repo`", err=True)
    elif taps:
        click.echo(
            f"warning: {taps} tap(s) but no skills — run `ep-mcp taps` to see errors, "
            "then `ep-mcp update` or `ep-mcp reindex`",
            err=True,
        )


@skills_group.command("info")
@click.argument("name")
@config_option
@json_option
@fail_cleanly
def info_cmd(name: str, config: Path | None, as_json: bool) -> None:
    """Describe the skill NAME (`tap:name` when several taps have one)."""
    _check("skill_info", {"name": name})
    with open_hub(config) as hub:
        data = hub.info(name)
    if as_json:
        emit_json(data.to_dict())
        return
    s = data.skill
    for key, value in (("id", s.id), ("name", s.name), ("tap", s.tap), ("path", s.path)):
        click.echo(one_line(f"{key}: {value}"))
    click.echo(one_line(f"description: {s.description}"))
    click.echo("files: " + ", ".join(one_line(f) for f in data.files))


@skills_group.command("read")
@click.argument("name")
@click.option("--offset", type=click.IntRange(0), default=0)
@config_option
@json_option
@fail_cleanly
def read_cmd(name: str, offset: int, config: Path | None, as_json: bool) -> None:
    """Print the SKILL.md of NAME (bounded; a cut is announced on stderr)."""
    _check("skill_read", {"name": name, "offset": offset})
    with open_hub(config) as hub:
        data = hub.read(name, offset=offset)
    if as_json:
        emit_json(data.to_dict())
        return
    click.echo(data.text, nl=False)
    if data.truncated:  # the tool's note names skill_read; here the command does it
        end = data.offset + len(data.text)
        click.echo(
            f"[truncated at {end} of {data.total_chars} characters — read the rest with "
            f"`ep-mcp skills read {data.skill.tap}:{data.skill.name} --offset {end}`]",
            err=True,
        )


@skills_group.command("discover")
@click.argument("query")
@click.option("-n", "--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@config_option
@json_option
@fail_cleanly
def discover_cmd(query: str, limit: int, config: Path | None, as_json: bool) -> None:
    """Search GitHub for SKILL.md files matching QUERY (needs the `gh` CLI)."""
    _check("skill_discover_github", {"query": query, "limit": limit})
    with open_hub(config) as hub:
        data = hub.discover(query, limit)
    if as_json:
        emit_json(data.to_dict())
        return
    for r in data.results:
        click.echo(one_line(f"{r.repository:<40} {r.path}   → {r.tap}"))


@bench.command("skills")
@click.option(
    "--skills-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("../shared/skills"),
    show_default=True,
)
@click.option(
    "--golden",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("tests/golden"),
    show_default=True,
)
@click.option("--modes", default="lexical,dense,hybrid", show_default=True)
@click.option("--scale/--no-scale", default=False, help="Also run the 20-tap scale check.")
@click.option("--quality/--no-quality", default=True)
@click.option(
    "--match",
    "match",
    is_flag=True,
    help="Also choose the no-skill-matches floor on the dev queries and report it on test.",
)
@click.option(
    "--absent",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="With --match: a golden file of tasks for skills no tap has "
    "(tests/hub/data/absent-skills.yaml); reports how many still get a skill.",
)
@click.option(
    "--work",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep repositories and indexes here (default: a temp folder).",
)
@config_option
@json_option
@fail_cleanly
def bench_skills_cmd(
    skills_root: Path,
    golden: Path,
    modes: str,
    scale: bool,
    quality: bool,
    match: bool,
    absent: Path | None,
    work: Path | None,
    config: Path | None,
    as_json: bool,
) -> None:
    """Hub ranking quality (hit@1/hit@5/MRR per mode), with --match the no-match floor chosen
    on dev and its effect on test, and with --scale reindex/search times."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.bench import hub as hub_bench

    settings = resolve_settings(config)
    out: dict[str, Any] = {}  # the bench's report: loose JSON, rendered below
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="ep-bench-skills-") as tmp:
        base = work or Path(tmp)
        if quality:
            out["quality"] = hub_bench.quality(
                skills_root, golden, base / "quality", settings, os.environ, mode_list
            )
        if match:
            # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
            from ep_mcp.bench import hub_match

            dense = any(m != "lexical" for m in mode_list)
            tapped, _, _ = hub_bench.tap_golden(
                skills_root, base / "quality", settings, os.environ, dense
            )
            out["match"] = hub_match.report(
                tapped, os.environ, golden, [m for m in mode_list if m != "dense"], absent=absent
            )
        if scale:
            out["scale"] = hub_bench.scale(base / "scale", settings, os.environ)
    if as_json:
        emit_json(out)
        return
    q = out.get("quality", {})
    for mode in ("lexical", "dense", "hybrid"):
        if mode in q:
            row = q[mode]
            click.echo(
                f"{mode:<8} all {row['all']}  name {row['name-shaped']}  "
                f"problem {row['problem-shaped']}  negatives {row['negatives']}  "
                f"p50 {row['p50_ms']} ms"
            )
    for mode, row in out.get("match", {}).items():
        for key in ("chosen_on_dev", "test_at_chosen", "test_at_configured",
                    "test_without_unknown_penalty"):  # fmt: skip
            click.echo(f"match {mode:<8} {key:<19} {row[key]}")
    if "scale" in out:
        click.echo(f"scale: {out['scale']}")
