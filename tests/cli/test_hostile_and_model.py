"""A pack of hostile files through the CLI; and the real local model on a tiny pack."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from conftest import seed_compiled_model

from .conftest import as_json

Ep = Callable[..., Result]

LAUGHS = "".join(
    f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS
BAD = {  # file → what its warning says
    "bomb.md": "expand",
    "deep.md": "nested deeper",
    "bad-utf8.md": "not valid UTF-8",
    "binary.md": "binary",
    "huge.md": "limit",
    "escape.md": "outside the pack",
    "bad\ufffd.md": "not valid UTF-8",
}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "hostile"
    root.mkdir()
    (root / "good.md").write_text(
        "---\ntitle: Good\ntype: concept\n---\n# Good\n\nQuokkas smile.\n", encoding="utf-8"
    )
    (root / "also-good.md").write_text("# Also good\n\nWombats dig.\n", encoding="utf-8")
    (root / "bomb.md").write_text(f"---\n{BOMB}---\n# Bomb\n", encoding="utf-8")
    (root / "deep.md").write_text(
        "---\nx: " + "[" * 30_000 + "]" * 30_000 + "\n---\n# Deep\n", encoding="utf-8"
    )
    (root / "bad-utf8.md").write_bytes(b"# Bad\n\xff\xfe text\n")
    (root / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (root / "huge.md").write_text("# Huge\n" + "x" * 2_100_000, encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n", encoding="utf-8")
    (root / "escape.md").symlink_to(outside)
    fd = os.open(os.fsencode(root) + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    return root


def test_index_of_a_hostile_pack_exits_0_and_warns_once_per_bad_file(ep: Ep, hostile: Path) -> None:
    result = ep("index", hostile, "--provider", "hashing", "--json")
    assert result.exit_code == 0
    assert as_json(result)["files"] == 2
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == len(BAD)
    for name, reason in BAD.items():
        assert sum(f"warning: {name}:" in w and reason in w for w in warnings) == 1, name
    hits = as_json(ep("search", hostile, "quokkas wombats", "--provider", "hashing", "--json"))
    assert {h["source_file"] for h in hits["results"]} == {"good.md", "also-good.md"}


def test_validate_lists_each_bad_file_and_exits_1(ep: Ep, hostile: Path) -> None:
    result = ep("validate", hostile)
    assert result.exit_code == 1
    for name in BAD:
        assert f"{name}:" in result.stdout, name


def test_the_local_model_finds_the_right_file_for_a_natural_language_question(
    ep: Ep, make_pack: Callable[..., Path], compiled_model: Path
) -> None:
    seed_compiled_model(Path(os.environ["EP_MCP_HOME"]), compiled_model)  # not about the compile
    pack = make_pack(
        {
            "kettle.md": "# Descaling a kettle\n\nBoil a mix of water and white vinegar, "
            "leave it for an hour, then rinse twice to remove limescale.\n",
            "bike.md": "# Fixing a puncture\n\nLever the tyre off the rim, "
            "find the hole in the inner tube, roughen the rubber and apply a patch.\n",
            "tax.md": "# Filing a tax return\n\nGather your income statements and receipts, then "
            "submit the form online before the January deadline.\n",
        }
    )
    # a three-file pack gives the answerability model little to go on (no rare term is shared):
    # ask for the hits whatever its estimate, then check what the model ranked first
    question = "how do I repair a flat bicycle tire"
    result = ep("search", pack, question, "--json", "--include-low-confidence")
    assert result.exit_code == 0, result.stderr
    found = as_json(result)
    assert found["mode"] in ("hybrid", "vector")  # no word is shared: the model finds it
    assert found["results"][0]["source_file"] == "bike.md"
    assert 0.0 <= found["answerable"] <= 1.0
