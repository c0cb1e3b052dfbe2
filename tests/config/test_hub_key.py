"""The skills hub's config key is `hub:`; `skills:`, its old name, is still read, with a note."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config import compat as config_compat
from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError

HUB = "  taps: [acme/skills]\n  read_max_chars: 900\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_hub_is_configured_under_hub(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, "hub:\n" + HUB))
    assert (s.hub.read_max_chars, s.hub.taps[0].url) == (900, "acme/skills")
    assert s.deprecations == ()


def test_the_old_skills_key_is_read_as_hub_with_a_note_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_compat, "_said", set())  # a fresh process
    path = write(tmp_path, "skills:\n" + HUB)
    with caplog.at_level(logging.WARNING, logger="ep_mcp.config.compat"):
        first, again = load_settings(path), load_settings(path)
    assert first == again and first.hub.read_max_chars == 900
    assert first.deprecations == (config_compat.OLD_HUB_KEY,)
    said = [r.getMessage() for r in caplog.records if "`skills:` is now `hub:`" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0]


def test_the_old_key_in_a_mapping_is_read_too() -> None:
    s = load_settings(data={"skills": {"rrf_k": 7}})
    assert s.hub.rrf_k == 7 and s.deprecations


def test_both_keys_at_once_is_a_one_line_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "hub:\n" + HUB + "skills:\n  rrf_k: 3\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    lines = [line for line in str(raised.value).splitlines() if "skills" in line]
    assert str(raised.value) == lines[0] and "keep `hub:` only" in lines[0]


def test_a_problem_under_the_old_key_is_reported_under_hub(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"hub\.rrf_k: must be at least 1"):
        load_settings(write(tmp_path, "skills: {rrf_k: 0}\n"))


def test_ep_mcp_config_heads_its_yaml_with_the_deprecation(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["config", "--config", str(write(tmp_path, "skills:\n" + HUB))]
    )
    assert result.exit_code == 0, result.output
    first, *_ = result.stdout.splitlines()
    assert first == f"# deprecated: {config_compat.OLD_HUB_KEY}"
    assert "\nhub:\n" in result.stdout and "\nskills:" not in result.stdout
    plain = CliRunner().invoke(main, ["config", "--config", str(write(tmp_path, "hub:\n" + HUB))])
    assert "# deprecated" not in plain.stdout


def test_doctor_names_the_deprecated_key_of_the_config_it_is_given(tmp_path: Path) -> None:
    old = write(tmp_path, "skills:\n" + HUB)
    result = CliRunner().invoke(main, ["doctor", "--config", str(old), "--json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert not checks["config"]["ok"] and "`skills:` is now `hub:`" in checks["config"]["detail"]
    new = write(tmp_path, "hub:\n" + HUB)
    result = CliRunner().invoke(main, ["doctor", "--config", str(new), "--json"])
    assert {c["name"]: c for c in json.loads(result.stdout)}["config"]["ok"]
