"""What `serve` does before the MCP SDK is imported: the model and the packs on threads."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.errors import EmbeddingError, PackError
from ep_mcp.index.embed.base import Matrix
from ep_mcp.index.embed.cache import QueryEmbeddingCache
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.serve import startup
from ep_mcp.tools.registry import ToolContext, call_tool


def test_work_in_the_background_hands_back_its_result_or_its_error() -> None:
    seen: list[str] = []

    def work() -> int:
        seen.append(threading.current_thread().name)
        return 42

    assert startup.in_background(work, "ep-mcp-test").result(timeout=10) == 42
    assert seen == ["ep-mcp-test"]

    def fail() -> int:
        raise PackError("pack folder 'x' does not exist")

    with pytest.raises(PackError, match="does not exist"):
        startup.in_background(fail, "ep-mcp-test").result(timeout=10)


@pytest.mark.parametrize("module", ["ep_mcp.serve.startup", "ep_mcp.serve.lifecycle"])
def test_the_startup_modules_do_not_import_the_mcp_sdk(module: str) -> None:
    """Their point is to start work before that import: importing them must not trigger it."""
    import subprocess

    code = f"import sys, {module}; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SERVE_PROBE = """
import dataclasses, sys
from pathlib import Path
from ep_mcp.config.load import load_settings
from ep_mcp.serve import lifecycle, startup
seen = []
real = startup.in_background
def watched(work, name):
    seen.append((name, "mcp" in sys.modules))
    return real(work, name)
startup.in_background = watched
data = {"packs": [{"path": sys.argv[1]}], "embedding": {"provider": "none"}}
settings = dataclasses.replace(load_settings(data=data), home=Path(sys.argv[2]))
lifecycle.serve(settings, "stdio", watch=False, workers=1)  # stdin at its end: the client left
seen.append(("stopped", "mcp" in sys.modules))
print(seen)
"""


def test_serve_starts_opening_the_packs_before_it_imports_the_mcp_sdk(tmp_path: Path) -> None:
    """`lifecycle.serve` over stdio, in a fresh interpreter: the packs open on their thread
    before the SDK is imported (it imports beside them), the build thread starts after."""
    import subprocess

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Zebras\n\nZebras graze on the savanna.\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", SERVE_PROBE, str(pack), str(tmp_path / "home")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == str(
        [("ep-mcp-open-packs", False), ("ep-mcp-index", True), ("stopped", True)]
    )


def test_packs_open_indexed_and_tools_get_their_validators(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Alpha\n\nAlpha text about zebras.\n", encoding="utf-8")
    (pack / "b.md").write_text("---\ntitle: [unclosed\n---\n# Beta\n", encoding="utf-8")
    settings = Settings(packs=(PackSettings(path=pack),), home=tmp_path / "home")
    with caplog.at_level("WARNING", logger="ep_mcp.serve.startup"):
        library = startup.open_packs(settings, None)
    try:
        (rt,) = list(library)
        assert rt.build_state()["chunks"] == 2
        assert "b.md" in caplog.text  # the pack's warnings are said at start-up
    finally:
        library.close()
    from ep_mcp.tools import registry

    startup.prepare_tools()
    assert all(id(spec) in registry._VALIDATORS for spec in registry.tools())


class SlowModel(HashingEmbedder):
    """A local model whose first query waits for ``loaded`` (its load at start-up)."""

    query_cost = "compute"

    def __init__(self) -> None:
        super().__init__()
        self.loaded = threading.Event()

    def embed_query(self, text: str) -> Matrix:
        assert self.loaded.wait(timeout=60), "the test never let the model load"
        return super().embed_query(text)


def test_a_restart_answers_by_its_words_while_the_query_model_loads(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Zebras\n\nZebras graze on the savanna.\n", encoding="utf-8")
    (pack / "b.md").write_text("# Owls\n\nOwls hunt at night.\n", encoding="utf-8")
    settings = Settings(packs=(PackSettings(path=pack),), home=tmp_path / "home")
    model = SlowModel()
    model.loaded.set()  # the first start: the index is built with the model's vectors
    startup.open_packs(settings, QueryEmbeddingCache(model), words_first=False).close()

    model = SlowModel()  # the restart: its model loads on the warm-up thread
    embedder = QueryEmbeddingCache(model)
    startup.start_warm_up(embedder, words_meanwhile=True)
    library = startup.open_packs(settings, embedder, build="later")
    try:
        startup.finish(library)
        ctx = ToolContext(library)
        for args in ({"query": "zebras"}, {"query": "zebras", "pack": "pack"}):
            first = call_tool(ctx, "ep_search", args)
            assert first["mode"] == "lexical"  # answered now, not after the load
            assert any("still loading" in n for n in first["notes"]), first["notes"]
            assert first["results"][0]["source_file"] == "a.md"
        model.loaded.set()
        assert embedder.loading is not None and embedder.loading.wait(timeout=60)
        later = call_tool(ctx, "ep_search", {"query": "zebras"})
        assert later["mode"] == "hybrid"
        assert later["results"][0]["source_file"] == "a.md"
    finally:
        library.close()


def test_a_model_that_fails_to_load_leaves_queries_to_the_usual_fallback(tmp_path: Path) -> None:
    class Broken(SlowModel):
        def embed_query(self, text: str) -> Matrix:
            raise EmbeddingError("the model file is unreadable")

    embedder = QueryEmbeddingCache(Broken())
    startup.start_warm_up(embedder, words_meanwhile=True)
    assert embedder.loading is not None and embedder.loading.wait(timeout=60)
    assert embedder.ready()  # no longer "loading": the legs say the failure themselves


def test_a_restart_loads_the_query_model_only_once_its_packs_are_open(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.md").write_text("# Zebras\n\nZebras graze on the savanna.\n", encoding="utf-8")
    settings = Settings(packs=(PackSettings(path=pack),), home=tmp_path / "home")
    calls: list[str] = []

    class Model(HashingEmbedder):
        query_cost = "compute"

        def embed_query(self, text: str) -> Matrix:
            calls.append(text)
            return super().embed_query(text)

    embedder = QueryEmbeddingCache(Model())
    startup.start_warm_up(embedder, words_meanwhile=True, after_open=True)
    gate = startup._OPENING[embedder]
    assert not gate.is_set() and calls == []  # the load waits for the packs
    library = startup.open_packs(settings, embedder, build="later")
    try:
        assert gate.is_set() and embedder not in startup._OPENING
        assert embedder.loading is not None and embedder.loading.wait(timeout=60)
        assert calls == ["warm up"]
    finally:
        library.close()
