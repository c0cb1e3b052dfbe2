"""Build an MCP bundle (`.mcpb`) of ep-mcp for one-click install in desktop hosts.

    python scripts/build_bundle.py [--out dist]

The bundle is a zip of `manifest.json` (MCPB manifest 0.4, `server.type: uv`), this checkout's
`pyproject.toml`, `README.md` and `src/`. The host installs the dependencies with uv from the
bundled `pyproject.toml` and launches `ep-mcp serve <pack folders>` over stdio; the pack folders
(and, for an HTTP embedding provider, its key) are asked for at install time (`user_config`).
Nothing is downloaded at build time. Validate with the bundle CLI from npm:
`npx @anthropic-ai/mcpb validate manifest.json` (tests/deploy/test_bundle.py does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from ep_mcp.index.embed.providers import PROVIDERS
from ep_mcp.tools.registry import tools

ROOT = Path(__file__).resolve().parents[1]
HTTP_PROVIDERS = sorted(PROVIDERS)
SCHEMA = (
    "https://raw.githubusercontent.com/anthropics/mcpb/main/schemas/mcpb-manifest-v0.4.schema.json"
)
KEY_VARIABLES = sorted({cls.key_env for cls in PROVIDERS.values()})


def project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f)["project"])


def manifest() -> dict[str, object]:
    """The MCPB manifest for this checkout's version."""
    meta = project()
    key = "${user_config.provider_api_key}"
    return {
        "$schema": SCHEMA,
        "manifest_version": "0.4",
        "name": "ep-mcp",
        "display_name": "ep-mcp — markdown knowledge packs",
        "version": str(meta["version"]),
        "description": str(meta["description"]),
        "long_description": (
            "Serves folders of markdown (ExpertPacks, SKILL.md repositories, plain notes) "
            "with hybrid search (BM25 + a local embedding model), offline by default. Every "
            "hit names its file, heading path, line range and content hash."
        ),
        "author": {"name": "ep-mcp developers"},
        "license": "Apache-2.0",
        "keywords": ["markdown", "search", "knowledge", "expertpack", "skills", "offline"],
        "server": {
            "type": "uv",
            "entry_point": "src/ep_mcp/cli/__init__.py",
            "mcp_config": {
                "command": "uv",
                "args": [
                    "run",
                    "--directory",
                    "${__dirname}",
                    "ep-mcp",
                    "serve",
                    "${user_config.packs}",
                ],
                "env": {
                    "EP_MCP_EMBEDDING_PROVIDER": "${user_config.embedding_provider}",
                    **dict.fromkeys(KEY_VARIABLES, key),
                },
            },
        },
        "tools": [{"name": t.name, "description": t.title or t.name} for t in tools("pack")],
        "tools_generated": True,  # the skill-hub tools appear when taps exist
        "prompts_generated": True,  # packs bring their own prompts
        "compatibility": {
            "platforms": ["darwin", "win32", "linux"],
            "runtimes": {"python": str(meta["requires-python"])},
        },
        "user_config": {
            "packs": {
                "type": "directory",
                "title": "Pack folders",
                "description": "Folders of markdown to serve (ExpertPacks, skill repositories "
                "or plain notes). Each is indexed on first use, beside it or in your data folder.",
                "multiple": True,
                "required": True,
            },
            "embedding_provider": {
                "type": "string",
                "title": "Embedding provider",
                "description": "local (offline, the default), none (words only), or an HTTP "
                "provider: " + ", ".join(HTTP_PROVIDERS) + ".",
                "default": "local",
                "required": False,
            },
            "provider_api_key": {
                "type": "string",
                "title": "Provider API key",
                "description": "Only for an HTTP embedding provider: its API key.",
                "sensitive": True,
                "default": "",
                "required": False,
            },
        },
    }


def source_files() -> list[Path]:
    """The files of `src/` git tracks (every file below it outside a checkout)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "src"],
            capture_output=True,
            check=True,
            stdin=subprocess.DEVNULL,
        ).stdout.decode()
        files = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in (ROOT / "src").rglob("*") if p.is_file()]
    return sorted(p for p in files if "__pycache__" not in p.parts and p.is_file())


def build(out_dir: Path) -> Path:
    """Write `ep-mcp-<version>.mcpb` into `out_dir`; returns its path."""
    data = manifest()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"ep-mcp-{data['version']}.mcpb"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("manifest.json", json.dumps(data, indent=2) + "\n")
        for name in ("pyproject.toml", "README.md"):
            bundle.write(ROOT / name, name)
        for path in source_files():
            bundle.write(path, path.relative_to(ROOT).as_posix())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the .mcpb")
    args = parser.parse_args(argv)
    print(build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
