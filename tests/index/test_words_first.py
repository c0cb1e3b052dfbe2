"""A words-first build commits the words at once and leaves the vectors to a later build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ep_mcp.index.builder import build_index
from ep_mcp.index.embed import HashingEmbedder
from ep_mcp.index.store import Store
from ep_mcp.packs.loader import load_pack

PACK = {
    "lava.md": "# Lava\n\nBasalt lava flows far.\n",
    "salt.md": "# Salt\n\nSea salt dries in pans.\n",
}


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.documents = 0

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.documents += len(texts)
        return super().embed_documents(texts)


def words(text: str) -> int:
    return len(text.split())


def test_a_words_first_build_embeds_nothing_answers_by_words_and_the_next_build_embeds_all(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    pack = load_pack(make_pack(PACK))
    store = Store(tmp_path / "i.sqlite")
    embedder = Counting()
    first = build_index(pack, store, embedder, words, words_first=True)
    assert embedder.documents == 0
    assert first.chunks == first.pending == 2 and first.embedded == 0
    assert not store.has_vectors()
    assert store.lexical_top(("basalt",), 5)  # found by its words at once
    seen: list[tuple[int, int]] = []
    second = build_index(pack, store, embedder, words, observer=lambda d, t: seen.append((d, t)))
    assert second.pending == 0 and second.embedded == 2 and second.changed == 0
    assert embedder.documents == 2 and store.has_vectors()
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)
    store.close()


def test_a_words_first_build_takes_what_the_embedding_cache_has_and_leaves_only_new_text(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    root = make_pack(PACK)
    store = Store(tmp_path / "i.sqlite")
    build_index(load_pack(root), store, Counting(), words)
    (root / "salt.md").write_text("# Salt\n\nSea salt dries in pans. Flakes form.\n")
    embedder = Counting()
    # a settings change forces a full rebuild: lava's text is unchanged, its vector is cached
    report = build_index(load_pack(root), store, embedder, words, max_tokens=900, words_first=True)
    assert report.rebuilt and report.chunks == 2
    assert report.pending == 1 and embedder.documents == 0  # only the edited text waits
    assert store.has_vectors()
    store.close()
