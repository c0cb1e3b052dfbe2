"""The real local model, on a handful of sentences (one session per graph for the module)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed import local, optimize
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.index.embed.local import LocalEmbedder, count_tokens, count_tokens_batch

TRIPLES = [
    (
        "How do I reset my router to factory settings?",
        "Hold the reset button on the back of the router for ten seconds to restore defaults.",
        "Sourdough bread needs a long, slow fermentation to develop its flavour.",
    ),
    (
        "Which battery chemistry is safest for a home solar system?",
        "Lithium iron phosphate (LiFePO4) cells are the safest choice for home solar storage.",
        "The knight moves in an L shape on the chessboard.",
    ),
    (
        "How do I add a keyframe in Blender?",
        "Press I over a property in Blender to insert a keyframe for the current frame.",
        "Tax returns are due on the fifteenth of April in the United States.",
    ),
]

SOLAR = "Solar panels convert sunlight into electricity through the photovoltaic effect. "
KITCHEN = "The recipe calls for butter, flour, sugar, eggs and a pinch of salt for the cake. "


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def embedder(cache_dir: Path) -> LocalEmbedder:
    model = LocalEmbedder(EmbeddingSpec(cache_dir=cache_dir))  # the default graph in production
    model.embed_query("warm up")  # builds the optimised graph once and loads its session
    return model


@pytest.fixture(scope="module")
def packaged() -> LocalEmbedder:
    return LocalEmbedder(EmbeddingSpec(model="all-MiniLM-L6-v2-int8", batch_size=2))


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def test_the_embedder_reports_which_graph_it_runs(
    embedder: LocalEmbedder, packaged: LocalEmbedder
) -> None:
    assert embedder.name == "local/all-MiniLM-L6-v2-int8-dq"
    assert packaged.name == "local/all-MiniLM-L6-v2-int8"
    assert LocalEmbedder().name == "local/all-MiniLM-L6-v2-int8"  # no cache folder: packaged
    assert embedder.dimension == packaged.dimension == 384


def test_the_optimised_graph_is_cached_verified_and_close_to_the_packaged_one(
    embedder: LocalEmbedder, packaged: LocalEmbedder, cache_dir: Path
) -> None:
    (model_file,) = cache_dir.glob("minilm-l6-dq-*.onnx")
    assert model_file.with_suffix(".json").is_file()
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no temp files left
    texts = [t for triple in TRIPLES for t in triple]
    fast, exact = embedder.embed_documents(texts), packaged.embed_documents(texts)
    assert float(np.mean(np.sum(fast * exact, axis=1))) > 0.99

    model_file.write_bytes(b"damaged")  # a damaged cache file is rebuilt, not loaded
    again = LocalEmbedder(EmbeddingSpec(cache_dir=cache_dir))
    assert again.embed_query("hello").shape == (384,)
    assert again.name == "local/all-MiniLM-L6-v2-int8-dq"
    assert model_file.stat().st_size > 1_000_000


def test_the_graph_is_named_without_loading_it_once_built(
    embedder: LocalEmbedder, cache_dir: Path, tmp_path: Path
) -> None:
    """A restart's index check asks the name: it must not wait for the model to load."""
    built = LocalEmbedder(EmbeddingSpec(cache_dir=cache_dir))
    assert built.name == "local/all-MiniLM-L6-v2-int8-dq"
    packaged = LocalEmbedder(EmbeddingSpec(model="all-MiniLM-L6-v2-int8"))
    assert packaged.name == "local/all-MiniLM-L6-v2-int8"
    assert built._model is None and packaged._model is None
    unbuilt = LocalEmbedder(EmbeddingSpec(cache_dir=tmp_path / "empty"))
    assert unbuilt.name == "local/all-MiniLM-L6-v2-int8-dq"  # built (and loaded) to be named
    assert unbuilt._model is not None


def test_a_built_graph_that_fails_to_load_is_removed_so_the_next_start_names_the_fallback(
    embedder: LocalEmbedder,
    cache_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    for built in cache_dir.glob("minilm-l6-dq-*"):
        (folder / built.name).write_bytes(built.read_bytes())
    assert LocalEmbedder(EmbeddingSpec(cache_dir=folder)).name.endswith("-dq")

    def refuse(*args: object, **kwargs: object) -> object:
        raise RuntimeError("cannot map the graph")

    monkeypatch.setattr(optimize, "build_cached_model", refuse)
    monkeypatch.setattr(local, "_warned", True)  # the warning itself is tested above
    failing = LocalEmbedder(EmbeddingSpec(cache_dir=folder))
    assert failing.embed_query("hello").shape == (384,)
    assert failing.name == "local/all-MiniLM-L6-v2-int8"
    assert not list(folder.iterdir())
    assert LocalEmbedder(EmbeddingSpec(cache_dir=folder)).name == "local/all-MiniLM-L6-v2-int8"


def test_when_the_optimiser_fails_the_packaged_graph_runs_after_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(model: object) -> object:
        raise optimize.OptimizeError("unexpected graph")

    monkeypatch.setattr(optimize, "optimize_graph", broken)
    monkeypatch.setattr(optimize, "_built", {})  # no copy from an earlier folder to fall back on
    monkeypatch.setattr(local, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="ep_mcp.index.embed.local"):
        first = LocalEmbedder(EmbeddingSpec(cache_dir=tmp_path / "a"))
        second = LocalEmbedder(EmbeddingSpec(cache_dir=tmp_path / "b"))
        assert first.name == second.name == "local/all-MiniLM-L6-v2-int8"
        assert first.embed_query("hello").shape == (384,)
    assert len(caplog.records) == 1
    assert "unexpected graph" in caplog.text and "pip install onnx" in caplog.text
    assert not list((tmp_path / "a").glob("*.onnx"))


def test_an_unknown_local_model_name_is_refused() -> None:
    with pytest.raises(EmbeddingError, match=r"all-MiniLM-L6-v2-int8 and all-MiniLM-L6-v2-int8-dq"):
        LocalEmbedder(EmbeddingSpec(model="bge-small"))


def test_related_sentences_are_closer_than_unrelated(embedder: LocalEmbedder) -> None:
    for query, related, unrelated in TRIPLES:
        q = embedder.embed_query(query)
        docs = embedder.embed_documents([related, unrelated])
        assert cos(q, docs[0]) > cos(q, docs[1]) + 0.2


def test_rows_are_float32_unit_vectors(embedder: LocalEmbedder) -> None:
    texts = [t for triple in TRIPLES for t in triple] + ["", "x"]
    matrix = embedder.embed_documents(texts)
    assert matrix.shape == (len(texts), 384)
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("hello")
    assert query.shape == (384,)
    assert query.dtype == np.float32


def test_an_empty_batch_gives_an_empty_matrix(embedder: LocalEmbedder) -> None:
    assert embedder.embed_documents([]).shape == (0, 384)


@pytest.mark.parametrize("graph", ["embedder", "packaged"])
def test_batches_sorted_by_length_come_back_in_input_order(
    graph: str, request: pytest.FixtureRequest
) -> None:
    model: LocalEmbedder = request.getfixturevalue(graph)
    sizes = (5, 1, 9, 2, 7, 3, 1, 12, 4, 6, 2) if graph == "embedder" else (3, 1, 4, 2, 1)
    texts = [SOLAR * n if n % 2 else KITCHEN * n for n in sizes]
    together = model.embed_documents(texts)  # on two threads, in batches of 2 or one by one
    for row, text in zip(together, texts, strict=True):
        alone = model.embed_query(text)  # no padding, no neighbours
        assert cos(row, alone) > 0.9999


def test_long_texts_are_truncated_at_max_tokens_not_at_the_baked_in_128(
    embedder: LocalEmbedder, cache_dir: Path
) -> None:
    text = SOLAR * 8 + KITCHEN * 30  # solar first, then far more kitchen than 128 tokens hold
    assert count_tokens(text) > 500
    assert len(embedder.token_ids([text])[0]) == 256

    short = LocalEmbedder(EmbeddingSpec(max_tokens=128, cache_dir=cache_dir))
    assert len(short.token_ids([text])[0]) == 128
    full = embedder.embed_query(text)
    cut = short.embed_query(text)
    assert cos(full, cut) < 0.99  # the tokens past 128 changed the vector


def test_count_tokens_neither_truncates_nor_pads() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    long_text = KITCHEN * 40
    assert count_tokens(long_text) > 128
    texts = ["hello world", long_text, ""]
    assert count_tokens_batch(texts) == [count_tokens(t) for t in texts]
    assert count_tokens_batch([]) == []


def test_settings_the_model_cannot_honour_are_refused() -> None:
    with pytest.raises(EmbeddingError, match="dimension"):
        LocalEmbedder(EmbeddingSpec(dimension=768))
    with pytest.raises(EmbeddingError, match="max_tokens"):
        LocalEmbedder(EmbeddingSpec(max_tokens=1024))


def test_a_damaged_model_file_is_reported_with_what_to_do(tmp_path: Path) -> None:
    model_file = tmp_path / "model.onnx"
    model_file.write_bytes(b"not a model")
    with pytest.raises(EmbeddingError, match="reinstall"):
        local.verify_model_file(model_file, "0" * 64, len(b"not a model"))
    with pytest.raises(EmbeddingError, match="reinstall"):
        local.verify_model_file(model_file, "0" * 64, 22_928_619)
    with pytest.raises(EmbeddingError, match="missing"):
        local.verify_model_file(tmp_path / "absent.onnx", "0" * 64, 1)


def test_a_good_model_file_is_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    model_file = tmp_path / "model.onnx"
    model_file.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    calls: list[Path] = []
    real = local._sha256_file

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(local, "_sha256_file", counting)
    local.verify_model_file(model_file, digest, 7)
    local.verify_model_file(model_file, digest, 7)
    assert len(calls) == 1


def test_a_missing_runtime_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_sessions", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbeddingError, match=r"pip install ep-mcp .* embedding.provider: none"):
        LocalEmbedder().embed_query("anything")
