"""Every `fragment_id` that ep_search returns opens with ep_read, at the section it came from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from ep_mcp.config.load import load_settings
from ep_mcp.serve.mcp.server import build_server

FILLER = "Plain words to make the section long enough to stand as its own chunk. " * 6

SECTIONS = {
    "v2.0 API": "apiversion endpoints",
    "Café & crème: naïve façade!": "cafeword pastries",
    "`ep_search` options (beta)": "searchoption flags",
    "C++ / C# interop": "interopword bindings",
    "日本語の見出し": "nihongoword text",
    "Setup": "setupalpha wiring",
    "!!!": "bangword nothing",
}


def _tricky_doc() -> str:
    parts = ["---\ntitle: Release notes\nid: tricky/notes\n---\n# Release notes\n\nIntro.\n"]
    for title, words in SECTIONS.items():
        parts.append(f"## {title}\n\n{words} {FILLER}\n")
    # duplicate headings: the same name at the same level, and under two parents
    parts.append(f"## Setup\n\nsetupbeta second {FILLER}\n")
    parts.append(f"## Linux\n\n### Install\n\ninstallalpha linux {FILLER}\n")
    parts.append(f"## Windows\n\n### Install\n\ninstallbeta windows {FILLER}\n")
    return "\n".join(parts)


QUERIES = [
    *(words.split()[0] for words in SECTIONS.values()),
    "setupbeta",
    "installalpha",
    "installbeta",
    "release notes intro",
]


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ep_mcp.serve.app import open_context

    root = tmp_path_factory.mktemp("tricky")
    pack = root / "tricky"
    pack.mkdir()
    (pack / "notes.md").write_text(_tricky_doc(), encoding="utf-8")
    (pack / "plain.md").write_text(f"# Plain\n\nNo front matter here. {FILLER}\n", "utf-8")
    settings = load_settings(
        data={
            "packs": [{"path": str(pack), "slug": "tricky"}],
            "embedding": {"provider": "hashing"},
            "index": {"max_tokens": 64},
            "retrieval": {"max_chunks_per_file": 20},
            "server": {"watch": False},
        }
    )
    ctx, _ = open_context(dataclasses.replace(settings, home=root / "home"))
    yield ctx
    ctx.library.close()


def test_every_search_fragment_id_opens_with_read_at_its_section(serve: Any) -> None:
    async def go() -> dict[str, dict[str, Any]]:
        opened: dict[str, dict[str, Any]] = {}
        async with Client(build_server(serve)) as c:
            for query in QUERIES:
                args = {"query": query, "reconstruct": True, "max_results": 50}
                found = await c.call_tool("ep_search", args)
                assert not found.is_error, found.content
                for hit in found.structured_content["results"]:
                    read = await c.call_tool("ep_read", {"id": hit["fragment_id"]})
                    assert not read.is_error, (hit["fragment_id"], read.content)
                    data = read.structured_content
                    assert data["path"] == hit["source_file"]
                    first, last = data["line_range"]
                    assert first <= hit["line_range"][0] <= hit["line_range"][1] <= last, hit
                    if data["section"] is not None:  # "top": no heading, or one with no word
                        assert data["section"][-1] == hit["heading_path"][-1]
                    opened[hit["fragment_id"]] = data
        return opened

    opened = anyio.run(go)
    anchors = {f.split("#")[1].split(":")[0] for f in opened}
    assert {"v20-api", "cafe-creme-naive-facade", "ep-search-options-beta"} <= anchors
    assert {"c-c-interop", "日本語の見出し", "setup", "install", "top"} <= anchors
    two_setups = {tuple(d["line_range"]) for f, d in opened.items() if "#setup:" in f}
    two_installs = {tuple(d["line_range"]) for f, d in opened.items() if "#install:" in f}
    assert len(two_setups) == 2 and len(two_installs) == 2


def test_read_writes_the_same_fragment_spelling_as_search(serve: Any) -> None:
    async def go() -> None:
        async with Client(build_server(serve)) as c:
            read = await c.call_tool(
                "ep_read", {"id": "tricky/notes", "section": "v2.0 API", "reconstruct": True}
            )
            fragment = read.structured_content["fragment_id"]
            assert fragment.startswith("tricky/notes#v20-api:")
            again = await c.call_tool("ep_read", {"id": fragment})
            assert again.structured_content["section"] == ["Release notes", "v2.0 API"]

    anyio.run(go)


@pytest.mark.parametrize(
    "args",
    [
        {"id": "tricky/notes#v2-0-api"},  # the spelling ep_read wrote before
        {"path": "notes.md#v20-api"},
        {"id": "tricky/notes", "section": "v20-api"},
        {"path": "notes.md", "section": "v2-0-api"},
    ],
)
def test_read_accepts_anchors_old_and_new(serve: Any, args: dict[str, str]) -> None:
    async def go() -> None:
        async with Client(build_server(serve)) as c:
            read = await c.call_tool("ep_read", args)
            assert not read.is_error, read.content
            assert read.structured_content["section"] == ["Release notes", "v2.0 API"]

    anyio.run(go)


def test_a_top_fragment_opens_the_whole_file(serve: Any) -> None:
    async def go() -> None:
        async with Client(build_server(serve)) as c:
            read = await c.call_tool("ep_read", {"path": "notes.md#top:0123456789ab"})
            assert not read.is_error, read.content
            assert read.structured_content["section"] is None

    anyio.run(go)
