"""The workbench tests' fixed data and helpers: the golden query of the example pack, the
hostile pack (every way a file could try to run code in the page or reach another origin), a
key, settings over tmp packs, and a real uvicorn in a thread."""

from __future__ import annotations

import dataclasses
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import Settings

EXAMPLE = Path(__file__).resolve().parents[1] / "src" / "ep_mcp" / "example_pack"
GOLDEN_QUERY = "how do I connect Claude Desktop"
GOLDEN_TOP = "howto/serve-stdio.md"
LOCKED_KEY = "sk-locked-0123456789"
FOREIGN = "evil.example"

# Every way a pack file could try to run code in the page or reach another origin.
HOSTILE = {
    "xss.md": """\
---
title: "Payload <script>alert('title')</script> \\"><img src=x onerror=alert('t')>"
type: concept
tags: ["<b>bold</b>", "onerror=alert(1)"]
verified_at: "2020-01-01"
refresh: P30D
---
# Payload zebrafish <script>alert('heading')</script>

Zebrafish payload text: <script>alert('body')</script> and <img src=x onerror=alert('img')>.

[click me](javascript:alert('link')) and [also](JaVaScRiPt:alert('mixed'))
and <a href="javascript:alert('raw')">raw anchor</a>.

![tracking pixel](https://evil.example/pixel.png)

</textarea><script>alert('textarea')</script><textarea>

<iframe src="https://evil.example/frame"></iframe>
<svg onload=alert('svg')></svg>
<style>body { background: url(https://evil.example/css) }</style>

## Zebrafish section two

<details open ontoggle=alert('toggle')>more zebrafish</details>
[[nowhere-at-all]]
""",
    "plain.md": "# Plain\n\nA plain page about zebrafish care, linking [[xss]].\n",
}


def copy_example(root: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, root / "example"))


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def settings_for(root: Path, packs: list[dict[str, Any]]) -> Settings:
    data = {
        "packs": packs,
        "embedding": {"provider": "hashing"},
        "server": {"watch": False},
        "retrieval": {"today": "2026-12-01"},
    }
    return dataclasses.replace(load_settings(data=data), home=root / "home")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` on a real uvicorn in a thread; yields its base URL; stops within 10 s."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # bounds a hang only
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
