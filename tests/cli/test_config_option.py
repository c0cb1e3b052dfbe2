"""`ep-mcp index/search --config` reach an HTTP embedding provider; an outage is a warning."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from fake_provider import FakeProvider, serve

from .conftest import as_json

Ep = Callable[..., Result]
KEY = "sk-canary-cli-41d2"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serve() as fake:
        yield fake


@pytest.fixture
def config(provider: FakeProvider, small_pack: Path, tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        "packs:\n"
        f"  - path: {small_pack}\n"
        "    slug: my-garden\n"
        "embedding:\n"
        "  provider: openai\n"
        f"  endpoint: {provider.url}\n"
        "  dimension: 8\n"
        "  retries: 0\n"
        "  timeout_s: 0.5\n",
        encoding="utf-8",
    )
    return path


def test_index_and_search_use_the_provider_of_the_config(
    ep: Ep, small_pack: Path, config: Path, provider: FakeProvider
) -> None:
    built = ep("index", small_pack, "--config", config, "--json")
    assert built.exit_code == 0, built.stderr
    report = as_json(built)
    assert report["pack"] == "my-garden"  # the config's entry for this folder
    assert (report["embedded"], report["pending"], report["vector_engine"] != "none") == (
        3,
        0,
        True,
    )
    assert provider.seen and provider.seen[0].headers["authorization"] == f"Bearer {KEY}"

    found = ep("search", small_pack, "tomato side shoots", "--config", config, "--json")
    assert found.exit_code == 0, found.stderr
    assert as_json(found)["mode"] == "hybrid"


def test_a_provider_outage_during_index_is_a_warning_and_the_next_run_finishes(
    ep: Ep, small_pack: Path, config: Path, provider: FakeProvider
) -> None:
    assert ep("index", small_pack, "--config", config).exit_code == 0
    (small_pack / "bees.md").write_text("# Bees\n\nBees dance to share nectar.\n", "utf-8")
    provider.down("503")

    degraded = ep("index", small_pack, "--config", config)
    assert degraded.exit_code == 0  # the lexical index is written and usable
    assert "1 chunk(s) await embeddings" in degraded.stderr
    assert "HTTP 503" in degraded.stderr and "next `ep-mcp index`" in degraded.stderr
    assert KEY not in degraded.stderr + degraded.stdout

    lexical = ep("search", small_pack, "bees nectar dance", "--config", config, "--json")
    answer = as_json(lexical)
    assert answer["mode"] == "lexical"
    assert answer["results"][0]["source_file"] == "bees.md"
    assert any("await embeddings" in note for note in answer["notes"])

    provider.up()
    again = ep("index", small_pack, "--config", config, "--json")  # no file changed since
    assert (as_json(again)["pending"], as_json(again)["embedded"]) == (0, 1)
    assert again.stderr == ""
    final = ep("search", small_pack, "bees", "--config", config, "--json")
    assert as_json(final)["mode"] == "hybrid"


def test_config_names_a_misspelt_provider_with_a_guess_before_anything_runs(
    ep: Ep, small_pack: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("embedding:\n  provider: locl\n", encoding="utf-8")
    shown = ep("config", "--config", cfg)
    assert shown.exit_code == 1
    assert "embedding.provider: unknown provider 'locl' — did you mean 'local'?" in shown.stderr
    flagged = ep("search", small_pack, "tomatoes", "--provider", "hahsing")
    assert flagged.exit_code == 1 and "did you mean 'hashing'?" in flagged.stderr
