"""Time to first answer: `ep-mcp serve PACK` over stdio, driven by the official MCP client.

Measured from the moment the process is started: the ``initialize`` handshake, the first
``ep_search`` (and its mode: lexical while the vectors are computed) and, on a fresh pack, when
the same query is answered in hybrid mode. Run it on a pack with no index (a first start) and
again once its index is complete (a restart with nothing changed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

POLL_S = 0.25


def first_answer(
    command: Sequence[str],
    pack: Path,
    index_dir: Path,
    env: Mapping[str, str],
    query: str,
    *,
    provider: str | None = None,
    until_hybrid: bool = True,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """Seconds to ``initialize``, to the first answer and (``until_hybrid``) to a hybrid one."""
    import anyio
    from mcp import Client, StdioServerParameters

    args = [*command[1:], "serve", str(pack), "--no-watch", "--index-dir", str(index_dir)]
    if provider:
        args += ["--provider", provider]
    params = StdioServerParameters(command=command[0], args=args, env=dict(env))
    out: dict[str, Any] = {}

    async def go() -> None:
        with anyio.fail_after(timeout_s):
            started = time.perf_counter()
            async with Client(params) as c:
                out["initialize_s"] = round(time.perf_counter() - started, 3)
                r = await c.call_tool("ep_search", {"query": query})
                out["first_answer_s"] = round(time.perf_counter() - started, 3)
                out["first_mode"] = (r.structured_content or {}).get("mode")
                if not until_hybrid or out["first_mode"] == "hybrid":
                    return
                while True:
                    got = await c.read_resource(f"ep://{_slug(r)}/status")
                    state = json.loads(got.contents[0].text)  # type: ignore[union-attr]
                    if state["phase"] not in ("indexing", "embedding", "lexical"):
                        break
                    await anyio.sleep(POLL_S)
                r = await c.call_tool("ep_search", {"query": query})
                out["hybrid_answer_s"] = round(time.perf_counter() - started, 3)
                out["later_mode"] = (r.structured_content or {}).get("mode")

    anyio.run(go)
    return out


def _slug(result: Any) -> str:
    return str((result.structured_content or {}).get("pack"))
