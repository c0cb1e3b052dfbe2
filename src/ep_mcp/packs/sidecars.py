"""RFC-004 chunk sidecars (`<stem>.chunks.yaml`): authoritative only when fresh and sound."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ep_mcp.packs.files import SourceFile, Warnings, read_text_file
from ep_mcp.packs.models import Sidecar, SidecarChunk
from ep_mcp.packs.yamlsafe import YamlError, load_yaml

SIDECAR_MAX_BYTES = 1_048_576


class _BadSidecar(ValueError):
    pass


def sidecar_path(doc_path: str, meta: Mapping[str, Any]) -> tuple[str, bool]:
    """(pack-relative sidecar path, whether frontmatter named it explicitly)."""
    explicit = meta.get("chunks_sidecar")
    if isinstance(explicit, str) and explicit.strip():
        joined = posixpath.join(posixpath.dirname(doc_path), explicit.strip())
        return posixpath.normpath(joined), True
    return posixpath.splitext(doc_path)[0] + ".chunks.yaml", False


def load_sidecar(
    root: Path,
    doc: SourceFile,
    meta: Mapping[str, Any],
    computed_hash: str,
    files: set[str],
    warnings: Warnings,
) -> Sidecar | None:
    """The document's sidecar if it exists, parses, matches the body and fits the file."""
    rel, explicit = sidecar_path(doc.path, meta)
    if rel not in files:
        if explicit:
            warnings.add(doc.path, f"chunks_sidecar '{rel}' not found — chunking by headings")
        return None
    src = read_text_file(root, rel, SIDECAR_MAX_BYTES, warnings)
    if src is None:
        return None
    try:
        data = load_yaml(src.text, source=rel)
        declared, chunks = _parse(data, len(doc.text.splitlines()))
    except YamlError as exc:
        warnings.add(rel, f"{exc.problem} — sidecar ignored", exc.line)
        return None
    except _BadSidecar as exc:
        warnings.add(rel, f"{exc} — sidecar ignored; regenerate it")
        return None
    if declared != computed_hash:
        message = f"stale sidecar: content_hash does not match {doc.path} — ignored; regenerate it"
        warnings.add(rel, message)
        return None
    return Sidecar(rel, declared, chunks, src.file_hash)


def _parse(data: Any, line_count: int) -> tuple[str, tuple[SidecarChunk, ...]]:
    if not isinstance(data, Mapping):
        raise _BadSidecar("sidecar is not a YAML mapping")
    declared = data.get("content_hash")
    if not isinstance(declared, str):
        raise _BadSidecar("sidecar has no content_hash")
    raw_chunks = data.get("chunks")
    if not isinstance(raw_chunks, list) or not raw_chunks:
        raise _BadSidecar("sidecar has no chunks list")
    chunks = [_chunk(item, index, line_count) for index, item in enumerate(raw_chunks)]
    return declared, tuple(sorted(chunks, key=lambda c: c.order))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _chunk(item: Any, index: int, line_count: int) -> SidecarChunk:
    if not isinstance(item, Mapping):
        raise _BadSidecar(f"chunk #{index} is not a mapping")
    chunk_id = item.get("chunk_id")
    if chunk_id is None or isinstance(chunk_id, Mapping | list):
        raise _BadSidecar(f"chunk #{index} has no chunk_id")
    order = _int(item.get("chunk_order", index))
    if order is None:
        raise _BadSidecar(f"chunk '{chunk_id}' has a non-integer chunk_order")
    span = item.get("line_range")
    if not isinstance(span, list) or len(span) != 2:
        raise _BadSidecar(f"chunk '{chunk_id}' has no line_range [first, last]")
    first, last = _int(span[0]), _int(span[1])
    if first is None or last is None or not 1 <= first <= last <= line_count:
        raise _BadSidecar(
            f"chunk '{chunk_id}' line_range {span} is outside the file (1..{line_count})"
        )
    section = item.get("section")
    prefix = item.get("context_prefix")
    return SidecarChunk(
        chunk_id=str(chunk_id),
        order=order,
        section=None if section is None else str(section),
        line_range=(first, last),
        context_prefix="" if prefix is None else str(prefix),
    )
