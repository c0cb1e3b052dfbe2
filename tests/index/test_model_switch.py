"""A switch to another embedding model of the same dimension re-embeds everything: the
embedding cache is keyed by the model's name too, so the old model's vectors are never reused
under the new one's name (the dimension alone cannot tell two models apart)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index.builder import BuildReport
from ep_mcp.index.embed import HashingEmbedder, Matrix
from ep_mcp.library.opening import open_library

PACK = {
    "alpha.md": "# Alpha\n\nAlpha talks about volcanoes and lava flows.\n",
    "beta.md": "# Beta\n\nBeta explains sourdough bread baking.\n",
    "gamma.md": "# Gamma\n\nGamma covers tidal pools and starfish.\n",
}
DIMENSION = 32


class ModelEmbedder:
    """Two fake models of one dimension: the hashing fake, each model's vectors rotated by
    its own amount (so they differ), counting the texts it embeds."""

    def __init__(self, model: str, shift: int) -> None:
        self.model, self.shift = model, shift
        self.inner = HashingEmbedder(DIMENSION)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return f"fake/{self.model}"

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self.texts.extend(texts)
        return np.roll(self.inner.embed_documents(texts), self.shift, axis=1)

    def embed_query(self, text: str) -> Matrix:
        return np.roll(self.inner.embed_query(text), self.shift)


def _stored_vectors(
    root: Path, home: Path, embedder: ModelEmbedder
) -> tuple[BuildReport, set[bytes]]:
    settings = Settings(packs=(PackSettings(path=root),), home=home)
    lib = open_library(settings, home, build=False, embedder=embedder)
    try:
        rt = lib.get()
        report = rt.index()
        ids = [c.id for f in rt.store.files() for c in rt.store.chunks_for_path(f.path)]
        vectors = rt.store.vectors_for(ids)
        assert len(vectors) == len(ids) == 3
        return report, _as_set(list(vectors.values()))
    finally:
        lib.close()


def _as_set(matrix: Matrix | list[Matrix]) -> set[bytes]:
    return {np.asarray(row, dtype=np.float32).round(5).tobytes() for row in matrix}


def test_a_model_of_the_same_dimension_re_embeds_every_chunk(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    home = tmp_path / "home"
    first = ModelEmbedder("model-a", 0)
    _, stored_a = _stored_vectors(root, home, first)
    assert len(first.texts) == 3

    second = ModelEmbedder("model-b", 5)
    report, stored_b = _stored_vectors(root, home, second)
    assert report.rebuilt and report.embedded == 3
    assert sorted(second.texts) == sorted(first.texts)  # every chunk, none from the cache
    assert stored_b == _as_set(np.roll(second.inner.embed_documents(second.texts), 5, axis=1))
    assert not stored_b & stored_a

    # and back: model-a's vectors are still cached under model-a's name — nothing to embed
    again = ModelEmbedder("model-a", 0)
    report, stored = _stored_vectors(root, home, again)
    assert report.rebuilt and again.texts == [] and stored == stored_a
