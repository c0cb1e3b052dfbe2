"""ExpertPack reader: manifest (and composite sub-packs), context tiers, navigation, graph."""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ep_mcp.packs.documents import ParsedFile, build_document, meta_str, read_markdown_files
from ep_mcp.packs.files import Warnings, read_text_file
from ep_mcp.packs.graph import graph_edges
from ep_mcp.packs.models import Document, Pack
from ep_mcp.packs.references import References, link_edges
from ep_mcp.packs.yamlsafe import MAX_BYTES, YamlError, load_yaml

logger = logging.getLogger(__name__)

MANIFEST = "manifest.yaml"
PACK_TYPES = ("person", "product", "process", "composite")
TIERS = ("always", "searchable", "on_demand")
NAVIGATION_NAMES = frozenset({"_index.md", "source-coverage.md"})
NAVIGATION_STRATEGIES = frozenset({"navigation", "on_demand"})
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def slugify(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "pack"


@dataclass
class _Context:
    """Context-tier entries (pack-relative; trailing `/` = folder) and navigation names."""

    entries: list[tuple[str, str]] = field(default_factory=list)  # (entry, tier)
    index_names: set[str] = field(default_factory=lambda: set(NAVIGATION_NAMES))

    def add_tiers(self, context: Any, prefix: str) -> None:
        if not isinstance(context, Mapping):
            return
        for tier in TIERS:
            for value in _listed(context.get(tier)):
                if isinstance(value, str) and value.strip():
                    self.entries.append((_join(prefix, value.strip()), tier))

    def add_index_names(self, manifest: Mapping[str, Any]) -> None:
        for name in _listed(manifest.get("index_files")):
            if isinstance(name, str) and name.strip():
                self.index_names.add(posixpath.basename(name.strip()))

    def tier_of(self, path: str) -> str | None:
        best: tuple[int, str] | None = None
        for entry, tier in self.entries:
            folder = entry.rstrip("/")
            hit = path.startswith(folder + "/") or folder in ("", ".")
            if not entry.endswith("/"):
                hit = hit or path == entry
            if hit and (best is None or len(folder) > best[0]):
                best = (len(folder), tier)
        return best[1] if best else None


def _listed(value: Any) -> list[Any]:
    """A manifest list field: a list, or one string; anything else (a number, ...) is none."""
    return [value] if isinstance(value, str) else value if isinstance(value, list) else []


def _join(prefix: str, entry: str) -> str:
    trailing = "/" if entry.endswith("/") else ""
    joined = posixpath.normpath(posixpath.join(prefix, entry.lstrip("/")))
    return ("" if joined == "." else joined) + trailing


def read_manifest(root: Path, rel: str, warnings: Warnings) -> dict[str, Any]:
    """A manifest as a mapping; missing, unreadable or malformed ones warn and give {}."""
    if not (root / rel).exists():
        warnings.add(rel, "manifest.yaml not found — using defaults; add slug:, name: and type:")
        return {}
    src = read_text_file(root, rel, MAX_BYTES, warnings)
    if src is None:
        return {}
    try:
        data = load_yaml(src.text, source=rel)
    except YamlError as exc:
        warnings.add(rel, f"{exc.problem} — manifest ignored; fix the YAML", exc.line)
        return {}
    if not isinstance(data, Mapping):
        warnings.add(rel, "manifest is not a YAML mapping — ignored")
        return {}
    return {str(k): v for k, v in data.items()}


def _sub_packs(root: Path, manifest: Mapping[str, Any], warnings: Warnings) -> list[str]:
    entries = manifest.get("packs")
    subs = []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        raw = entry.get("path") if isinstance(entry, Mapping) else entry
        rel = posixpath.normpath(str(raw or "").strip().strip("/"))
        if rel in ("", ".") or rel.startswith("../") or not (root / rel).is_dir():
            warnings.add(MANIFEST, f"packs[{index}]: sub-pack folder {raw!r} not found — skipped")
            continue
        subs.append(rel)
    return subs


def _check_manifest(
    manifest: Mapping[str, Any], folder: str, warnings: Warnings
) -> tuple[str, str, str]:
    """(slug, name, type), warning about each missing or invalid required field."""
    slug = meta_str(manifest, "slug")
    if slug is None or not _SLUG.fullmatch(slug):
        fallback = slugify(folder)
        problem = "missing `slug`" if slug is None else f"invalid slug {slug!r}"
        warnings.add(MANIFEST, f"{problem} — using '{fallback}'; set slug: to a-z, 0-9, - or _")
        slug = fallback
    name = meta_str(manifest, "name")
    if name is None:
        warnings.add(MANIFEST, f"missing `name` — using '{slug}'")
        name = slug
    pack_type = meta_str(manifest, "type")
    if pack_type not in PACK_TYPES:
        fallback = "composite" if isinstance(manifest.get("packs"), list) else "expertpack"
        problem = "missing `type`" if pack_type is None else f"invalid type {pack_type!r}"
        warnings.add(MANIFEST, f"{problem} — must be one of {', '.join(PACK_TYPES)}")
        pack_type = fallback
    return slug, name, pack_type


def _is_navigation(parsed: ParsedFile, context: _Context, tier: str | None) -> bool:
    meta = parsed.meta
    return (
        posixpath.basename(parsed.path) in context.index_names
        or meta_str(meta, "retrieval_strategy") in NAVIGATION_STRATEGIES
        or meta_str(meta, "concept_scope") == "navigation"
        or tier == "on_demand"
    )


def _documents(parsed_files: Iterable[ParsedFile], context: _Context) -> list[Document]:
    documents = []
    for parsed in parsed_files:
        tier = context.tier_of(parsed.path)
        documents.append(
            build_document(
                parsed,
                navigation=_is_navigation(parsed, context, tier),
                always=tier == "always",
                on_demand=tier == "on_demand",
            )
        )
    return documents


def _context(
    root: Path, manifest: Mapping[str, Any], subs: list[str], warnings: Warnings
) -> _Context:
    context = _Context()
    context.add_tiers(manifest.get("context"), "")
    context.add_index_names(manifest)
    root_context = manifest.get("context")
    overrides = root_context.get("overrides") if isinstance(root_context, Mapping) else None
    for sub in subs:
        sub_manifest = posixpath.join(sub, MANIFEST)
        if (root / sub_manifest).is_file():
            data = read_manifest(root, sub_manifest, warnings)
            context.add_tiers(data.get("context"), sub)
            context.add_index_names(data)
        else:
            warnings.add(
                sub, "sub-pack has no manifest.yaml — its files load without context tiers"
            )
        if isinstance(overrides, Mapping):
            context.add_tiers(overrides.get(sub), sub)
    return context


def load_expertpack(root: Path, *, slug: str | None, max_file_bytes: int) -> Pack:
    """Read an ExpertPack folder (``root`` resolved, holding manifest.yaml)."""
    warnings = Warnings()
    manifest = read_manifest(root, MANIFEST, warnings)
    manifest_slug, name, pack_type = _check_manifest(manifest, root.name, warnings)
    subs = _sub_packs(root, manifest, warnings)
    context = _context(root, manifest, subs, warnings)
    parsed, all_files = read_markdown_files(root, max_file_bytes, warnings)
    documents = _documents(parsed, context)
    pack_slug = slug or manifest_slug
    refs = References(documents, pack_slug)
    edges = graph_edges(root, ["", *subs], set(all_files), refs, warnings)
    seen = set(edges)
    edges += [e for e in link_edges(documents, refs) if e not in seen]
    freshness = manifest.get("freshness")
    refresh = meta_str(freshness, "refresh_cycle") if isinstance(freshness, Mapping) else None
    return Pack(
        root=root,
        slug=pack_slug,
        name=name,
        kind="expertpack",
        pack_type=pack_type,
        manifest=manifest,
        documents=tuple(documents),
        edges=tuple(edges),
        warnings=tuple(warnings.items),
        description=meta_str(manifest, "description") or "",
        refresh_cycle=refresh,
    )
