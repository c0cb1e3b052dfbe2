"""Re-indexing does only the work a change needs, and the index always matches the folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.embed import HashingEmbedder, Matrix
from ep_mcp.library.opening import open_library
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval.types import SearchRequest

PACK = {
    "alpha.md": "---\ntitle: Alpha\ntype: concept\ntags: [one]\n---\n# Alpha\n\nAlpha talks about "
    "volcanoes and lava flows.\n",
    "beta.md": "---\ntitle: Beta\ntype: howto\n---\n# Beta\n\nBeta explains sourdough bread "
    "baking.\n",
    "gamma.md": "# Gamma\n\nGamma covers tidal pools and starfish.\n\n## Crabs\n\nHermit crabs "
    "swap shells.\n",
    "_index.md": "# Index\n\n- [Alpha](alpha.md) volcanoes sourdough starfish\n",
    "manifest.yaml": "slug: tiny\nname: Tiny\ntype: product\n",
}


class CountingEmbedder:
    """The hashing fake, counting the texts it is asked to embed."""

    def __init__(self, dimension: int = 64) -> None:
        self.inner = HashingEmbedder(dimension)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self.texts.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Matrix:
        return self.inner.embed_query(text)


@pytest.fixture
def pack(make_pack: Callable[[dict[str, str]], Path]) -> Path:
    return make_pack(PACK)


@contextmanager
def opened(root: Path, embedder: CountingEmbedder, home: Path) -> Iterator[PackRuntime]:
    settings = Settings(packs=(PackSettings(path=root),), home=home)
    lib = open_library(settings, home, build=False, embedder=embedder)
    try:
        yield lib.get()
    finally:
        lib.close()


def paths(rt: PackRuntime, query: str) -> list[str]:
    """Files whose text matches the query's words (the lexical leg: the vector leg ranks all)."""
    ids = [cid for cid, _ in rt.store.lexical_top(query.split(), 10)]
    found = rt.store.chunks_by_ids(ids)
    return list(dict.fromkeys(found[i].file.path for i in ids if i in found))


def hit_paths(rt: PackRuntime, query: str) -> list[str]:
    return [h.source_file for h in rt.search(SearchRequest(query=query, k=10)).hits]


def test_a_second_index_embeds_nothing(pack: Path, tmp_path: Path) -> None:
    emb = CountingEmbedder()
    with opened(pack, emb, tmp_path) as rt:
        first = rt.index()
        assert first.embedded == first.chunks == 3
        emb.texts.clear()
        second = rt.index()
    assert (second.changed, second.embedded, second.removed) == (0, 0, 0)
    assert emb.texts == []


def test_editing_one_body_re_embeds_only_that_file(pack: Path, tmp_path: Path) -> None:
    emb = CountingEmbedder()
    with opened(pack, emb, tmp_path) as rt:
        rt.index()
        emb.texts.clear()
        path = pack / "beta.md"
        path.write_text(path.read_text().replace("sourdough", "rye"), encoding="utf-8")
        report = rt.index()
        assert (report.changed, report.embedded) == (1, 1)
        assert len(emb.texts) == 1 and "rye" in emb.texts[0]
        assert paths(rt, "rye") == ["beta.md"]
        assert "beta.md" not in paths(rt, "sourdough")


def test_a_frontmatter_only_edit_reindexes_the_file_but_reuses_its_vectors(
    pack: Path, tmp_path: Path
) -> None:
    emb = CountingEmbedder()
    with opened(pack, emb, tmp_path) as rt:
        rt.index()
        emb.texts.clear()
        path = pack / "alpha.md"
        path.write_text(
            path.read_text()
            .replace("tags: [one]", "tags: [two, three]")
            .replace("title: Alpha", "title: Alpha Renamed"),
            encoding="utf-8",
        )
        report = rt.index()
        assert (report.changed, report.embedded, report.reused) == (1, 0, 1)
        assert emb.texts == []
        hit = rt.search(SearchRequest(query="volcanoes lava", k=3)).hits[0]
    assert (hit.source_file, hit.title, hit.tags) == ("alpha.md", "Alpha Renamed", ("two", "three"))


def test_a_sidecar_change_reindexes_its_file(pack: Path, tmp_path: Path) -> None:
    digest = load_pack(pack).document("gamma.md").content_hash  # type: ignore[union-attr]
    sidecar = pack / "gamma.chunks.yaml"

    def write_sidecar(first_end: int) -> None:
        sidecar.write_text(
            f"schema_version: '1.0'\ncontent_hash: {digest}\nchunks:\n"
            f"- {{chunk_id: a, chunk_order: 0, section: null, line_range: [1, {first_end}]}}\n"
            f"- {{chunk_id: b, chunk_order: 1, section: Crabs, "
            f"line_range: [{first_end + 1}, 7]}}\n",
            encoding="utf-8",
        )

    write_sidecar(4)
    emb = CountingEmbedder()
    with opened(pack, emb, tmp_path) as rt:
        rt.index()
        before = [c.chunk.line_range for c in rt.store.chunks_for_path("gamma.md")]
        write_sidecar(3)
        report = rt.index()
        after = [c.chunk.line_range for c in rt.store.chunks_for_path("gamma.md")]
    assert before == [(1, 4), (5, 7)]
    assert report.changed == 1 and after == [(1, 3), (4, 7)]


def test_deleting_a_file_removes_its_hits(pack: Path, tmp_path: Path) -> None:
    emb = CountingEmbedder()
    with opened(pack, emb, tmp_path) as rt:
        rt.index()
        assert paths(rt, "starfish") == ["gamma.md"]
        (pack / "gamma.md").unlink()
        report = rt.index()
        assert report.removed == 1
        assert paths(rt, "starfish hermit crabs") == []
        assert "gamma.md" not in {f.path for f in rt.store.files()}


def test_a_different_embedder_forces_a_rebuild_and_records_its_features(
    pack: Path, tmp_path: Path
) -> None:
    with opened(pack, CountingEmbedder(64), tmp_path) as rt:
        rt.index()
        assert rt.store.features()["dimension"] == 64
    emb = CountingEmbedder(32)
    with opened(pack, emb, tmp_path) as rt:
        report = rt.index()
        features = rt.store.features()
        assert report.rebuilt and report.embedded == 3
        assert hit_paths(rt, "volcanoes lava")[0] == "alpha.md"
    assert features["embedder"] == "fake/hashing-32"
    assert features["dimension"] == 32
    assert features["format"] >= 1
    assert {"max_tokens", "prefix_template"} <= set(features)


def test_navigation_files_are_indexed_never(pack: Path, tmp_path: Path) -> None:
    with opened(pack, CountingEmbedder(), tmp_path) as rt:
        rt.index()
        assert "_index.md" not in {f.path for f in rt.store.files()}
        assert "_index.md" not in hit_paths(rt, "volcanoes sourdough starfish")
        assert "_index.md" not in paths(rt, "volcanoes sourdough starfish")
