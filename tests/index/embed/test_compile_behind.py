"""A server's local model: named before its graph is compiled (the words-first build does not
wait for the compile), and settled on the graph that really runs before any vector is made."""

from __future__ import annotations

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
