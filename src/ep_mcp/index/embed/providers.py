"""The HTTP embedding providers: OpenAI, Azure OpenAI, Gemini and Voyage.

Each is an `HttpEmbedder` (remote.py: batching, retries, checks) that says where to send a
batch and how to read the answer. A new HTTP provider is one subclass here, listed in
`PROVIDERS` and in the registry (registry.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.embed.base import EmbeddingSpec
from ep_mcp.index.embed.remote import HttpEmbedder, Task


class OpenAIEmbedder(HttpEmbedder):
    provider = "openai"
    key_env = "OPENAI_API_KEY"
    default_model = "text-embedding-3-small"
    default_endpoint = "https://api.openai.com/v1"
    max_batch = 128
    known_dimensions: ClassVar[dict[str, int]] = {
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }

    def _body(self, texts: list[str], task: Task) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_dimension:
            body["dimensions"] = self._dimension
        return body


class AzureOpenAIEmbedder(OpenAIEmbedder):
    """Azure OpenAI: ``model`` names the deployment; the key goes in the ``api-key`` header."""

    provider = "azure-openai"
    key_env = "AZURE_OPENAI_API_KEY"
    endpoint_env: ClassVar[str] = "AZURE_OPENAI_ENDPOINT"
    api_version: ClassVar[str] = "2024-10-21"
    default_endpoint = ""

    def _resolve_endpoint(self, spec: EmbeddingSpec, env: dict[str, str]) -> str:
        endpoint = spec.endpoint or env.get(self.endpoint_env, "").strip()
        if not endpoint:
            raise EmbeddingError(
                f"{self.endpoint_env} is not set — export it (https://<resource>.openai.azure.com) "
                "or set embedding.endpoint"
            )
        return endpoint

    def _url(self) -> str:
        return (
            f"{self.endpoint}/openai/deployments/{self.model}/embeddings"
            f"?api-version={self._api_version or self.api_version}"
        )

    def _headers(self) -> dict[str, str]:
        return {"api-key": self._key}

    def _body(self, texts: list[str], task: Task) -> dict[str, Any]:
        body = super()._body(texts, task)
        del body["model"]  # the deployment in the URL decides
        return body


class OpenAICompatibleEmbedder(OpenAIEmbedder):
    """Any server that speaks OpenAI's ``/embeddings`` — Ollama, llama.cpp's server, vLLM,
    Hugging Face TEI, LM Studio: its base URL (``embedding.endpoint``), the model it serves and
    that model's dimension; a key only when the server wants one. ``dimensions`` is never sent
    (most such servers refuse or ignore it: the model decides the size)."""

    provider = "openai-compatible"
    key_env = "EP_MCP_EMBEDDING_API_KEY"
    key_required = False
    default_model = ""
    default_endpoint = ""
    known_dimensions: ClassVar[dict[str, int]] = {}

    def __init__(self, spec: EmbeddingSpec, env: dict[str, str], **kwargs: Any) -> None:
        if not spec.endpoint:
            raise EmbeddingError(
                "embedding.endpoint is not set — give the server's base URL, e.g. "
                "http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 (llama.cpp)"
            )
        if not spec.model:
            raise EmbeddingError(
                "embedding.model is not set — name the model the server embeds with "
                "(e.g. nomic-embed-text)"
            )
        super().__init__(spec, env, **kwargs)
        self._send_dimension = False


class GeminiEmbedder(HttpEmbedder):
    """Gemini ``batchEmbedContents``; the key goes in ``x-goog-api-key``, never ``?key=``."""

    provider = "gemini"
    key_env = "GEMINI_API_KEY"
    default_model = "gemini-embedding-001"
    default_endpoint = "https://generativelanguage.googleapis.com/v1beta"
    max_batch = 100
    known_dimensions: ClassVar[dict[str, int]] = {
        "gemini-embedding-001": 3072,
        "text-embedding-004": 768,
    }

    def _url(self) -> str:
        return f"{self.endpoint}/models/{self.model}:batchEmbedContents"

    def _headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key}

    def _body(self, texts: list[str], task: Task) -> dict[str, Any]:
        task_type = "RETRIEVAL_QUERY" if task == "query" else "RETRIEVAL_DOCUMENT"
        requests = []
        for text in texts:
            request: dict[str, Any] = {
                "model": f"models/{self.model}",
                "content": {"parts": [{"text": text}]},
                "taskType": task_type,
            }
            if self._send_dimension:
                request["outputDimensionality"] = self._dimension
            requests.append(request)
        return {"requests": requests}

    def _vectors(self, payload: Any) -> list[Any]:
        return [item["values"] for item in payload["embeddings"]]


class VoyageEmbedder(HttpEmbedder):
    provider = "voyage"
    key_env = "VOYAGE_API_KEY"
    default_model = "voyage-3-lite"
    default_endpoint = "https://api.voyageai.com/v1"
    max_batch = 64
    known_dimensions: ClassVar[dict[str, int]] = {
        "voyage-3-lite": 512,
        "voyage-3": 1024,
        "voyage-3-large": 1024,
        "voyage-3.5": 1024,
        "voyage-3.5-lite": 1024,
        "voyage-code-3": 1024,
    }

    def _body(self, texts: list[str], task: Task) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "input_type": task}
        if self._send_dimension:
            body["output_dimension"] = self._dimension
        return body


PROVIDERS: dict[str, type[HttpEmbedder]] = {
    cls.provider: cls
    for cls in (
        OpenAIEmbedder,
        OpenAICompatibleEmbedder,
        AzureOpenAIEmbedder,
        GeminiEmbedder,
        VoyageEmbedder,
    )
}
