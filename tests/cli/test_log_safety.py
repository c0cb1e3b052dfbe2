"""A pack's file names cannot forge log or warning lines: control characters are escaped."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp import logsafe
from ep_mcp.serve.querylog import QueryLog

FORGED = "ERROR forged line"
BROKEN = "---\ntitle: [broken\n---\n# A\n\nSome text about orchards.\n"
HOSTILE_NAMES = (
    f"a\n{FORGED}.md",  # a newline
    f"b\r{FORGED}.md",  # a carriage return
    f"c\x1b[2K\r{FORGED}.md",  # ESC: erase the line, then write over it
    f"d\u2028{FORGED}.md",  # a Unicode line separator
    f"e\x85{FORGED}.md",  # NEL (C1)
)


@pytest.fixture
def hostile_pack(make_pack: Callable[..., Path]) -> Path:
    files = dict.fromkeys(HOSTILE_NAMES, BROKEN)  # each gets a warning naming the file
    files["fine.md"] = "# Fine\n\nApples and pears.\n"
    root: Path = make_pack(files, name="hostile")
    return root


def _forged(text: str) -> list[str]:
    """Lines (split as any reader might: \\n, \\r, U+2028, NEL…) that start with the forgery."""
    return [line for line in text.splitlines() if line.lstrip().startswith(FORGED)]


def _ep(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from ep_mcp.cli import main; main()", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "EP_MCP_HOME": str(home)},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("index", "{pack}", "--provider", "hashing"),
        ("-v", "index", "{pack}", "--provider", "hashing"),
        ("validate", "{pack}"),
        ("search", "{pack}", "orchards", "--provider", "hashing"),
        ("read", "{pack}", f"zz\n{FORGED}.md"),  # the error line names the asked-for path
    ],
)
def test_no_output_line_of_a_real_process_is_forged_by_a_file_name(
    hostile_pack: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    proc = _ep(*(a.format(pack=hostile_pack) for a in args), home=tmp_path / "home")
    assert "Traceback" not in proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    assert _forged(proc.stdout) == [] and _forged(proc.stderr) == []
    assert "a\\nERROR forged line.md" in proc.stdout + proc.stderr  # named, escaped


WATCH_SCRIPT = """
import sys
from pathlib import Path
from ep_mcp.cli.app import setup_logging
from ep_mcp.config.load import load_settings
from ep_mcp.library.opening import open_library
from ep_mcp.library.watch import PackWatcher

setup_logging("INFO")  # what `ep-mcp serve` installs
pack, home, added = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
settings = load_settings(data={"packs": [{"path": str(pack)}], "home": home,
                               "embedding": {"provider": "hashing"}})
lib = open_library(settings, settings.home)
added.write_text("# New\\n\\nPlums.\\n", encoding="utf-8")
PackWatcher(lib).reload([str(added)])
lib.close()
"""


def test_a_watch_reload_log_line_names_new_files_escaped(
    hostile_pack: Path, tmp_path: Path
) -> None:
    added = hostile_pack / f"new\n{FORGED}.md"
    proc = subprocess.run(
        [sys.executable, "-c", WATCH_SCRIPT, str(hostile_pack), str(tmp_path / "home"), str(added)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "reloaded" in proc.stderr and "new\\nERROR forged line.md" in proc.stderr
    assert _forged(proc.stderr) == []


def test_the_formatter_escapes_the_message_and_keeps_the_traceback() -> None:
    logger = logging.getLogger("ep_mcp.test_log_safety")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logsafe.SafeFormatter(logsafe.FORMAT))
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("could not read %s", f"x\n{FORGED}\x1b[31m\u2029.md")
    finally:
        logger.removeHandler(handler)
    first, *rest = stream.getvalue().splitlines()
    assert first == (
        "ERROR ep_mcp.test_log_safety: could not read x\\nERROR forged line\\x1b[31m\\u2029.md"
    )
    assert rest[0] == "Traceback (most recent call last):" and rest[-1] == "ValueError: boom"


def test_a_query_log_line_stays_one_line_whatever_the_query_and_file_names(
    tmp_path: Path,
) -> None:
    log = QueryLog(tmp_path / "queries.jsonl")
    query = f"q\n{FORGED}\u2028{FORGED}\x85{FORGED}\x1b[2J"
    hit = {"source_file": f"d\u2029{FORGED}.md"}
    log.write("http", {"pack": "p", "query": query, "results": [hit]}, {}, 0.01)
    text = (tmp_path / "queries.jsonl").read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1 and "\x1b" not in text
    record = json.loads(text)
    assert record["query"] == query and record["top"] == [hit["source_file"]]
