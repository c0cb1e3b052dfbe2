"""Installation checks behind `ep-mcp doctor`."""

from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass
from importlib import metadata


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_checks() -> list[Check]:
    import apsw

    from ep_mcp import __version__
    from ep_mcp.index.store import sqlite_vec_status

    checks = [
        Check("ep-mcp", True, __version__),
        Check(
            "python", sys.version_info >= (3, 11), f"{platform.python_version()} ({sys.executable})"
        ),
        Check(
            "sqlite (apsw)", True, f"SQLite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}"
        ),
    ]
    fts5 = "ENABLE_FTS5" in apsw.compile_options
    checks.append(Check("fts5", fts5, "available" if fts5 else "missing — lexical search needs it"))
    ok, detail = sqlite_vec_status()
    checks.append(
        Check(
            "sqlite-vec",
            True,
            f"vec0 {detail}"
            if ok
            else f"not loadable ({detail}) — vectors use the exact numpy scan",
        )
    )
    checks.append(Check("mcp", True, _version("mcp")))
    checks.append(
        Check("onnxruntime", _version("onnxruntime") != "not installed", _version("onnxruntime"))
    )
    checks.append(_model_check())
    return checks


def _model_check() -> Check:
    try:
        from ep_mcp.index.embed.local import LocalEmbedder

        started = time.perf_counter()
        emb = LocalEmbedder()
        vec = emb.embed_query("hello world")
        ms = (time.perf_counter() - started) * 1000
        return Check(
            "local model",
            vec.shape == (emb.dimension,),
            f"{emb.name}, {emb.dimension}-d, loaded and ran in {ms:.0f} ms",
        )
    except Exception as exc:  # doctor reports any failure instead of raising
        return Check("local model", False, f"{type(exc).__name__}: {exc}")
