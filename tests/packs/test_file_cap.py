"""`index.max_file_bytes` to the byte: a file of exactly the cap is read and indexed, one byte
more is skipped with its one warning (which names the setting to raise)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ep_mcp.config.model import IndexSettings, PackSettings, Settings
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.library.opening import open_library
from ep_mcp.packs.loader import load_pack

CAP = 1000


def _file(word: str, size: int) -> str:
    """A markdown file of exactly ``size`` bytes (ASCII) that mentions ``word``."""
    head = f"# {word.title()}\n\nThis file is about {word}.\n\n"
    return head + "x" * (size - len(head) - 1) + "\n"


def _pack(make_pack: Callable[[dict[str, str]], Path]) -> Path:
    files = {
        "under.md": _file("aardvark", CAP - 1),
        "at.md": _file("zeppelin", CAP),
        "over.md": _file("quokka", CAP + 1),
    }
    root = make_pack(files)
    assert {p.name: p.stat().st_size for p in root.glob("*.md")} == {
        "under.md": CAP - 1,
        "at.md": CAP,
        "over.md": CAP + 1,
    }
    return root


def test_a_file_of_exactly_the_cap_is_read_and_one_byte_more_is_skipped_with_a_warning(
    make_pack: Callable[[dict[str, str]], Path],
) -> None:
    pack = load_pack(_pack(make_pack), slug="cap", max_file_bytes=CAP)
    assert sorted(d.path for d in pack.documents) == ["at.md", "under.md"]
    assert [str(w) for w in pack.warnings] == [
        f"over.md: file is {CAP + 1} bytes, over the {CAP}-byte limit — skipped; "
        "raise index.max_file_bytes to include it"
    ]


def test_the_index_holds_the_file_of_exactly_the_cap_and_not_the_one_over(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = _pack(make_pack)
    home = tmp_path / "home"
    settings = Settings(
        packs=(PackSettings(path=root, slug="cap"),),
        index=IndexSettings(max_file_bytes=CAP),
        home=home,
    )
    lib = open_library(settings, home, build=False, embedder=HashingEmbedder(16))
    try:
        rt = lib.get()
        report = rt.index()
        assert report.files == 2
        assert sorted(f.path for f in rt.store.files()) == ["at.md", "under.md"]
        ids = [cid for cid, _ in rt.store.lexical_top(["zeppelin"], 5)]
        assert ids, "the file of exactly the cap is searchable"
        assert not rt.store.lexical_top(["quokka"], 5)
    finally:
        lib.close()
