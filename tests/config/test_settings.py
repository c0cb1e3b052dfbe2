from __future__ import annotations

from pathlib import Path

import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings
from ep_mcp.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_reference_style_config_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        "server: {host: 127.0.0.1, port: 8123, mcp_allowed_hosts: ['example.com:*']}\n"
        "packs:\n  - {slug: docs, path: ./docs, api_keys: [k1]}\n  - other\n"
        "embedding: {provider: none}\n"
        "retrieval: {mmr_lambda: 0.9, fusion: weighted}\n",
    )
    s = load_settings(cfg)
    assert s.server.port == 8123
    assert s.packs[0].path == tmp_path / "docs"
    assert s.packs[0].api_keys == ("k1",)
    assert s.packs[1].path == tmp_path / "other"
    assert s.embedding.provider == "none"
    assert s.retrieval.mmr_lambda == 0.9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "retrieval: {mmr_lamda: 0.9}\n",
            "retrieval.mmr_lamda: unknown key — did you mean mmr_lambda",
        ),
        ("server: {port: eighty}\n", "server.port: expected an integer"),
        ("server: {port: 70000}\n", "server.port: must be 1..65535"),
        ("retrieval: {mmr_lambda: 2}\n", "retrieval.mmr_lambda: must be between 0 and 1"),
        ("packs: [{slug: a}]\n", "packs[0]: missing required key"),
        ("packs: [{path: a, kind: wiki}]\n", "packs[0].kind: must be"),
        ("- just\n- a list\n", "must be a YAML mapping"),
        ("server: {port: [1\n", "config.yaml"),
        ("packs: [{path: a, slug: x}, {path: b, slug: x}]\n", "duplicate slug"),
        ("hub: {rrf_k: -1}\n", "hub.rrf_k: must be at least 1"),
        ("hub: {read_max_chars: 0}\n", "hub.read_max_chars: must be at least 1"),
        ("hub: {llm_timeout_s: 0}\n", "hub.llm_timeout_s: must be a number of seconds"),
        ("server: {max_body_bytes: -5}\n", "server.max_body_bytes: must be at least 1"),
        ("reranker: {max_chars: 0}\n", "reranker.max_chars: must be at least 1"),
        (
            "embedding: {provider: locl}\n",
            "embedding.provider: unknown provider 'locl' — did you mean 'local'",
        ),
        ("embedding: {provider: bert}\n", "embedding.provider: unknown provider 'bert' (known: "),
    ],
)
def test_bad_config_is_reported_with_the_key_path(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_settings(write(tmp_path, text))


def test_a_missing_config_file_says_to_check_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="check the path"):
        load_settings(tmp_path / "nope.yaml")


def test_defaults_need_no_file() -> None:
    assert load_settings(None) == Settings()


def test_a_config_with_three_mistakes_reports_three_errors_in_one_run_with_suggestions(
    tmp_path: Path,
) -> None:
    cfg = write(
        tmp_path,
        "server: {port: eighty}\n"
        "retrieval: {vector_wieght: 0.5, mmr_lambda: 2}\n"
        "index: {vector_engine: numpi}\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(cfg)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("4 problems in ") and "fix them all" in lines[0]
    assert set(lines[1:]) == {
        "  server.port: expected an integer, got 'eighty'",
        "  retrieval.vector_wieght: unknown key — did you mean vector_weight?",
        "  retrieval.mmr_lambda: must be between 0 and 1 — got 2.0",
        "  index.vector_engine: must be one of auto, sqlite-vec, numpy — got 'numpi'"
        " — did you mean numpy?",
    }


def test_problems_inside_list_entries_are_all_reported_with_their_index(tmp_path: Path) -> None:
    cfg = write(tmp_path, "packs:\n  - {slug: a}\n  - {path: b, knid: skills}\n  - {path: c}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(cfg)
    message = str(caught.value)
    assert "packs[0]: missing required key(s) path" in message
    assert "packs[1].knid: unknown key — did you mean kind?" in message


def test_an_unknown_key_with_nothing_close_points_to_the_config_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="`ep-mcp config` prints every key"):
        load_settings(write(tmp_path, "retrieval: {zzz: 1}\n"))
    with pytest.raises(ConfigError, match=r"known keys here: .*watch"):
        load_settings(write(tmp_path, "server: {qqqq: 1}\n"))
