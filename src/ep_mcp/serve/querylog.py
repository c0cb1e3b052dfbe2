"""Opt-in query log: one JSON line per search (`server.query_log_path`). Never a key.

JSON escapes the C0 controls (a newline in a query or a file name stays in its line); the few
characters it leaves raw that still split or rewrite a line for some readers (DEL, C1 such as
NEL, U+2028/U+2029, bidi overrides) are written as ``\\uXXXX`` too.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

_RAW_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_line(record: Mapping[str, object]) -> str:
    """``record`` as one JSON line that no reader splits (see the module docstring)."""
    line = json.dumps(record, ensure_ascii=False, default=str)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


class QueryLog:
    """Appends `{ts, via, pack, query, n, mode, hits, took_ms, top}` lines; thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.problem: str | None = None  # why the last line could not be written
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._failed(exc)

    def write(
        self, via: str, result: Mapping[str, object], args: Mapping[str, object], seconds: float
    ) -> None:
        """One line for a search: ``result`` and ``args`` are the tool's JSON, as sent."""
        found = result.get("results")
        hits = found if isinstance(found, list) else []
        record = {
            "ts": round(time.time(), 3),
            "via": via,
            "pack": result.get("pack", result.get("packs")),
            "query": result.get("query"),
            "n": args.get("max_results", args.get("n")),
            "type": args.get("type"),
            "tags": args.get("tags"),
            "mode": result.get("mode"),
            "hits": len(hits),
            "took_ms": round(seconds * 1000, 2),
            "top": [h.get("source_file") if isinstance(h, Mapping) else None for h in hits[:3]],
        }
        line = json_line(record)
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            self._failed(exc)
            return
        if self.problem is not None:
            logger.warning("query log %s is writable again", self.path)
            self.problem = None

    def _failed(self, exc: OSError) -> None:
        """Logged once until a line is written again: a full disk must not flood the log."""
        problem = f"query log {self.path} not writable ({exc.strerror or exc}) — queries not logged"
        if self.problem is None:
            logger.warning("%s", problem)
        self.problem = problem
