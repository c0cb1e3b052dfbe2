"""`ep-mcp index / search` on a full disk: one line and exit 1 (index), the previous index
answering (search), and never a rebuild — a full disk is not damage."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from diskfull import fill_disk, tmpfs
from ep_mcp.index import schema, store

from .conftest import as_json

Ep = Callable[..., Result]
BIG = "# Big\n\n" + "\n\n".join(
    f"Paragraph {i} about greenhouse {i * 7} glass." for i in range(3000)
)


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bool], None]]:
    """full(True): every index ep-mcp opens for writing can grow no more (SQLITE_FULL), as on
    a full disk; full(False): space is free again."""
    state = {"full": False}
    real = schema.open_index

    def opened(path: Path, *, read_only: bool) -> Any:
        conn = real(path, read_only=read_only)
        if state["full"] and not read_only:
            pages = int(conn.execute("PRAGMA page_count").fetchall()[0][0])
            conn.execute(f"PRAGMA max_page_count={pages}").fetchall()
        return conn

    monkeypatch.setattr(store, "open_index", opened)
    yield lambda full: state.update(full=full)


def errors(result: Result) -> list[str]:
    assert "Traceback" not in result.output
    return [ln for ln in result.stderr.splitlines() if "ep_mcp.progress" not in ln]


def test_index_on_a_full_disk_is_one_line_exit_1_and_the_next_run_is_no_rebuild(
    ep: Ep, small_pack: Path, full_disk: Callable[[bool], None], caplog: pytest.LogCaptureFixture
) -> None:
    args = ("--provider", "hashing")
    assert ep("index", small_pack, *args).exit_code == 0
    before = as_json(ep("search", small_pack, "side shoots", *args, "--json"))["results"]
    (small_pack / "big.md").write_text(BIG, encoding="utf-8")
    full_disk(True)
    result = ep("index", small_pack, *args)
    assert result.exit_code == 1
    index_db = small_pack / ".ep-mcp" / "index.db"
    assert errors(result) == [
        f"error: the disk holding {index_db.parent} is full (disk full) — free space and run "
        "again; the previous index keeps serving"
    ]
    with caplog.at_level(logging.WARNING, logger="ep_mcp"):
        searched = ep("search", small_pack, "side shoots", *args, "--json")
    assert searched.exit_code == 0
    assert as_json(searched)["results"] == before  # the previous index answers
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "is full (disk full)" in said[0]
    full_disk(False)
    again = ep("index", small_pack, *args, "--json")
    assert again.exit_code == 0, again.output
    assert (as_json(again)["changed"], as_json(again)["rebuilt"]) == (1, False)
    assert not list(index_db.parent.glob("index.db.corrupt-*"))


CHECKPOINT = """
import os, resource, signal, sys, apsw
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
path = sys.argv[1]
conn = apsw.Connection(path)
conn.execute("PRAGMA wal_autocheckpoint=0").fetchall()
with conn:  # committed into the write-ahead log, which may grow up to the limit
    for n in range(40):
        conn.execute("INSERT INTO embed_cache VALUES(?, ?)", (f"extra|{n}", os.urandom(8000)))
limit = os.path.getsize(path) + 8192  # the index itself may grow by two pages, no more
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
except apsw.Error as exc:
    print(type(exc).__name__)
"""


def test_a_checkpoint_cut_short_by_the_disk_is_not_damage(
    ep: Ep, small_pack: Path, caplog: pytest.LogCaptureFixture
) -> None:
    args = ("--provider", "hashing", "--json")
    assert ep("index", small_pack, *args).exit_code == 0
    index_db = small_pack / ".ep-mcp" / "index.db"
    done = subprocess.run(
        [sys.executable, "-c", CHECKPOINT, str(index_db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in {"IOError", "FullError"}  # the checkpoint failed part-way
    head = index_db.read_bytes()[:100]
    pages = int.from_bytes(head[28:32], "big") * int.from_bytes(head[16:18], "big")
    assert os.path.getsize(index_db) < pages  # shorter than its header says: the log has it
    result = ep("index", small_pack, *args)
    assert result.exit_code == 0, result.output
    assert as_json(result)["changed"] == 0
    assert not [r for r in caplog.records if "is damaged" in r.getMessage()]
    assert not list(index_db.parent.glob("index.db.corrupt-*"))
    assert as_json(ep("search", small_pack, "side shoots", *args))["results"]


def test_index_on_a_really_full_filesystem_is_one_line_and_runs_again_once_freed(
    ep: Ep, small_pack: Path, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", 2048) as disk:
        args = ("--provider", "hashing", "--index-dir", disk / "idx")
        assert ep("index", small_pack, *args).exit_code == 0
        (small_pack / "big.md").write_text(BIG, encoding="utf-8")
        filler = fill_disk(disk)
        result = ep("index", small_pack, *args)
        assert result.exit_code == 1
        [line] = errors(result)
        assert line.startswith("error: ") and "free space and run again" in line
        filler.unlink()
        again = ep("index", small_pack, *args, "--json")
        assert again.exit_code == 0, again.output
        assert as_json(again)["changed"] == 1
        assert not list((disk / "idx").glob("index.db.corrupt-*"))
