"""Mistakes that used to cost a run say so: filter typos, an empty pack, no taps, n=0."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ep_mcp.cli import main
from ep_mcp.errors import LIST_FILES, NotFoundError
from ep_mcp.packs.loader import load_pack
from ep_mcp.packs.reading import filter_warnings, find_document
from ep_mcp.serve.http.search_api import BadRequest, parse_params

from .conftest import as_json

Ep = Callable[..., Result]


def test_a_type_typo_warns_with_the_known_types_and_a_guess(ep: Ep, small_pack: Path) -> None:
    result = ep("search", small_pack, "tomatoes", "--type", "howtos", "--provider", "hashing")
    assert result.exit_code == 0
    assert "warning: no file of pack 'garden' has type 'howtos'" in result.stderr
    assert "did you mean 'howto'?" in result.stderr
    assert "types: concept, howto, index" in result.stderr


def test_an_unknown_tag_warns_and_known_ones_do_not(ep: Ep, small_pack: Path) -> None:
    args = ("search", small_pack, "tomatoes", "--provider", "hashing", "--json")
    result = ep(*args, "--tags", "vegetables,vegetable")
    assert result.exit_code == 0 and as_json(result)["query"] == "tomatoes"
    assert result.stderr.count("warning:") == 1
    assert "tag 'vegetable' — did you mean 'vegetables'? tags: vegetables" in result.stderr
    assert "warning" not in ep(*args, "--tags", "vegetables").stderr


def test_filter_warnings_are_empty_for_known_values(small_pack: Path) -> None:
    pack = load_pack(small_pack)
    assert filter_warnings(pack, "howto", ("vegetables",)) == ()
    assert filter_warnings(pack) == ()


def test_an_empty_pack_warns_when_indexed_searched_and_validated(
    ep: Ep, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    said = f"no markdown files in {empty.resolve()} — nothing to index"
    for args in (("index", empty, "--provider", "hashing"), ("validate", empty)):
        result = ep(*args)
        assert result.exit_code == 0
        assert result.stderr.count(said) == 1, result.stderr
    again = ep("index", empty, "--provider", "hashing")  # the no-change path warns too
    assert said in again.stderr
    with caplog.at_level(
        "WARNING", logger="ep_mcp.library.opening"
    ):  # search and serve: a log line
        assert ep("search", empty, "compost", "--provider", "hashing").exit_code == 0
    assert any(said in r.getMessage() for r in caplog.records)
    served = subprocess.run(  # stdin at EOF: the stdio server starts, warns, then ends
        [sys.executable, "-c", "from ep_mcp.cli import main; main()", "serve", str(empty),
         "--provider", "hashing", "--no-watch"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert served.returncode == 0 and said in served.stderr, served.stderr


def test_skills_list_with_no_taps_says_how_to_add_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["skills", "list"], env={"EP_MCP_HOME": str(tmp_path)})
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no taps — add one with `ep-mcp tap owner/repo`" in result.stderr


@pytest.mark.parametrize("n", ["0", "51", "-3"])
def test_http_n_out_of_range_names_n(n: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_params({"q": "x", "n": n})
    assert caught.value.status == 422
    assert str(caught.value).startswith("`n` must be between 1 and 50")


def test_errors_word_their_next_step_for_the_caller(small_pack: Path) -> None:
    with pytest.raises(NotFoundError) as caught:
        find_document(load_pack(small_pack), "nope.md")
    error = caught.value
    assert str(error).endswith("list its files with ep_list_topics or find one with ep_search")
    assert error.for_cli().endswith("`ep-mcp search PACK QUERY`")
    assert pickle.loads(pickle.dumps(error)).next_step == LIST_FILES


def test_a_filter_typo_warns_in_a_real_process(small_pack: Path) -> None:
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "from ep_mcp.cli import main; main()", "search", str(small_pack),
         "tomatoes", "--type", "consept", "--provider", "hashing"],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "did you mean 'concept'?" in proc.stderr
    assert "no results" in proc.stdout
