"""The reference implementation's config.yaml (research/ep-mcp.md §4.10) works unchanged."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from conftest import wait_healthy
from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError
from fake_provider import serve

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]

PACK = {
    "manifest.yaml": "slug: garden\nname: Garden notes\ntype: product\n",
    "tomatoes.md": "---\ntitle: Growing tomatoes\ntype: howto\n---\n# Growing tomatoes\n\n"
    "Tomatoes need full sun, deep watering and a sturdy stake.\n",
    "compost.md": "---\ntitle: Making compost\ntype: concept\n---\n# Making compost\n\n"
    "Mix green and brown material; turn the heap monthly so it stays aerobic.\n",
}


def reference_config(tmp_path: Path, endpoint: str = "https://example.openai.azure.com") -> Path:
    """A config file written to the reference's documented schema, every section present."""
    pack = tmp_path / "garden"
    pack.mkdir()
    for name, text in PACK.items():
        (pack / name).write_text(text, encoding="utf-8")
    path = tmp_path / "config.yaml"
    path.write_text(
        f"""\
server:
  host: "127.0.0.1"
  port: 8000
  log_level: "info"
  dev_mode_watch: false
  query_log_path: null
  mcp_allowed_hosts: [localhost, "localhost:*", 127.0.0.1, "127.0.0.1:*"]
  mcp_allowed_origins: ["https://claude.ai"]
packs:
  - slug: garden
    path: {pack}
    api_keys: []
    index_dir: {tmp_path / "index"}
    graph_expansion_enabled: true
    graph_expansion_confidence_threshold: null
    graph_expansion_min_score: null
    graph_expansion_structural_bonus: null
embedding:
  provider: azure-openai
  model: text-embedding-3-small
  output_dimensionality: 8
  azure_endpoint: {endpoint}
  azure_api_key: sk-reference-canary
  azure_api_version: "2024-10-21"
  azure_deployment: garden-embed
retrieval:
  vector_weight: 0.7
  text_weight: 0.3
  candidate_multiplier: 8
  mmr_enabled: true
  mmr_lambda: 0.95
  min_score: 0.35
  default_max_results: 10
  adaptive_threshold: true
  activation_floor: 0.15
  score_ratio: 0.55
  absolute_floor: 0.20
  type_match_boost: 0.05
  tag_match_boost: 0.03
  always_tier_boost: 0.03
  length_penalty_threshold: 80
  length_penalty_factor: 0.15
  bm25_cap: 0.7
  intent_routing_enabled: false
  max_chunks_per_file: 2
  graph_expansion_enabled: false
  graph_expansion_depth: 2
  graph_expansion_discount: 0.85
  graph_expansion_min_score: 0.20
  graph_expansion_reserved_slots: 2
  requires_expansion_enabled: true
reranker:
  enabled: false
  model: cross-encoder/ms-marco-MiniLM-L-6-v2
  candidate_pool_size: 20
  max_chars: 512
  batch_size: 32
""",
        encoding="utf-8",
    )
    return path


def test_a_reference_config_maps_its_keys_to_ours_and_names_the_rest_in_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ep_mcp.config.compat"):
        s = load_settings(reference_config(tmp_path))
    assert (s.server.log_level, s.server.watch) == ("INFO", False)
    assert s.server.mcp_allowed_hosts[1] == "localhost:*"
    assert (s.embedding.provider, s.embedding.model, s.embedding.dimension) == (
        "azure-openai",
        "garden-embed",
        8,
    )
    assert s.embedding.endpoint == "https://example.openai.azure.com"
    assert s.embedding.api_key == "sk-reference-canary"
    assert s.embedding.api_version == "2024-10-21"
    assert (s.retrieval.mmr, s.retrieval.intent_routing, s.retrieval.graph_depth) == (
        True,
        False,
        2,
    )
    assert (s.retrieval.length_penalty_chars, s.retrieval.length_penalty) == (80, 0.15)
    assert s.reranker.pool == 20
    # same names, other scale: a reference file keeps our measured values
    assert s.retrieval.activation_floor == 0.416
    assert s.retrieval.score_ratio == 0.0
    (warning,) = [r.getMessage() for r in caplog.records]
    for key in (
        "retrieval.min_score",
        "retrieval.bm25_cap",
        "retrieval.activation_floor",
        "reranker.batch_size",
        "packs[].graph_expansion_enabled",
    ):
        assert key in warning
    assert "graph_expansion_min_score" not in warning  # null: nothing to ignore
    assert "sk-reference-canary" not in repr(s)


def test_a_reference_key_with_a_typo_is_still_an_error_with_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("server: {dev_mode_wach: true}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did you mean dev_mode_watch"):
        load_settings(path)


def test_our_own_activation_floor_is_ours_outside_a_reference_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("retrieval: {activation_floor: 0.3}\n", encoding="utf-8")
    assert load_settings(path).retrieval.activation_floor == 0.3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_config_serves_a_reference_config_over_http_unchanged(tmp_path: Path) -> None:
    with serve() as fake:
        config = reference_config(tmp_path, endpoint=fake.url)
        port = free_port()
        log = tmp_path / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_OPENAI")}
        with log.open("wb") as out:
            # the reference README's command, plus a free port for the test
            proc = subprocess.Popen(
                [*CLI, "serve", "--config", str(config), "--port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**env, "EP_MCP_HOME": str(tmp_path / "home")},
            )
            base = f"http://127.0.0.1:{port}"
            try:
                wait_healthy(base, proc, log, 90)
                found = httpx2.get(f"{base}/search", params={"q": "tomatoes sun"}, timeout=30)
                assert found.status_code == 200, found.text
                assert "tomatoes.md" in found.text
                refused = httpx2.get(f"{base}/health", headers={"Host": "evil.example"})
                assert refused.status_code in (400, 421)
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        assert fake.seen, "the Azure deployment was never asked for a vector"
        assert fake.seen[0].path.startswith(
            "/openai/deployments/garden-embed/embeddings?api-version=2024-10-21"
        )
        assert fake.seen[0].headers["api-key"] == "sk-reference-canary"
        assert "accepted but without effect" in log.read_text()
        assert "sk-reference-canary" not in log.read_text()
