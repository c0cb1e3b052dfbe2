"""GitHub discovery of skill repositories, through the `gh` CLI (the one module that runs it).

No `gh`, not logged in, a timeout or garbage output all become a `DiscoveryError` whose message
says what to do — adapters render it as an error result; nothing else escapes.
"""

from __future__ import annotations

import json
import logging
import posixpath
import shutil
import subprocess
from collections.abc import Mapping
from urllib.parse import quote_plus

from ep_mcp.hub.errors import DiscoveryError
from ep_mcp.hub.process import run_text
from ep_mcp.hub.results import RepoHit

logger = logging.getLogger(__name__)

DISCOVER_TIMEOUT_S = 30.0
MAX_LIMIT = 100


def _browse_hint(query: str) -> str:
    q = quote_plus(f"filename:SKILL.md {query}".strip())
    return f"or search in a browser: https://github.com/search?q={q}&type=code"


def discover_github(
    query: str,
    limit: int,
    env: Mapping[str, str],
    *,
    binary: str = "gh",
    timeout: float = DISCOVER_TIMEOUT_S,
) -> list[RepoHit]:
    """Repositories holding a SKILL.md that matches ``query`` (GitHub code search)."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    exe = shutil.which(binary, path=env.get("PATH"))
    if exe is None:
        raise DiscoveryError(
            "GitHub discovery needs the GitHub CLI `gh` — install it (https://cli.github.com) and "
            f"run `gh auth login`, {_browse_hint(query)}"
        )
    cmd = [
        exe,
        "search",
        "code",
        "--filename",
        "SKILL.md",
        "--limit",
        str(limit),
        "--json",
        "path,repository,url",
        "--",
        query,
    ]
    try:
        done = run_text(cmd, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DiscoveryError(
            f"`gh search code` took longer than {timeout:.0f}s — try again, {_browse_hint(query)}"
        ) from None
    except OSError as exc:
        raise DiscoveryError(
            f"could not run gh ({exc.strerror}) — check the installation"
        ) from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        last = detail.splitlines()[-1] if detail else f"exit status {done.returncode}"
        if any(w in detail.lower() for w in ("auth login", "not logged", "authentication")):
            raise DiscoveryError(f"gh is not logged in ({last}) — run `gh auth login` and retry")
        raise DiscoveryError(f"`gh search code` failed: {last} — retry, {_browse_hint(query)}")
    try:
        rows = json.loads(done.stdout or "[]")
        if not isinstance(rows, list):
            raise TypeError("not a list")
        results = [_result(row) for row in rows]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise DiscoveryError(
            f"`gh search code` returned output that is not the expected JSON — update gh, "
            f"{_browse_hint(query)}"
        ) from None
    return results[:limit]


def _result(row: Mapping[str, object]) -> RepoHit:
    repo = row["repository"]
    name = str(repo["nameWithOwner"]) if isinstance(repo, Mapping) else str(repo)
    path = str(row["path"])
    return RepoHit(
        repository=name,
        path=path,
        skill_dir=posixpath.dirname(path),
        url=str(row.get("url") or f"https://github.com/{name}"),
        tap=f"ep-mcp tap {name}",
    )
