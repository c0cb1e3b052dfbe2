"""Installation checks behind `ep-mcp doctor`."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError


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


def run_checks(home: Path, env: Mapping[str, str]) -> list[Check]:
    """Every check, in the order `ep-mcp doctor` prints them. ``home`` is the data directory."""
    return [*_install_checks(), *_data_checks(home), *_tool_checks(env)]


def config_check(path: Path) -> Check:
    """The config file: does it load, and does it say anything the old way (``skills:``)?"""
    try:
        settings = load_settings(path)
    except ConfigError as exc:
        return Check("config", False, str(exc).splitlines()[0])
    if settings.deprecations:
        return Check("config", False, f"{path}: " + "; ".join(settings.deprecations))
    return Check("config", True, f"{path}: loads")


def _install_checks() -> list[Check]:
    import apsw

    # start-up: doctor's checks load the store (numpy, sqlite-vec) only when run
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def _data_checks(home: Path) -> list[Check]:
    """The data directory, the indexes and taps in it."""
    if not home.is_dir():
        return [Check("data dir", True, f"{home} (not created yet — the first index makes it)")]
    checks = [Check("data dir", True, f"{home} (move it with EP_MCP_HOME)")]
    indexes = sorted((home / "indexes").glob("*/index.db"))
    for db in indexes:
        checks.append(Check("index", True, f"{db.parent.name}: {db} ({_mb(_size(db))})"))
    if not indexes:
        checks.append(
            Check(
                "index",
                True,
                "none in the data dir (packs you can write to keep theirs in <pack>/.ep-mcp/)",
            )
        )
    taps = sorted(p.name for p in (home / "taps").iterdir()) if (home / "taps").is_dir() else []
    checks.append(
        Check(
            "taps", True, ", ".join(taps) if taps else "none — add one with `ep-mcp tap OWNER/REPO`"
        )
    )
    return checks


def _first_line(argv: list[str], env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=10, env=dict(env), check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"does not run ({exc})"
    return (
        (done.stdout or done.stderr).strip().splitlines()[0]
        if done.returncode == 0
        else (f"exit {done.returncode}")
    )


def _tool_checks(env: Mapping[str, str]) -> list[Check]:
    """The outside tools the skills hub can use: git (taps), gh (discovery), an LLM (rerank)."""
    path = env.get("PATH")
    checks = []
    git = shutil.which("git", path=path)
    checks.append(
        Check(
            "git",
            git is not None,
            _first_line([git, "--version"], env) if git else "not found — `ep-mcp tap` needs git",
        )
    )
    gh = shutil.which("gh", path=path)
    checks.append(
        Check(
            "gh",
            True,
            _first_line([gh, "--version"], env)
            if gh
            else "not found — skill_discover_github is unavailable (optional)",
        )
    )
    claude = shutil.which("claude", path=path)
    if claude:
        llm = f"claude CLI at {claude}"
    elif env.get("ANTHROPIC_API_KEY"):
        llm = "Anthropic API (ANTHROPIC_API_KEY is set)"
    else:
        llm = "none — skills LLM rerank falls back to retrieval order (optional)"
    checks.append(Check("llm", True, llm))
    return checks


def _model_check() -> Check:
    try:
        # optional: the local model (onnxruntime, tokenizers) may not be installed
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
