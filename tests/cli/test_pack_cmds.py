"""`ep-mcp index / search / read / validate / doctor` as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from .conftest import SMALL_PACK, as_json

Ep = Callable[..., Result]
HIT_FIELDS = {"source_file", "heading_path", "line_range", "score", "content_hash", "text"}


def test_index_reports_files_and_chunks_and_where_the_index_is(ep: Ep, small_pack: Path) -> None:
    result = ep("index", small_pack, "--provider", "hashing")
    assert result.exit_code == 0
    assert result.stdout.startswith("garden: 3 files, ")
    assert str(small_pack / ".ep-mcp" / "index.db") in result.stdout
    assert result.stderr == ""


def test_search_json_has_the_fields_agents_cite(ep: Ep, small_pack: Path) -> None:
    result = ep("search", small_pack, "tomato side shoots", "--provider", "hashing", "--json")
    assert result.exit_code == 0, result.stderr
    hits = as_json(result)["results"]
    assert hits and set(hits[0]) >= HIT_FIELDS
    assert hits[0]["source_file"] == "tomatoes.md"
    start, end = hits[0]["line_range"]
    lines = SMALL_PACK["tomatoes.md"].splitlines(keepends=True)
    assert "".join(lines[start - 1 : end]) == hits[0]["text"]
    assert "_index.md" not in {h["source_file"] for h in hits}


def test_search_prints_numbered_hits_with_file_and_lines(ep: Ep, small_pack: Path) -> None:
    result = ep("search", small_pack, "compost heap", "--provider", "hashing", "-n", "2")
    assert result.exit_code == 0
    assert " 1. compost.md:" in result.stdout


def test_read_prints_the_file_exactly(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "compost.md")
    assert result.exit_code == 0
    assert result.stdout == SMALL_PACK["compost.md"]


def test_reading_a_file_outside_the_pack_is_a_user_error(ep: Ep, small_pack: Path) -> None:
    result = ep("read", small_pack, "../../etc/passwd")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_validate_a_clean_pack_exits_0(ep: Ep, small_pack: Path) -> None:
    result = ep("validate", small_pack)
    assert result.exit_code == 0, result.stdout
    assert "0 problem(s)" in result.stdout


def test_validate_a_real_pack_names_the_standard_files_it_asked_no_frontmatter_of(
    ep: Ep, tmp_path: Path
) -> None:
    from conftest import shared_path

    pack = Path(shutil.copytree(shared_path("packs", "blender-3d"), tmp_path / "blender-3d"))
    result = ep("validate", pack)
    assert result.exit_code == 0, result.stdout
    assert "not asked for frontmatter (standard ExpertPack files that carry none): TOOLS.md" in (
        result.stdout
    )
    assert "0 problem(s)" in result.stdout
    assert ep("validate", pack, "--json").stdout.count('"TOOLS.md"') == 1


def test_index_and_validate_both_report_an_unclosed_frontmatter_block(
    ep: Ep, small_pack: Path
) -> None:
    (small_pack / "open.md").write_text("---\ntitle: Open\n\n# Open\n\nBody.\n", "utf-8")
    said = "open.md:1: frontmatter opened at line 1 is never closed"
    indexed = ep("index", small_pack, "--provider", "hashing")
    assert indexed.exit_code == 0 and said in indexed.stderr
    validated = ep("validate", small_pack)
    assert validated.exit_code == 1 and said in validated.stdout
    assert "no frontmatter" not in validated.stdout


def test_a_missing_pack_folder_is_one_line_and_exit_1(ep: Ep, tmp_path: Path) -> None:
    for command in (["index"], ["search"], ["validate"]):
        args = [*command, tmp_path / "nowhere"] + (["q"] if command == ["search"] else [])
        result = ep(*args)
        assert result.exit_code == 1, (command, result.output)
        assert result.stderr.startswith("error: no pack folder at ")
        assert result.stderr.count("\n") == 1


def test_bad_usage_exits_2(ep: Ep, small_pack: Path) -> None:
    assert ep("search", small_pack).exit_code == 2  # QUERY missing
    assert ep("index", small_pack, "--no-such-flag").exit_code == 2
    assert ep("search", small_pack, "q", "-n", "0").exit_code == 2


def test_doctor_json_lists_each_check(ep: Ep) -> None:
    result = ep("doctor", "--json")
    assert result.exit_code == 0
    names = {c["name"]: c for c in as_json(result)}
    assert {"ep-mcp", "python", "sqlite (apsw)", "fts5", "sqlite-vec", "local model"} <= set(names)
    assert names["fts5"]["ok"]


def test_search_works_as_a_real_process(small_pack: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ep_mcp.cli import main; main()",
            "search",
            str(small_pack),
            "bumblebees lavender",
            "--provider",
            "hashing",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"][0]["source_file"] == "bees.md"
