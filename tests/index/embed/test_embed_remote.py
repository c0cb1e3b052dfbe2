"""HTTP providers against a fake provider server on 127.0.0.1 (no real sleeping, bounded waits)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed import create_embedder
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.index.embed.providers import (
    PROVIDERS,
    AzureOpenAIEmbedder,
    GeminiEmbedder,
    OpenAIEmbedder,
    VoyageEmbedder,
)
from ep_mcp.index.embed.remote import HttpEmbedder, parse_retry_after
from fake_provider import FakeProvider, serve

KEY = "sk-test-SECRET-5f2a9c"
KEYED = sorted(name for name, cls in PROVIDERS.items() if cls.key_required)  # a key to send
ENV_VARS = {
    "openai": "OPENAI_API_KEY",
    "azure-openai": "AZURE_OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "voyage": "VOYAGE_API_KEY",
    "openai-compatible": "EP_MCP_EMBEDDING_API_KEY",  # optional: a local server may want one
}


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with serve() as fake:
        yield fake


def make(
    provider: str, base: str, sleeps: list[float] | None = None, **spec_fields: Any
) -> HttpEmbedder:
    model = {"model": "nomic-embed-text"} if provider == "openai-compatible" else {}
    fields = {"dimension": 8, **model, **spec_fields}
    spec = EmbeddingSpec(provider=provider, endpoint=base, **fields)
    record = sleeps.append if sleeps is not None else (lambda _s: None)
    return PROVIDERS[provider](spec, {ENV_VARS[provider]: KEY}, sleep=record, jitter=lambda: 0.5)


@pytest.mark.parametrize("provider", KEYED)
def test_each_provider_embeds_with_the_key_in_a_header(server: FakeProvider, provider: str) -> None:
    with make(provider, server.url) as embedder:
        matrix = embedder.embed_documents(["alpha", "beta", "gamma"])
        query = embedder.embed_query("delta")

    assert matrix.shape == (3, 8)
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(query), 1.0, atol=1e-6)
    assert matrix[0, 0] < matrix[1, 0] < matrix[2, 0]  # input order, whatever the reply's order

    documents, queries = server.seen
    for request in server.seen:
        assert KEY not in request.path
    headers = documents.headers
    if provider == "azure-openai":
        assert headers["api-key"] == KEY
        assert "authorization" not in headers
        assert documents.path == (
            "/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21"
        )
        assert documents.body == {
            "input": ["alpha", "beta", "gamma"],
            "encoding_format": "float",
            "dimensions": 8,
        }
    elif provider == "gemini":
        assert headers["x-goog-api-key"] == KEY
        assert "authorization" not in headers
        assert documents.path == "/models/gemini-embedding-001:batchEmbedContents"
        first = documents.body["requests"][0]
        assert first["model"] == "models/gemini-embedding-001"
        assert first["content"] == {"parts": [{"text": "alpha"}]}
        assert first["outputDimensionality"] == 8
        assert first["taskType"] == "RETRIEVAL_DOCUMENT"
        assert queries.body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    else:
        assert headers["authorization"] == f"Bearer {KEY}"
        assert documents.path == "/embeddings"
        assert documents.body["input"] == ["alpha", "beta", "gamma"]
        if provider == "openai":
            assert documents.body["model"] == "text-embedding-3-small"
            assert documents.body["dimensions"] == 8
        else:
            assert documents.body["model"] == "voyage-3-lite"
            assert documents.body["output_dimension"] == 8
            assert documents.body["input_type"] == "document"
            assert queries.body["input_type"] == "query"


def test_default_dimensions_are_not_sent(server: FakeProvider) -> None:
    server.dimension = 512
    with make("voyage", server.url, dimension=None) as embedder:
        assert embedder.dimension == 512
        assert embedder.embed_query("x").shape == (512,)
    assert "output_dimension" not in server.seen[0].body


def test_azure_reads_its_endpoint_from_the_environment(server: FakeProvider) -> None:
    spec = EmbeddingSpec(provider="azure-openai", model="my-embeddings", dimension=8)
    env = {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": server.url + "/"}
    with AzureOpenAIEmbedder(spec, env) as embedder:
        embedder.embed_query("x")
    assert server.seen[0].path.startswith("/openai/deployments/my-embeddings/embeddings?")
    with pytest.raises(EmbeddingError, match="AZURE_OPENAI_ENDPOINT is not set"):
        AzureOpenAIEmbedder(spec, {"AZURE_OPENAI_API_KEY": KEY})


def test_large_inputs_are_sent_in_provider_sized_batches(server: FakeProvider) -> None:
    texts = [f"text {i}" for i in range(OpenAIEmbedder.max_batch + 5)]
    with make("openai", server.url) as embedder:
        matrix = embedder.embed_documents(texts)
    assert matrix.shape == (len(texts), 8)
    assert [len(s.body["input"]) for s in server.seen] == [OpenAIEmbedder.max_batch, 5]
    assert make("gemini", server.url).max_batch == GeminiEmbedder.max_batch <= 100
    assert embedder.embed_documents([]).shape == (0, 8)


def test_a_429_is_retried_after_the_requested_wait(server: FakeProvider) -> None:
    server.script = [("status", (429, {"Retry-After": "2"}, "slow down"))]
    sleeps: list[float] = []
    with make("openai", server.url, sleeps) as embedder:
        assert embedder.embed_query("x").shape == (8,)
    assert len(server.seen) == 2
    assert sleeps == [pytest.approx(2.05)]


def test_server_errors_back_off_then_give_up(server: FakeProvider) -> None:
    server.script = [("status", (500, {}, "boom"))] * 10
    sleeps: list[float] = []
    with (
        make("voyage", server.url, sleeps, retries=3) as embedder,
        pytest.raises(EmbeddingError, match=r"after 4 attempt\(s\): HTTP 500"),
    ):
        embedder.embed_query("x")
    assert len(server.seen) == 4
    assert sleeps == [0.5, 1.0, 2.0]  # exponential (jitter pinned to its midpoint)


def test_a_long_retry_after_fails_at_once(server: FakeProvider) -> None:
    server.script = [("status", (429, {"Retry-After": "3600"}, "quota"))]
    sleeps: list[float] = []
    with (
        make("gemini", server.url, sleeps) as embedder,
        pytest.raises(EmbeddingError, match="3600s"),
    ):
        embedder.embed_query("x")
    assert sleeps == []


def test_a_timeout_is_an_embedding_error(server: FakeProvider) -> None:
    server.script = [("hang", 5.0)]
    with (
        make("openai", server.url, timeout_s=0.2, retries=0) as embedder,
        pytest.raises(EmbeddingError, match=r"timed out after 0\.2s"),
    ):
        embedder.embed_query("x")


def test_an_unreachable_endpoint_is_an_embedding_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps: list[float] = []
    with (
        make("openai", f"http://127.0.0.1:{port}", sleeps, retries=1) as embedder,
        pytest.raises(EmbeddingError, match="could not connect"),
    ):
        embedder.embed_query("x")
    assert len(sleeps) == 1


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_wrong_dimension_is_an_embedding_error(server: FakeProvider, provider: str) -> None:
    server.script = [("dim", 5)]
    with (
        make(provider, server.url) as embedder,
        pytest.raises(EmbeddingError, match="returned 5-dimensional vectors, expected 8"),
    ):
        embedder.embed_query("x")


def test_a_malformed_reply_is_an_embedding_error(server: FakeProvider) -> None:
    server.script = [("status", (200, {}, '{"data": "nope"}'))]
    with make("openai", server.url) as embedder, pytest.raises(EmbeddingError, match="unexpected"):
        embedder.embed_query("x")
    server.script = [("status", (200, {}, "<html>"))]
    with make("openai", server.url) as embedder, pytest.raises(EmbeddingError, match="not JSON"):
        embedder.embed_query("x")
    server.script = [("status", (200, {}, "[" * 200_000 + "]" * 200_000))]  # past recursion
    with make("openai", server.url) as embedder, pytest.raises(EmbeddingError, match="not JSON"):
        embedder.embed_query("x")


def test_a_refusal_is_not_retried_and_names_what_to_check(server: FakeProvider) -> None:
    server.script = [("status", (401, {}, '{"error": "bad key"}'))]
    sleeps: list[float] = []
    with (
        make("openai", server.url, sleeps) as embedder,
        pytest.raises(EmbeddingError, match=r"HTTP 401.*check OPENAI_API_KEY"),
    ):
        embedder.embed_query("x")
    assert sleeps == []


@pytest.mark.parametrize("provider", KEYED)
def test_a_missing_key_says_which_variable_to_set(provider: str) -> None:
    spec = EmbeddingSpec(provider=provider, endpoint="http://127.0.0.1:9", dimension=8)
    variable = ENV_VARS[provider]
    with pytest.raises(EmbeddingError) as caught:
        create_embedder(spec, {})
    assert str(caught.value) == (
        f"{variable} is not set — export it or set embedding.provider: local"
    )


def test_a_custom_key_variable_is_honoured() -> None:
    spec = EmbeddingSpec(provider="openai", api_key_env="MY_KEY")
    embedder = create_embedder(spec, {"MY_KEY": KEY})
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == "openai/text-embedding-3-small"
    assert embedder.dimension == 1536


def test_an_unknown_model_needs_an_explicit_dimension() -> None:
    spec = EmbeddingSpec(provider="voyage", model="voyage-next")
    with pytest.raises(EmbeddingError, match=r"set embedding\.dimension"):
        VoyageEmbedder(spec, {"VOYAGE_API_KEY": KEY})


def test_the_key_never_reaches_a_log_or_an_error(
    server: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    messages: list[str] = []
    echo = json.dumps({"error": f"Incorrect API key provided: {KEY}"})
    scripts: list[list[tuple[str, Any]]] = [
        [],
        [("status", (429, {"Retry-After": "0"}, echo))],
        [("status", (503, {}, echo))] * 5,
        [("status", (401, {}, echo))],
        [("status", (400, {}, echo))],
        [("dim", 3)],
    ]
    for provider in sorted(PROVIDERS):
        for script in scripts:
            server.script = list(script)
            with make(provider, server.url, retries=2) as embedder:
                try:
                    embedder.embed_documents(["a", "b"])
                except EmbeddingError as exc:
                    messages.append(str(exc))
                    assert exc.__cause__ is None or KEY not in str(exc.__cause__)
    server.script = [("hang", 5.0)]
    with make("gemini", server.url, timeout_s=0.2, retries=0) as embedder:
        with pytest.raises(EmbeddingError) as caught:
            embedder.embed_query("x")
        messages.append(str(caught.value))

    assert any("***" in message for message in messages)  # the echoed key was scrubbed
    assert len(messages) == len(PROVIDERS) * 4 + 1
    assert all(KEY not in message for message in messages)
    assert caplog.records, "retries should have logged warnings"
    for record in caplog.records:
        assert KEY not in record.getMessage()
        assert (
            not record.name.startswith(("httpx", "httpcore")) or record.levelno >= logging.WARNING
        )


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("3", 3.0),
        ("0.5", 0.5),
        ("-4", 0.0),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 60.0),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date(
    header: str | None, seconds: float | None
) -> None:
    now = 1445412420.0  # 60 s before the date above
    assert parse_retry_after(header, now=now) == seconds
