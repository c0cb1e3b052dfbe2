"""Live reload: edits, additions and deletions are served within seconds; queries keep
being answered while a pack is re-indexed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.library.watch import PackWatcher
from ep_mcp.packs.reading import find_document
from ep_mcp.retrieval.types import SearchRequest


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> bool:  # bounds a hang only
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def files_for(rt: PackRuntime, query: str) -> list[str]:
    return [h.source_file for h in rt.search(SearchRequest(query=query, k=5)).hits]


def test_edits_additions_and_deletions_are_served_after_reload(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    lib = open_library(settings, settings.home)
    rt = lib.get("beta")
    watcher = PackWatcher(lib, debounce_ms=100)
    watcher.start()
    try:
        assert watcher.ready.wait(10)
        beta = fresh_packs["beta"]
        (beta / "gardening.md").write_text("# Gardening\n\nZebras eat the tomatoes.\n")
        assert wait_for(lambda: "gardening.md" in files_for(rt, "zebras"))
        (beta / "orchids.md").write_text("# Orchids\n\nOrchids like bright indirect light.\n")
        assert wait_for(lambda: "orchids.md" in files_for(rt, "orchids indirect light"))
        (beta / "compost.md").unlink()
        # the index commits before the new Pack is swapped in: wait for both
        assert wait_for(
            lambda: (
                "compost.md" not in files_for(rt, "compost greens browns")
                and rt.pack.document("compost.md") is None
            )
        )
        assert watcher.reloads >= 1
    finally:
        watcher.stop()
        lib.close()


class GatedEmbedder(HashingEmbedder):
    """Blocks document embedding until released, to hold a reload mid-way."""

    def __init__(self) -> None:
        super().__init__(64)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.gate = False

    def embed_documents(self, texts: Sequence[str]) -> Any:
        if self.gate:
            self.entered.set()
            assert self.release.wait(20)
        return super().embed_documents(texts)


def test_queries_are_answered_from_the_last_good_index_during_a_reload(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    embedder = GatedEmbedder()
    lib = open_library(settings, settings.home, embedder=embedder)
    rt = lib.get("beta")
    try:
        (fresh_packs["beta"] / "compost.md").write_text("# Compost\n\nWorms love coffee.\n")
        embedder.gate = True
        worker = threading.Thread(target=rt.reload)
        worker.start()
        assert embedder.entered.wait(20)
        # mid-reload: the old pack and index still answer
        assert "compost.md" in files_for(rt, "greens browns air")
        assert "greens" in find_document(rt.pack, "compost.md").text
        embedder.release.set()
        worker.join(20)
        assert not worker.is_alive()
        assert "compost.md" in files_for(rt, "worms coffee")
        assert "Worms" in find_document(rt.pack, "compost.md").text
    finally:
        embedder.release.set()
        lib.close()
