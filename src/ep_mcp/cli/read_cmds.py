"""Reading a pack from the shell, as the tools do: read (ep_read), topics (ep_list_topics),
graph (ep_graph_traverse). The pack is read from disk; no index is opened."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ep_mcp.cli.app import config_option, emit_json, fail_cleanly, json_option, main
from ep_mcp.cli.pack_cmds import pack_argument, pack_settings
from ep_mcp.errors import QueryError

if TYPE_CHECKING:
    from ep_mcp.packs.models import Pack
    from ep_mcp.packs.reading_results import DocumentRead, Topics, Traversal


def load_one(pack: Path, config: Path | None) -> Pack:
    """PACK as the server reads it: slug, kind and file-size limit from --config when given."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.packs.loader import load_pack

    settings = pack_settings(pack, None, None, config)
    entry = settings.packs[0]
    return load_pack(
        entry.path,
        kind=entry.kind,
        slug=entry.slug,
        max_file_bytes=settings.index.max_file_bytes,
    )


@main.command("read")
@pack_argument
@click.argument("path", required=False)
@click.option(
    "--id", "doc_id", help="A frontmatter id (or a fragment id from search) instead of PATH."
)
@click.option("--section", help="Only this section: a heading or a heading path 'A > B'.")
@click.option("--neighbors", is_flag=True, help="With --section: the sections around it too.")
@click.option("--reconstruct", is_flag=True, help="With --json: byte offsets and span hashes.")
@config_option
@json_option
@fail_cleanly
def read_cmd(
    pack: Path,
    path: str | None,
    doc_id: str | None,
    section: str | None,
    neighbors: bool,
    reconstruct: bool,
    config: Path | None,
    as_json: bool,
) -> None:
    """Print the file PATH of PACK exactly as it is (frontmatter included), or one --section.

    List the files with `ep-mcp topics PACK`. --json answers what the ep_read tool answers.
    """
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.packs.reading import ReadRequest, find_document

    # ep_read's own checks (no call_tool here: the CLI reads the pack from disk, no index)
    try:
        request = ReadRequest.from_args(
            {"path": path, "id": doc_id, "section": section, "neighbors": neighbors,
             "reconstruct": reconstruct}
        )  # fmt: skip
    except QueryError as exc:  # the tool's words, as a usage error (exit 2)
        raise click.UsageError(str(exc)) from None
    loaded = load_one(pack, config)
    if request.section is None and not as_json:  # byte for byte, as it is on disk
        click.echo(find_document(loaded, request.path, request.doc_id).text, nl=False)
        return
    read = request.read(loaded)
    if as_json:
        emit_json(read.to_dict())
    else:
        click.echo(render_read(read), nl=False)


def render_read(read: DocumentRead) -> str:
    """One section as written; with neighbours, every part in file order under a header."""
    if read.neighbors is None:
        return read.span.text
    me = (read.section or (), read.span)
    parts = sorted([me, *((n.heading_path, n.span) for n in read.neighbors)],
                   key=lambda part: part[1].line_range)  # fmt: skip
    out = []
    for heading, span in parts:
        first, last = span.line_range
        mark = "" if (heading, span) != me else "  ◀"
        out.append(f"==> {read.doc.path}:{first}-{last}  {' > '.join(heading)}{mark} <==\n")
        out.append(span.text if span.text.endswith("\n") else span.text + "\n")
    return "".join(out)


@main.command("topics")
@pack_argument
@click.option("--type", "doc_type", help="Only files of this frontmatter type.")
@config_option
@json_option
@fail_cleanly
def topics_cmd(pack: Path, doc_type: str | None, config: Path | None, as_json: bool) -> None:
    """List the files of PACK by frontmatter type, with their titles (like ep_list_topics)."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.packs.reading import list_topics

    topics = list_topics(load_one(pack, config), doc_type)
    if as_json:
        emit_json(topics.to_dict())
    else:
        click.echo(render_topics(topics))


def render_topics(topics: Topics) -> str:
    files = sum(len(t.files) for t in topics.topics)
    lines = [f"{topics.pack} ({topics.kind}): {files} files"]
    for topic in topics.topics:
        lines.append(f"\n{topic.type} ({len(topic.files)})")
        width = max(len(f.path) for f in topic.files)
        for f in topic.files:
            nav = "  [navigation]" if f.navigation else ""
            lines.append(f"  {f.path:<{width}}  {f.title}{nav}")
    return "\n".join(lines)


@main.command("graph")
@pack_argument
@click.argument("start")
@click.option("--depth", type=click.IntRange(1, 3), default=1, show_default=True,
              help="Hops to follow, in both directions.")  # fmt: skip
@click.option("--edge-kind", "edge_kinds", multiple=True,
              help="Only edges of this kind (repeatable): wikilink, related, ...")  # fmt: skip
@config_option
@json_option
@fail_cleanly
def graph_cmd(
    pack: Path,
    start: str,
    depth: int,
    edge_kinds: tuple[str, ...],
    config: Path | None,
    as_json: bool,
) -> None:
    """Files linked to START (a file path or node id of PACK), like ep_graph_traverse."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.packs.reading import traverse

    walk = traverse(load_one(pack, config), start, depth, edge_kinds)
    if as_json:
        emit_json(walk.to_dict())
    else:
        click.echo(render_traversal(walk))


def render_traversal(walk: Traversal) -> str:
    lines = [f"{walk.start} (depth {walk.depth}): {len(walk.nodes)} files, {len(walk.edges)} links"]
    width = max(len(n.path) for n in walk.nodes)
    for node in walk.nodes:
        kind = f"  ({node.type})" if node.type else ""
        lines.append(f"  {node.depth}  {node.path:<{width}}  {node.title}{kind}")
    if walk.edges:
        lines.append("links:")
        lines.extend(f"  {e.source} → {e.target}  ({e.kind})" for e in walk.edges)
    return "\n".join(lines)
