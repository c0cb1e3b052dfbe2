"""`read`, `topics` and `graph`: the pack tools from the shell, worded for the shell."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.reading import list_topics, read_document, traverse

from .conftest import as_json

Ep = Callable[..., Result]
LINKED = {
    "a.md": "---\ntitle: A\ntype: concept\n---\n# A\n\nSee [[b]].\n\n## One\n\nfirst\n\n"
    "## Two\n\nsecond\n\n## Three\n\nthird\n",
    "b.md": "---\ntitle: B\ntype: howto\n---\n# B\n\nSee [[c]].\n",
    "c.md": "---\ntitle: C\ntype: howto\n---\n# C\n\nThe end.\n",
}


def test_plain_read_is_byte_exact(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "tomatoes.md")
    assert result.exit_code == 0
    assert result.stdout == (small_pack / "tomatoes.md").read_text(encoding="utf-8")


def test_read_a_section_prints_only_that_section(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "tomatoes.md", "--section", "Pruning")
    assert result.exit_code == 0
    assert (
        result.stdout == "## Pruning\n\nPinch out the side shoots of cordon tomatoes every week.\n"
    )


def test_read_json_is_what_ep_read_answers(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "tomatoes.md", "--section", "Pruning", "--json")
    expected = read_document(load_pack(small_pack), path="tomatoes.md", section="Pruning")
    assert as_json(result) == expected.to_dict()


def test_read_by_id_and_with_neighbors_in_file_order(
    ep: Ep, make_pack: Callable[..., Path]
) -> None:
    pack = make_pack(LINKED, name="linked")
    result = ep("read", pack, "a.md", "--section", "Two", "--neighbors")
    assert result.exit_code == 0
    headers = [line for line in result.stdout.splitlines() if line.startswith("==> ")]
    assert [h.split("  ")[1].removesuffix(" <==") for h in headers] == [
        "A > One",
        "A > Two",
        "A > Three",
    ]
    assert headers[1].endswith("◀ <==")
    by_path = ep("read", pack, "--id", "a.md", "--section", "One", "--json")
    assert as_json(by_path)["section"] == ["A", "One"]


def test_read_refuses_neighbors_without_a_section_as_usage(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "tomatoes.md", "--neighbors")
    assert result.exit_code == 2
    assert "`neighbors` needs `section`" in result.stderr  # ep_read's words


def test_a_missing_file_names_cli_commands_not_tools(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "nope.md")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "`ep-mcp topics PACK`" in result.stderr
    assert "ep_list_topics" not in result.stderr


def test_topics_lists_files_by_type_and_json_matches_the_tool(ep: Ep, small_pack: Path) -> None:
    result = ep("topics", small_pack)
    assert result.exit_code == 0
    assert "howto (1)" in result.stdout and "tomatoes.md" in result.stdout
    assert "Growing tomatoes" in result.stdout
    data = as_json(ep("topics", small_pack, "--type", "concept", "--json"))
    assert data == list_topics(load_pack(small_pack), "concept").to_dict()


def test_topics_with_an_unknown_type_lists_the_types(ep: Ep, small_pack: Path) -> None:
    result = ep("topics", small_pack, "--type", "howtos")
    assert result.exit_code == 1
    assert "howto" in result.stderr and "concept" in result.stderr


def test_graph_walks_links_both_ways(ep: Ep, make_pack: Callable[..., Path]) -> None:
    pack = make_pack(LINKED, name="linked")
    result = ep("graph", pack, "b.md", "--json")
    assert as_json(result) == traverse(load_pack(pack), "b.md", 1).to_dict()
    assert {n["path"] for n in as_json(result)["nodes"]} == {"a.md", "b.md", "c.md"}
    deeper = ep("graph", pack, "a.md", "--depth", "2")
    assert deeper.exit_code == 0 and "c.md" in deeper.stdout and "links:" in deeper.stdout


def test_graph_from_an_unknown_start_names_the_topics_command(ep: Ep, small_pack: Path) -> None:
    result = ep("graph", small_pack, "nowhere")
    assert result.exit_code == 1
    assert "`ep-mcp topics PACK`" in result.stderr


def test_config_sets_the_slug_of_the_pack(ep: Ep, small_pack: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"packs:\n  - {{ path: {small_pack}, slug: plot }}\n", encoding="utf-8")
    assert as_json(ep("topics", small_pack, "--config", config, "--json"))["pack"] == "plot"


def test_read_topics_and_graph_in_a_real_process(
    small_pack: Path, make_pack: Callable[..., Path]
) -> None:
    linked = make_pack(LINKED, name="linked")
    command = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]
    for args, wanted in (
        (["read", str(small_pack), "tomatoes.md", "--section", "Pruning"], "## Pruning"),
        (["topics", str(small_pack)], "garden (expertpack)"),
        (["graph", str(linked), "a.md"], "b.md"),
    ):
        proc = subprocess.run(
            [*command, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy()
        )
        assert proc.returncode == 0, proc.stderr
        assert wanted in proc.stdout
