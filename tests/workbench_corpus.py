"""The workbench tests' fixed data: the golden query of the example pack, the hostile pack
(every way a file could try to run code in the page or reach another origin), a key."""

from __future__ import annotations

from pathlib import Path

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
