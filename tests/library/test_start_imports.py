"""What a restart imports before its first answer: nothing it does not need for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from ep_mcp.cli import main

# serve's start in a fresh interpreter (the CLI with its `serve` command, the packs opened and
# built as `serve` does), then one search; which heavy modules were imported by then
CHILD = """
import json, os, sys
from pathlib import Path
import ep_mcp.cli.app as app
app.main.get_command(None, "serve")
from ep_mcp.config.env import resolve_environment
from ep_mcp.config.model import PackSettings, Settings
from ep_mcp.serve import startup
from ep_mcp.tools.registry import ToolContext, call_tool
packs = (PackSettings(path=Path(sys.argv[1]), index_dir=Path(sys.argv[2])),)
settings = resolve_environment(Settings(packs=packs), dict(os.environ))
embedder = startup.warming(settings, words_meanwhile=True)
library = startup.open_packs(settings, embedder, build="later")
startup.finish(library)
got = call_tool(ToolContext(library), "ep_search", {"query": "zebras"})
heavy = ("numpy", "sqlite3", "yaml.emitter", "ep_mcp.config.load", "ep_mcp.packs.reading")
print(json.dumps({"mode": got.get("mode"), "found": "Zebras" in json.dumps(got),
                  "imported": [m for m in heavy if m in sys.modules]}))
library.close()
"""


def test_a_words_only_restart_answers_without_numpy_or_the_config_checks(
    tmp_path: Path, make_pack: Callable[[dict[str, str]], Path]
) -> None:
    pack = make_pack({"a.md": "---\ntitle: Zebras\n---\n# Zebras\n\nZebras graze.\n"})
    index = tmp_path / "index"
    env = {**os.environ, "EP_MCP_HOME": str(tmp_path / "home")}
    env["EP_MCP_EMBEDDING_PROVIDER"] = "none"
    args = ["index", str(pack), "--index-dir", str(index)]
    built = CliRunner().invoke(main, args, env=env)
    assert built.exit_code == 0, built.output
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(pack), str(index)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["mode"] == "lexical"
    assert got["found"]
    # the frontmatter needs yaml's loader (yaml imports its emitter too): only yaml is expected
    assert got["imported"] == ["yaml.emitter"]
