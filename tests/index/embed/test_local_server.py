"""`openai-compatible`: a local embedding server (Ollama, llama.cpp, vLLM, TEI) by base URL, with
no key, against a fake server on 127.0.0.1 — the provider alone, then `ep-mcp index` and
`ep-mcp search` end to end, and a server that hangs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed import create_embedder
from ep_mcp.index.embed.base import EmbeddingSpec
from fake_provider import FakeProvider, serve

PACK = {
    "volcanoes.md": "# Volcanoes\n\nMagma rises through the crust and erupts as lava.\n",
    "bread.md": "# Bread\n\nSourdough needs a lively starter and a long proof.\n",
}


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with serve() as fake:
        yield fake


def spec(base: str, **fields: object) -> EmbeddingSpec:
    values: dict[str, object] = {
        "provider": "openai-compatible",
        "endpoint": f"{base}/v1",
        "model": "nomic-embed-text",
        "dimension": 8,
        **fields,
    }
    return EmbeddingSpec(**values)  # type: ignore[arg-type]


def test_a_local_server_embeds_without_a_key_and_without_dimensions(
    server: FakeProvider,
) -> None:
    embedder = create_embedder(spec(server.url), {})
    assert embedder is not None and embedder.name == "openai-compatible/nomic-embed-text"
    matrix = embedder.embed_documents(["lava", "bread"])
    assert matrix.shape == (2, 8)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)
    sent = server.seen[0]
    assert sent.path == "/v1/embeddings"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "nomic-embed-text",
        "input": ["lava", "bread"],
        "encoding_format": "float",
    }


def test_a_key_is_sent_when_the_server_wants_one(server: FakeProvider) -> None:
    embedder = create_embedder(spec(server.url), {"EP_MCP_EMBEDDING_API_KEY": "sk-local"})
    assert embedder is not None
    embedder.embed_query("lava")
    assert server.seen[0].headers["authorization"] == "Bearer sk-local"


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("endpoint", r"embedding\.endpoint is not set — give the server's base URL"),
        ("model", r"embedding\.model is not set"),
        ("dimension", r"set embedding\.dimension"),
    ],
)
def test_what_a_local_server_needs_is_named(missing: str, message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        create_embedder(spec("http://127.0.0.1:9", **{missing: None}), {})


@pytest.fixture
def pack(make_pack: Callable[..., Path]) -> Path:
    root: Path = make_pack(PACK, name="notes")
    return root


def write_config(tmp_path: Path, pack: Path, base: str) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"packs: [{json.dumps(str(pack))}]\n"
        "embedding:\n"
        "  provider: openai-compatible\n"
        f"  endpoint: {base}/v1\n"
        "  model: nomic-embed-text\n"
        "  dimension: 8\n"
        "  query_timeout_s: 0.5\n"
        "  timeout_s: 0.5\n"
        "  retries: 0\n",
        encoding="utf-8",
    )
    return config


def search(config: Path, pack: Path, query: str) -> dict[str, object]:
    out = CliRunner().invoke(main, ["search", str(pack), query, "--config", str(config), "--json"])
    assert out.exit_code == 0, out.output
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_index_and_search_go_hybrid_through_a_local_server(
    server: FakeProvider, pack: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path, pack, server.url)
    built = CliRunner().invoke(main, ["index", str(pack), "--config", str(config)])
    assert built.exit_code == 0, built.output
    documents = len(server.seen)
    assert documents >= 1 and all(s.path == "/v1/embeddings" for s in server.seen)
    result = search(config, pack, "lava")
    assert result["mode"] == "hybrid"
    assert len(server.seen) == documents + 1  # one query embedding, nothing re-embedded


def test_a_hanging_local_server_leaves_the_query_lexical(
    server: FakeProvider, pack: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path, pack, server.url)
    assert CliRunner().invoke(main, ["index", str(pack), "--config", str(config)]).exit_code == 0
    server.down("hang")
    try:
        result = search(config, pack, "sourdough starter")
    finally:
        server.up()
    assert str(result["mode"]).startswith("lexical")
    hits = result["results"]
    assert isinstance(hits, list) and hits[0]["source_file"] == "bread.md"
