"""`serve` switches to a newer artifact atomically; requests in flight finish on the old one."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.index import artifact
from ep_mcp.library.artifacts import ArtifactWatcher
from ep_mcp.library.opening import open_library
from ep_mcp.library.publish import Published
from ep_mcp.library.runtime import Library
from ep_mcp.packs.reading import find_document
from ep_mcp.retrieval.types import SearchRequest

NEW_WORD = "quokkazebra"


@pytest.fixture
def served(garden: Path, tmp_path: Path, publish_to: Callable[..., Published]) -> Iterator[Library]:
    publish_to(garden, tmp_path / "out")
    settings = load_settings(
        data={
            "packs": [{"artifact": str(tmp_path / "out" / "garden")}],
            "embedding": {"provider": "hashing"},
            "home": str(tmp_path / "home"),
        }
    )
    lib = open_library(settings, tmp_path / "home")
    yield lib
    lib.close()


def _files(lib: Library, query: str) -> list[str]:
    return [h.source_file for h in lib.get("garden").search(SearchRequest(query, k=5)).hits]


def _publish_new_word(garden: Path, tmp_path: Path, publish: Callable[..., Published]) -> Path:
    (garden / "zebra.md").write_text(f"# Zebras\n\nThe {NEW_WORD} grazes on the savanna.\n")
    return publish(garden, tmp_path / "out").version_dir


def test_a_new_version_is_swapped_in_under_load_with_no_failed_request(
    served: Library, garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    watcher = ArtifactWatcher(served, poll_s=0.05)
    stop = threading.Event()
    errors: list[BaseException] = []
    answers = {"old": 0, "new": 0}

    def client() -> None:
        while not stop.is_set():
            try:
                found = NEW_WORD in " ".join(
                    h.text for h in served.get("garden").search(SearchRequest(NEW_WORD, k=3)).hits
                )
                answers["new" if found else "old"] += 1
                assert find_document(served.get("garden").pack, "compost.md").text
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    watcher.start()
    try:
        version = _publish_new_word(garden, tmp_path, publish_to)
        deadline = threading.Event()
        for _ in range(200):  # bounded: 200 x 0.05 s
            if artifact.served_version(served.get("garden").config) == version.name:
                break
            deadline.wait(0.05)
        seen_new = answers["new"]
        deadline.wait(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        watcher.stop()
    assert errors == []
    assert watcher.swaps == 1 and artifact.served_version(served.get("garden").config)
    assert answers["old"] > 0 and answers["new"] > seen_new, answers
    assert "zebra.md" in _files(served, NEW_WORD)


def test_a_request_holding_the_old_version_finishes_on_it_then_it_is_closed(
    served: Library, garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    held = served.get("garden")  # a request in flight
    old_store = held.store
    _publish_new_word(garden, tmp_path, publish_to)
    watcher = ArtifactWatcher(served, poll_s=1)
    assert watcher.poll() == ["garden"]
    assert served.get("garden") is not held
    assert "zebra.md" in _files(served, NEW_WORD)
    assert "zebra.md" not in [h.source_file for h in held.search(SearchRequest(NEW_WORD)).hits]
    assert watcher.retired_alive == 1
    del held
    gc.collect()
    assert watcher.retired_alive == 0
    with pytest.raises(apsw.ConnectionClosedError):
        old_store._conn.execute("SELECT 1")


def test_a_damaged_new_version_is_skipped_and_the_last_good_one_keeps_serving(
    served: Library,
    garden: Path,
    tmp_path: Path,
    publish_to: Callable[..., Published],
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = artifact.served_version(served.get("garden").config)
    version = _publish_new_word(garden, tmp_path, publish_to)
    with (version / "index.db").open("r+b") as f:
        f.seek(3000)
        f.write(b"\x00\x01\x02")
    watcher = ArtifactWatcher(served, poll_s=1)
    assert watcher.poll() == [] and watcher.poll() == []
    assert artifact.served_version(served.get("garden").config) == before
    assert sum("is not served" in r.getMessage() for r in caplog.records) == 1
    assert _files(served, "compost heap")


def test_a_version_built_with_another_model_is_refused(
    served: Library, garden: Path, tmp_path: Path
) -> None:
    from ep_mcp.config.model import PackSettings, Settings
    from ep_mcp.index.embed.base import EmbeddingSpec
    from ep_mcp.library.publish import publish

    (garden / "zebra.md").write_text(f"# Zebras\n\n{NEW_WORD}\n")
    other = Settings(
        packs=(PackSettings(path=garden),),
        embedding=EmbeddingSpec(provider="hashing", dimension=32),
        home=tmp_path / "home",
    )
    publish(other, os.environ, tmp_path / "out")
    watcher = ArtifactWatcher(served, poll_s=1)
    assert watcher.poll() == []
    assert "zebra.md" not in _files(served, NEW_WORD)
