"""`_graph.yaml`: nodes map ids to files; directed edges become Edge(kind="graph:<kind>")."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ep_mcp.packs.files import Warnings, read_text_file
from ep_mcp.packs.models import Edge
from ep_mcp.packs.references import References
from ep_mcp.packs.yamlsafe import MAX_BYTES, YamlError, load_yaml

GRAPH_FILE = "_graph.yaml"


def graph_edges(
    root: Path, graph_dirs: Iterable[str], files: set[str], refs: References, warnings: Warnings
) -> list[Edge]:
    """Edges of every `_graph.yaml` found in ``graph_dirs`` (pack-relative, "" = root)."""
    edges: dict[Edge, None] = {}
    for directory in dict.fromkeys(graph_dirs):
        rel = posixpath.join(directory, GRAPH_FILE) if directory else GRAPH_FILE
        if rel not in files:
            continue
        src = read_text_file(root, rel, MAX_BYTES, warnings)
        if src is None:
            continue
        try:
            data = load_yaml(src.text, source=rel)
        except YamlError as exc:
            warnings.add(rel, f"{exc.problem} — graph ignored", exc.line)
            continue
        if not isinstance(data, Mapping):
            warnings.add(rel, "graph is not a YAML mapping with nodes: and edges: — ignored")
            continue
        for edge in _edges(data, rel, directory, refs, warnings):
            edges[edge] = None
    return list(edges)


def _node_files(
    data: Mapping[str, Any], rel: str, directory: str, refs: References, warnings: Warnings
) -> dict[str, str]:
    files: dict[str, str] = {}
    nodes = data.get("nodes")
    for index, node in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(node, Mapping) or node.get("id") is None:
            warnings.add(rel, f"node #{index} has no id — skipped")
            continue
        node_id, file = str(node["id"]), node.get("file")
        target = None
        if isinstance(file, str) and file.strip():
            local = posixpath.normpath(posixpath.join(directory, file.strip()))
            target = refs.resolve(rel, local) or refs.resolve(rel, file)
        if target is None:
            target = refs.resolve(rel, node_id)
        if target is None:
            warnings.add(rel, f"node '{node_id}': file {file!r} not found in the pack — skipped")
            continue
        files[node_id] = target
    return files


def _edges(
    data: Mapping[str, Any], rel: str, directory: str, refs: References, warnings: Warnings
) -> Iterable[Edge]:
    files = _node_files(data, rel, directory, refs, warnings)
    raw_edges = data.get("edges")
    for index, item in enumerate(raw_edges if isinstance(raw_edges, list) else []):
        if not isinstance(item, Mapping):
            warnings.add(rel, f"edge #{index} is not a mapping — skipped")
            continue
        ends = []
        for end in ("source", "target"):
            node_id = str(item.get(end, ""))
            path = files.get(node_id) or refs.resolve(rel, node_id)
            if path is None:
                warnings.add(rel, f"edge #{index}: unknown {end} node '{node_id}' — skipped")
                break
            ends.append(path)
        if len(ends) == 2 and ends[0] != ends[1]:
            kind = str(item.get("kind") or item.get("type") or "related")
            yield Edge(ends[0], ends[1], f"graph:{kind}")
