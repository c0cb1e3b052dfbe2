"""A damaged index found when the server starts is rebuilt words first: nothing is embedded
before the handshake; the backfill embeds afterwards, as after a fresh build."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ep_mcp.bench.reliability import DAMAGE
from ep_mcp.index.embed import HashingEmbedder, Matrix
from ep_mcp.library.opening import finish_build, open_library
from ep_mcp.retrieval.types import SearchRequest


class Counting(HashingEmbedder):
    """The hashing fake, counting the documents it embeds."""

    documents = 0

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self.documents += len(texts)
        return super().embed_documents(texts)


def damaged_beta(packs: dict[str, Path], settings: Any, embedder: Any = "auto") -> Path:
    """beta indexed whole, vectors included, then its index file damaged; returns the file."""
    open_library(settings, settings.home, embedder=embedder).close()
    path = packs["beta"] / ".ep-mcp" / "index.db"
    assert path.is_file()
    DAMAGE["zeroed header"](path)
    return path


def test_a_damaged_index_met_on_opening_is_rebuilt_without_embedding_then_backfilled(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    embedder = Counting(64)
    path = damaged_beta(fresh_packs, settings, embedder)
    embedder.documents = 0
    lib = open_library(settings, settings.home, embedder=embedder, build="later", words_first=True)
    try:
        rt = lib.get("beta")
        counts = rt.store.counts()
        assert embedder.documents == 0  # the rebuild before the handshake embedded nothing
        assert counts["chunks"] > 0 and counts["pending"] == counts["chunks"]
        assert list(path.parent.glob("index.db.corrupt-*")), "the damaged file is kept aside"
        finish_build(lib)
        hits = rt.search(SearchRequest("compost greens browns", k=3)).hits
        assert hits and hits[0].source_file == "compost.md"  # answered by words meanwhile
        report = rt.backfill()
        assert report is not None and embedder.documents == counts["chunks"]
        assert rt.store.counts()["pending"] == 0
        assert rt.build_state()["phase"] == "ready"
    finally:
        lib.close()


def test_the_cli_build_still_rebuilds_a_damaged_index_whole(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    settings = settings_for(fresh_packs)
    embedder = Counting(64)
    damaged_beta(fresh_packs, settings, embedder)
    # `ep-mcp index`: build now, vectors included
    lib = open_library(settings, settings.home, embedder=embedder)
    try:
        assert lib.get("beta").store.counts()["pending"] == 0
    finally:
        lib.close()


def test_a_worker_meeting_a_damaged_index_rebuilds_it_with_its_vectors(
    fresh_packs: dict[str, Path], settings_for: Any
) -> None:
    """`--workers` processes have no backfill: a vector left pending there would stay so."""
    import dataclasses

    from starlette.testclient import TestClient

    from ep_mcp.serve.app import worker_app

    base = settings_for(fresh_packs)
    settings = dataclasses.replace(
        base, embedding=dataclasses.replace(base.embedding, provider="local")
    )
    path = damaged_beta(fresh_packs, settings)  # what the parent built, then damaged
    app = worker_app(settings)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        index = client.get("/health").json()["index"]
    assert index["pending"] == 0 and index["phase"] == "ready", index
    assert list(path.parent.glob("index.db.corrupt-*")), "the damaged file is kept aside"
