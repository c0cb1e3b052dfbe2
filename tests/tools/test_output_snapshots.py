"""Tool and CLI outputs stay byte-identical: the JSON of the pack and skill tools, and what the
hub commands print, compared with snapshots taken before the typed-results refactor.

Volatile values (temp paths, commit ids, timings, timestamps) are masked; everything else —
keys, their order, values, the text the CLI prints — must match exactly. Regenerate with
``EP_MCP_UPDATE_SNAPSHOTS=1`` only when an output is meant to change.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.config.load import load_settings
from ep_mcp.hub.git import Git
from ep_mcp.library.opening import open_library
from ep_mcp.tools.registry import ToolContext, call_tool

SNAPSHOTS = Path(__file__).with_name("output_snapshots.json")

PACK = {
    "manifest.yaml": "slug: alpha\nname: Alpha Pack\ntype: product\n"
    "description: Alpha documents routers and ports.\n",
    "overview.md": "---\ntitle: Overview\ntype: concept\nid: alpha/overview\n---\n"
    "# Overview\n\nAlpha explains routers. See [[concepts/routing]].\n",
    "concepts/routing.md": "---\ntitle: Routing\ntype: concept\nid: alpha/concepts/routing\n"
    "tags: [network]\nrequires: [concepts/ports.md]\n---\n# Routing\n\n"
    "Routing moves packets between networks.\n\n## Setup\n\nConfigure the table first.\n\n"
    "### Ports\n\nOpen port 8080.\n\n## Troubleshooting\n\nCheck the cable.\n\n"
    "## Monitoring\n\nWatch the counters.\n",
    "concepts/ports.md": "---\ntitle: Ports\ntype: concept\nid: alpha/concepts/ports\n"
    "related: [concepts/routing.md]\n---\n# Ports\n\nA port number identifies a service.\n",
    "howto/diagnose.md": "---\ntitle: Diagnose\ntype: workflow\n---\n# Diagnose\n\n"
    "1. Search for the symptom.\n2. Read [the ports](../concepts/ports.md).\n",
    "_index.md": "# Index\n\n- overview.md\n",
}


def _skill(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"


SKILLS = {
    "skills/pdf-forms/SKILL.md": _skill(
        "pdf-forms",
        "Use when filling PDF forms or extracting fields from a PDF.",
        "## Filling fields\n\nOpen the form, list the fields, write the values.\n\n"
        "## Flattening\n\nFlatten the form so nobody can edit it afterwards.\n",
    ),
    "skills/pdf-forms/reference.md": "# Field types\n\nText, checkbox and signature fields.\n",
    "skills/marinade/SKILL.md": _skill(
        "marinade",
        "Use when grilling chicken and it needs flavour.",
        "## Basics\n\nOil, acid, salt and garlic; two hours in the fridge.\n\n"
        + "\n".join(f"Step {i}: turn the chicken and baste it again." for i in range(12)),
    ),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _mask(text: str, tmp: Path) -> str:
    text = text.replace(str(tmp), "<tmp>")
    text = re.sub(r"\bfp-[0-9a-f]+", "fp-<fingerprint>", text)  # sizes and mtimes of a folder
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<commit12>", text)  # `ep-mcp taps` shows 12
    text = re.sub(r'"(took_ms|seconds)": [0-9.e-]+', r'"\1": 0', text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^\"\s]*", "<time>", text)
    return re.sub(r" · [0-9.]+ ms", " · 0 ms", text)


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)  # as the MCP server sends it


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("snap")
    out: dict[str, str] = {}
    pack = _write(tmp / "alpha", PACK)
    settings = load_settings(
        data={"packs": [{"path": str(pack)}], "embedding": {"provider": "hashing"}}
    )
    library = open_library(settings, tmp / "home", show_progress=False)
    ctx = ToolContext(library=library)
    pack_calls: list[tuple[str, str, dict[str, Any]]] = [
        ("ep_read whole", "ep_read", {"path": "concepts/routing.md"}),
        ("ep_read by id", "ep_read", {"id": "alpha/concepts/ports"}),
        (
            "ep_read section",
            "ep_read",
            {
                "path": "concepts/routing.md",
                "section": "Troubleshooting",
                "neighbors": True,
                "reconstruct": True,
            },
        ),
        ("ep_read reconstruct", "ep_read", {"path": "overview.md", "reconstruct": True}),
        ("ep_list_topics", "ep_list_topics", {}),
        ("ep_list_topics type", "ep_list_topics", {"type": "concept"}),
        ("ep_graph_traverse", "ep_graph_traverse", {"file_path": "overview.md", "depth": 2}),
        (
            "ep_graph_traverse kinds",
            "ep_graph_traverse",
            {"node_id": "alpha/concepts/ports", "edge_kinds": ["related"]},
        ),
    ]
    try:
        for label, name, args in pack_calls:
            out[label] = _mask(_dump(call_tool(ctx, name, args)), tmp)
    finally:
        library.close()

    repo = _write(tmp / "src" / "acme" / "skills", SKILLS)
    Git(os.environ).init_commit(repo, "initial")
    folder = _write(tmp / "folder-tap", {"SKILL.md": _skill("solo", "Use alone.", "Body.")})
    config = tmp / "config.yaml"
    config.write_text(
        json.dumps(
            {
                "home": str(tmp / "hub-home"),
                "hub": {"read_max_chars": 200, "taps": [{"url": str(folder)}]},
            }
        ),
        encoding="utf-8",
    )
    runner = CliRunner()

    def cli(label: str, *args: str) -> None:
        result = runner.invoke(
            main, [*args, "--config", str(config)], env={"EP_MCP_HOME": str(tmp / "hub-home")}
        )
        assert result.exit_code == 0, result.output
        out[label] = _mask(result.stdout, tmp)
        if result.stderr:
            out[label + " (stderr)"] = _mask(result.stderr, tmp)

    cli("skills search before reindex --json", "skills", "search", "solo", "--json")
    cli("skills search before reindex", "skills", "search", "alone")
    cli("tap --json", "tap", str(repo), "--allow-file", "--json")
    cli("taps --json", "taps", "--json")
    cli("taps", "taps")
    cli("reindex --json", "reindex", "--json")
    cli("reindex", "reindex")
    cli("update --json", "update", "--json")
    cli("update", "update")
    for suffix in (" --json", ""):
        flag = [suffix.strip()] if suffix else []
        cli("skills search" + suffix, "skills", "search", "grilled chicken flavour", *flag)
        cli("skills list" + suffix, "skills", "list", *flag)
        cli("skills info" + suffix, "skills", "info", "pdf-forms", *flag)
        cli("skills read" + suffix, "skills", "read", "acme__skills:marinade", *flag)
    cli("skills read offset --json", "skills", "read", "marinade", "--offset", "150", "--json")
    yield out


def _expected() -> dict[str, str]:
    return dict(json.loads(SNAPSHOTS.read_text(encoding="utf-8")))


def test_snapshots_cover_every_output(outputs: dict[str, str]) -> None:
    if os.environ.get("EP_MCP_UPDATE_SNAPSHOTS"):
        text = json.dumps(outputs, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        SNAPSHOTS.write_text(text, encoding="utf-8")
    assert sorted(outputs) == sorted(_expected())


@pytest.mark.parametrize("label", sorted(_expected()) if SNAPSHOTS.exists() else [])
def test_output_is_byte_identical_to_its_snapshot(outputs: dict[str, str], label: str) -> None:
    assert outputs[label] == _expected()[label]
