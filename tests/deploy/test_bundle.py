"""One-click install: the MCP bundle (`scripts/build_bundle.py`) and the registry's server.json.

The bundle is checked with the bundle tool's own parts from npm (`@anthropic-ai/mcpb`: its
manifest schema, its `validate` command and the function hosts use to turn a manifest and the
user's answers into the launched command); `.ci/run` installs it, and without it those tests
skip. The launched command is then run for real and answers over MCP.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_bundle", ROOT / "scripts/build_bundle.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built bundle, unpacked (the .mcpb beside the folder)."""
    out = tmp_path_factory.mktemp("bundle")
    built: Path = _script().build(out)
    unpacked = out / "unpacked"
    with zipfile.ZipFile(built) as z:
        z.extractall(unpacked)
    return unpacked


@pytest.fixture(scope="module")
def mcpb() -> Path:
    """The bundle tool's npm package folder (EP_MCPB_DIR), or skip."""
    found = os.environ.get("EP_MCPB_DIR")
    if not found or not (Path(found) / "package.json").is_file():
        pytest.skip(
            "the bundle tool is not installed (npm install @anthropic-ai/mcpb and set "
            "EP_MCPB_DIR to its folder; .ci/run does)"
        )
    if shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install nodejs)")
    return Path(found)


def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f)["project"])


def test_the_bundle_holds_the_manifest_and_the_source_of_this_version(bundle: Path) -> None:
    data = json.loads((bundle / "manifest.json").read_text())
    assert data["version"] == project()["version"]
    assert (bundle / data["server"]["entry_point"]).is_file()
    for name in (
        "pyproject.toml",
        "src/ep_mcp/example_pack/manifest.yaml",
        "src/ep_mcp/data/minilm-tokenizer.json",
        "src/ep_mcp/serve/web/static",
    ):
        assert (bundle / name).exists(), name
    assert not list(bundle.rglob("__pycache__"))


def test_the_bundled_source_builds_an_installable_wheel(bundle: Path, tmp_path: Path) -> None:
    """What uv does on the host: build the bundled project from its own pyproject.toml."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(bundle),
        ],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    wheel = next(tmp_path.glob("ep_mcp-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ep_mcp/example_pack/manifest.yaml" in names
    assert "ep_mcp/data/minilm-tokenizer.json" in names


def test_the_manifest_passes_the_bundle_tools_schema_and_validate(bundle: Path, mcpb: Path) -> None:
    schema = json.loads((mcpb / "dist/mcpb-manifest-v0.4.schema.json").read_text())
    manifest = json.loads((bundle / "manifest.json").read_text())
    jsonschema.validate(manifest, schema)
    broken = {**manifest, "server": {**manifest["server"], "type": "ruby"}}
    with pytest.raises(jsonschema.ValidationError):  # the schema does refuse a bad manifest
        jsonschema.validate(broken, schema)
    done = subprocess.run(
        ["node", str(mcpb / "dist/cli/cli.js"), "validate", str(bundle / "manifest.json")],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _host_config(mcpb: Path, bundle: Path, user_config: dict[str, object]) -> dict[str, Any]:
    """The command a host launches, computed by the bundle tool's own function."""
    script = (
        "const m = await import(process.argv[1]);"
        "const fs = await import('node:fs');"
        "const manifest = JSON.parse(fs.readFileSync(process.argv[2] + '/manifest.json'));"
        "const cfg = await m.getMcpConfigForManifest({manifest, extensionPath: process.argv[2],"
        " systemDirs: {}, userConfig: JSON.parse(process.argv[3]), pathSeparator: '/'});"
        "process.stdout.write(JSON.stringify(cfg ?? null));"
    )
    done = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            script,
            (mcpb / "dist/index.js").as_uri(),
            str(bundle),
            json.dumps(user_config),
        ],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_host_launches_serve_on_the_chosen_folders_and_it_answers(
    bundle: Path, mcpb: Path, make_pack: Callable[..., Path]
) -> None:
    notes = make_pack(
        {"tomatoes.md": "# Tomatoes\n\nTomatoes want full sun and a stake.\n"}, name="notes"
    )
    garden = make_pack({"compost.md": "# Compost\n\nTurn the heap monthly.\n"}, name="garden")
    assert _host_config(mcpb, bundle, {}) is None  # no pack folders: the host will not start it
    cfg = _host_config(
        mcpb, bundle, {"packs": [str(notes), str(garden)], "embedding_provider": "none"}
    )
    assert cfg["command"] == "uv"
    assert cfg["args"] == [
        "run",
        "--directory",
        str(bundle),
        "ep-mcp",
        "serve",
        str(notes),
        str(garden),
    ]
    assert cfg["env"]["EP_MCP_EMBEDDING_PROVIDER"] == "none"
    assert cfg["env"]["OPENAI_API_KEY"] == ""  # an unset key is empty, not a placeholder
    # `uv run --directory BUNDLE ep-mcp ...` runs the bundled project's `ep-mcp`: here, ours
    command = cfg["args"][cfg["args"].index("ep-mcp") + 1 :]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from ep_mcp.cli import main; main()", *command, "--no-watch"],
        env={**os.environ, **cfg["env"]},
    )

    async def go() -> None:
        with anyio.fail_after(60):
            async with Client(params) as c:
                r = await c.call_tool("ep_search", {"query": "tomatoes sun", "pack": "notes"})
                assert not r.is_error, r.content
                assert r.structured_content["results"][0]["source_file"] == "tomatoes.md"

    anyio.run(go)


def test_server_json_describes_this_version_for_the_registry() -> None:
    """The rules of the MCP Registry's server.json (schema 2025-12-11) that apply to it."""
    server = json.loads((ROOT / "server.json").read_text())
    assert server["$schema"].endswith("/2025-12-11/server.schema.json")
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"])
    assert server["name"].count("/") == 1
    assert 1 <= len(server["description"]) <= 100
    assert server["version"] == project()["version"]
    stdio, http = server["packages"]
    for package in (stdio, http):
        assert package["registryType"] == "pypi"
        assert package["identifier"] == project()["name"]
        assert package["version"] == project()["version"]
        assert [a.get("value") for a in package["packageArguments"][:1]] == ["serve"]
    assert stdio["transport"] == {"type": "stdio"}
    assert http["transport"]["type"] == "streamable-http"
    named = {a["name"]: a for a in http["packageArguments"] if a["type"] == "named"}
    assert named["--transport"]["value"] == "http"
    # the URL's {port} is the --port argument's valueHint
    assert "{port}" in http["transport"]["url"] and named["--port"]["valueHint"] == "port"
    (variable,) = stdio["environmentVariables"]
    from ep_mcp.index.embed.providers import PROVIDERS

    assert variable["choices"] == ["local", "none", *sorted(PROVIDERS)]  # every provider
    # the registry checks ownership of a PyPI package by this marker in its README
    assert f"mcp-name: {server['name']}" in (ROOT / "README.md").read_text()
