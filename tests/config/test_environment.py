"""The environment is read once at the edge into the settings; the core reads settings only."""

from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config.env import PROVIDER_ENDPOINT_ENV, PROVIDER_KEY_ENV, resolve_environment
from ep_mcp.config.model import EmbeddingSpec, PackSettings, Settings
from ep_mcp.errors import ConfigError
from ep_mcp.index.embed import providers as remote
from ep_mcp.serve.auth import KeyRing


def test_home_comes_from_ep_mcp_home_then_xdg(tmp_path: Path) -> None:
    assert resolve_environment(Settings(), {"EP_MCP_HOME": str(tmp_path)}).home == tmp_path
    xdg = resolve_environment(Settings(), {"XDG_DATA_HOME": str(tmp_path)}).home
    assert xdg == tmp_path / "ep-mcp"
    assert resolve_environment(Settings(home=tmp_path / "x"), {"EP_MCP_HOME": "/y"}).home == (
        tmp_path / "x"
    )


def test_eval_today_pins_today_unless_the_config_does() -> None:
    env = {"EP_EVAL_TODAY": "2026-01-02"}
    assert resolve_environment(Settings(), env).retrieval.today == "2026-01-02"
    with pytest.raises(ConfigError, match="EP_EVAL_TODAY must be a date"):
        resolve_environment(Settings(), {"EP_EVAL_TODAY": "soon"})


def test_the_provider_and_its_key_and_endpoint_come_from_the_environment() -> None:
    env = {
        "EP_MCP_EMBEDDING_PROVIDER": "azure-openai",
        "AZURE_OPENAI_API_KEY": "sk-env-canary",
        "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com",
    }
    spec = resolve_environment(Settings(), env).embedding
    assert (spec.provider, spec.api_key, spec.endpoint) == (
        "azure-openai",
        "sk-env-canary",
        "https://r.openai.azure.com",
    )
    assert "sk-env-canary" not in repr(spec)


def test_a_key_in_the_config_file_and_a_named_key_variable_win() -> None:
    file_key = Settings(embedding=EmbeddingSpec(provider="openai", api_key="sk-file"))
    assert resolve_environment(file_key, {"OPENAI_API_KEY": "sk-env"}).embedding.api_key == (
        "sk-file"
    )
    named = Settings(embedding=EmbeddingSpec(provider="openai", api_key_env="MY_KEY"))
    env = {"OPENAI_API_KEY": "sk-default", "MY_KEY": "sk-mine"}
    assert resolve_environment(named, env).embedding.api_key == "sk-mine"


def test_the_edge_knows_the_same_key_variables_as_the_embedders() -> None:
    classes = [remote.OpenAIEmbedder, remote.AzureOpenAIEmbedder, remote.GeminiEmbedder]
    classes += [remote.VoyageEmbedder, remote.OpenAICompatibleEmbedder]
    assert {c.provider: c.key_env for c in classes} == PROVIDER_KEY_ENV
    assert {
        "azure-openai": remote.AzureOpenAIEmbedder.endpoint_env,
        "openai-compatible": "EP_MCP_EMBEDDING_ENDPOINT",
    } == PROVIDER_ENDPOINT_ENV


def test_pack_and_hub_keys_from_variables_and_secret_files_reach_the_key_ring(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "beta-keys"
    secret.write_text("sk-file-1\nsk-file-2\n", encoding="utf-8")
    env = {
        "EP_MCP_KEY_ALPHA": "sk-a1, sk-a2",
        "EP_MCP_KEY_MY_PACK_FILE": str(secret),
        "EP_MCP_HUB_KEY": "sk-hub",
    }
    settings = resolve_environment(Settings(packs=(PackSettings(path=tmp_path),)), env)
    assert "sk-a1" not in repr(settings)
    ring = KeyRing.build({"alpha": [], "my-pack": ["sk-conf"]}, (), settings.env_keys)
    assert ring.keyed == {"alpha", "my-pack"}
    for key, slug in [("sk-a2", "alpha"), ("sk-file-2", "my-pack"), ("sk-conf", "my-pack")]:
        assert ring.opens(key.encode()) == {slug}
    assert ring.access(b"sk-hub", [], hub=True).hub


def test_an_unreadable_secret_file_says_which_variable_names_it(tmp_path: Path) -> None:
    env = {"EP_MCP_KEY_ALPHA_FILE": str(tmp_path / "missing")}
    with pytest.raises(ConfigError, match=r"EP_MCP_KEY_ALPHA_FILE names .* cannot be read"):
        resolve_environment(Settings(), env)
