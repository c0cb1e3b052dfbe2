"""A first ever start (no compiled model on this home): the handshake and the first, lexical
answers come before the one-time model compile, which runs behind them at low priority; two
servers on one pack embed it once. Ordering and counts decide here, never the wall clock
(`ep-mcp bench index --query` measures how fast)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from conftest import wait_healthy
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.index import builder
from ep_mcp.index.buildlock import exclusive
from ep_mcp.index.embed import HashingEmbedder, Matrix, compiled
from ep_mcp.library.backfill import Backfill
from ep_mcp.library.runtime import Library
from ep_mcp.serve import startup
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import KeyRing
from ep_mcp.serve.context import ServeContext
from ep_mcp.serve.http.app import create_app

CLI = [sys.executable, "-c", "from ep_mcp.cli import main; main()"]


def _pack(make_pack: Any) -> Path:
    return make_pack(  # type: ignore[no-any-return]
        {
            f"topic{i}.md": f"# Topic {i}\n\nCompost needs greens, browns, air and water {i}.\n"
            for i in range(12)
        }
    )


async def _status(c: Client, slug: str) -> dict[str, Any]:
    got = await c.read_resource(f"ep://{slug}/status")
    return json.loads(got.contents[0].text)  # type: ignore[union-attr,no-any-return]


def test_a_first_start_answers_while_the_model_compile_is_still_held(
    make_pack: Any, tmp_path: Path
) -> None:
    """The test holds the models folder's compile lock: the compile cannot finish, yet the
    handshake, a status read and the first ep_search (lexical) are all answered."""
    root = _pack(make_pack)
    home = tmp_path / "home"
    models = home / "models"
    models.mkdir(parents=True)
    env = {**os.environ, "EP_MCP_HOME": str(home)}
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve", str(root), "--no-watch"], env=env
    )
    seen: dict[str, Any] = {}

    async def go() -> None:
        with anyio.fail_after(120):
            async with Client(params) as c:
                r = await c.call_tool("ep_search", {"query": "compost greens"})
                assert not r.is_error, r.content
                seen["mode"] = r.structured_content["mode"]  # type: ignore[index]
                seen["compiled"] = sorted(p.name for p in models.glob("*.onnx"))
                seen["phase"] = (await _status(c, "pack"))["phase"]

    with exclusive(models / compiled.LOCK_NAME):  # the compile waits for the test
        anyio.run(go)
    assert seen["compiled"] == [], "the model was compiled before the first answer"
    assert seen["mode"] == "lexical" and seen["phase"] in ("lexical", "embedding")
    assert not [p for p in models.iterdir() if p.name.startswith(".minilm")]  # no temp left


def test_the_compile_child_lowers_its_priority_and_holds_the_folder_lock(
    tmp_path: Path,
) -> None:
    """The child that compiles sets itself to nice 19 before its work (every thread it then
    starts, onnxruntime's too, inherits it) and compiles under the folder's lock. (The
    compile itself is tested in tests/index/embed: here it is replaced by a probe.)"""
    probe = (
        "import os, sys, types\n"
        "from ep_mcp.index.buildlock import try_exclusive\n"
        "from ep_mcp.index.embed import compiled\n"
        "def build(folder):\n"
        "    with try_exclusive(folder / compiled.LOCK_NAME) as free:\n"
        "        held = not free\n"
        "    sys.stderr.write(f'nice={os.getpriority(os.PRIO_PROCESS, 0)} held={held}\\n')\n"
        "    return folder\n"
        "fake = types.ModuleType('ep_mcp.index.embed.local')\n"
        "fake.build_optimised = build\n"
        "sys.modules['ep_mcp.index.embed.local'] = fake\n"
        "from ep_mcp.index.embed import compilechild\n"
        "sys.exit(compilechild.main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "models")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "nice=19 held=True" in done.stderr


def test_a_failed_compile_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(Exception, match="the model compile failed"):
        compiled.compile_behind(tmp_path / "file" / "models")


class HeldEmbedder(HashingEmbedder):
    """The hashing fake; once ``hold_at`` batches are embedded it says so (``reached``) and
    waits for ``gate`` before the next. Counts its batches."""

    def __init__(self, hold_at: int | None = None) -> None:
        super().__init__(64)
        self.hold_at = hold_at
        self.batches = 0
        self.reached, self.gate = threading.Event(), threading.Event()

    @property
    def query_cost(self) -> str:
        return "compute"  # words first, as with a model

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        if self.batches == self.hold_at:
            self.reached.set()
            assert self.gate.wait(60), "the test never let the embedding go on"
        self.batches += 1
        return super().embed_documents(texts)


def _words_first(settings: Settings, embedder: HeldEmbedder) -> Library:
    return startup.open_packs(settings, embedder, build=True, words_first=True)


def _health(serve: ServeContext) -> dict[str, Any]:
    app = create_app(serve, serve.library.settings.server, KeyRing.build({}, {}, ()))

    async def get() -> dict[str, Any]:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return (await c.get("/health")).json()  # type: ignore[no-any-return]

    return anyio.run(get)


@pytest.fixture
def one_pack(make_pack: Any, tmp_path: Path) -> Settings:
    root = make_pack({f"n{i}.md": f"# Note {i}\n\nCompost pile number {i}.\n" for i in range(8)})
    return Settings(packs=(PackSettings(path=root),), home=tmp_path / "home")


def test_health_counts_the_embedded_chunks_as_they_are_stored(
    one_pack: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builder, "CACHE_FLUSH", 2)  # 8 chunks: 4 batches
    embedder = HeldEmbedder(hold_at=2)
    serve, _ = open_context(one_pack, library=_words_first(one_pack, embedder))
    try:
        rt = serve.library.get()
        assert _health(serve)["index"]["embedded"] == 0
        run = startup.in_background(rt.backfill, "test-backfill")
        assert embedder.reached.wait(60)  # two batches (4 chunks) stored, the third held
        index = _health(serve)["index"]
        assert index["phase"] == "embedding"
        assert (index["embedded"], index["pending"], index["chunks"]) == (4, 4, 8)
        state = rt.build_state()
        assert state["progress"]["eta_s"] is None  # two batches: too few for a time left
        embedder.gate.set()
        run.result(timeout=60)
        assert _health(serve)["index"]["embedded"] == 8
    finally:
        embedder.gate.set()
        serve.library.close()


def test_a_second_server_on_the_same_pack_does_not_embed_it_again(
    one_pack: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers (two libraries here: the lock is per open file, so one process shows it)
    on one index: while the first embeds, the second's backfill skips, says so, computes no
    vector, and serves the first one's vectors once they are committed."""
    monkeypatch.setattr(builder, "CACHE_FLUSH", 2)
    first_embedder, second_embedder = HeldEmbedder(hold_at=1), HeldEmbedder()
    first = _words_first(one_pack, first_embedder)
    second = _words_first(one_pack, second_embedder)
    try:
        run = startup.in_background(first.get().backfill, "test-backfill")
        assert first_embedder.reached.wait(60)
        assert Backfill(second, interval_s=30.0).run_once() == 0
        assert second_embedder.batches == 0
        assert second.get().build_state().get("embedding_elsewhere") is True
        first_embedder.gate.set()
        run.result(timeout=60)
        state = second.get().build_state()
        assert state["phase"] == "ready" and state["embedded"] == 8
        assert Backfill(second, interval_s=30.0).run_once() == 0
        assert second_embedder.batches == 0
    finally:
        first_embedder.gate.set()
        first.close()
        second.close()


def test_the_quick_start_serves_the_example_pack_before_the_model_is_compiled(
    tmp_path: Path,
) -> None:
    """`ep-mcp serve --transport http` with no pack (the README's quick start), on a home
    with no compiled model and the compile held: it listens and answers /search by words —
    it neither builds the whole index nor waits for the model first."""
    home = tmp_path / "home"
    models = home / "models"
    models.mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log = tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    with exclusive(models / compiled.LOCK_NAME), log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", "--transport", "http", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "EP_MCP_HOME": str(home)},
        )
        try:
            wait_healthy(base, proc, log, 120)
            found = httpx2.get(f"{base}/search", params={"q": "install"}, timeout=60).json()
            compiled_now = sorted(p.name for p in models.glob("*.onnx"))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert compiled_now == [], "the quick start waited for the model compile"
    assert found["mode"] == "lexical" and found["results"], found
    assert "Started parent process" not in log.read_text()  # one process, no worker pool
