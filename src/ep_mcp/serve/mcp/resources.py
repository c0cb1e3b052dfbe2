"""MCP resources of a pack: ep://{slug}/manifest|authority|files|file/{+path} and skill://.

A file URI is served only when its decoded path is exactly a file the pack reader listed, so
`..`, absolute paths, encodings, backslashes, NUL and links out of the pack all miss.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from ep_mcp.errors import NotFoundError
from ep_mcp.packs.models import Pack
from ep_mcp.serve.mcp.skill_publish import snapshot_of

MAX_URI_CHARS = 4096
JSON = "application/json"
MARKDOWN = "text/markdown"


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    name: str
    description: str
    mime_type: str
    size: int | None = None


@dataclass(frozen=True)
class TemplateInfo:
    uri_template: str
    name: str
    description: str
    mime_type: str


def _dump(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def file_uri(slug: str, path: str) -> str:
    return f"ep://{slug}/file/{quote(path, safe='/-._~')}"


def static_resources(pack: Pack) -> list[ResourceInfo]:
    slug = pack.slug
    items = [
        ResourceInfo(
            f"ep://{slug}/manifest",
            f"{slug} manifest",
            f"What pack '{slug}' is: name, kind, description and its manifest.",
            JSON,
        ),
        ResourceInfo(
            f"ep://{slug}/authority",
            f"{slug} authority boundary",
            "What this pack may and may not answer.",
            JSON,
        ),
        ResourceInfo(
            f"ep://{slug}/status",
            f"{slug} index status",
            "The index build: phase, mode (lexical until the embeddings are in, then hybrid), "
            "chunks, embedded, pending, progress.",
            JSON,
        ),
        ResourceInfo(
            f"ep://{slug}/files",
            f"{slug} files",
            "Every file of the pack with title, type, id and its ep:// URI.",
            JSON,
        ),
    ]
    snap = snapshot_of(pack)
    if snap is not None:
        for uri in sorted(snap.files):
            f = snap.files[uri]
            desc = snap.frontmatter["description"] if f.path == "SKILL.md" else f.path
            name = slug if f.path == "SKILL.md" else f"{slug}/{f.path}"
            items.append(ResourceInfo(uri, name, desc, f.mime_type, f.size))
    return items


def templates(pack: Pack) -> list[TemplateInfo]:
    slug = pack.slug
    items = [
        TemplateInfo(
            f"ep://{slug}/file/{{+path}}",
            f"{slug} file",
            "A file of the pack, raw, frontmatter included.",
            MARKDOWN,
        )
    ]
    if snapshot_of(pack) is not None:
        items.append(
            TemplateInfo(
                f"skill://{slug}/{{+path}}",
                f"{slug} skill file",
                "A file of the pack published as a skill.",
                MARKDOWN,
            )
        )
    return items


def template_paths(pack: Pack, uri_template: str) -> list[str] | None:
    """The values `{+path}` takes in one of the pack's templates (None: not its template)."""
    slug = pack.slug
    if uri_template == f"ep://{slug}/file/{{+path}}":
        return sorted(d.path for d in pack.documents)
    snap = snapshot_of(pack)
    if snap is not None and uri_template == f"skill://{slug}/{{+path}}":
        return sorted(f.path for f in snap.files.values())
    return None


def complete(values: Sequence[str], typed: str) -> list[str]:
    """Completions for what the user typed: values starting with it first, then values
    containing it (case-insensitive), each group in the given order."""
    needle = typed.casefold()
    starts = [v for v in values if v.casefold().startswith(needle)]
    inside = [v for v in values if needle in v.casefold() and not v.casefold().startswith(needle)]
    return starts + inside


def manifest_doc(pack: Pack) -> dict[str, object]:
    return {
        "slug": pack.slug,
        "name": pack.name,
        "kind": pack.kind,
        "type": pack.pack_type,
        "description": pack.description,
        "version": pack.manifest.get("version"),
        "files": len(pack.documents),
        "skills": [s.name for s in pack.skills],
        "manifest": dict(pack.manifest),
    }


def authority_doc(pack: Pack) -> dict[str, object]:
    boundary = pack.manifest.get("authority_boundary")
    if not isinstance(boundary, Mapping):
        return {
            "pack": pack.slug,
            "declared": False,
            "note": "No authority_boundary in the manifest: answer only from the pack's "
            "files and cite them; say so when they do not cover a question.",
        }
    return {"pack": pack.slug, "declared": True, **dict(boundary)}


def files_doc(pack: Pack) -> dict[str, object]:
    return {
        "pack": pack.slug,
        "files": [
            {
                "path": d.path,
                "uri": file_uri(pack.slug, d.path),
                "title": d.title,
                "type": d.type,
                "id": d.id,
                "navigation": d.navigation,
                "size": d.size,
            }
            for d in sorted(pack.documents, key=lambda d: d.path)
        ],
    }


def canonical_uri(uri: str) -> str:
    """The one spelling of a resource URI that change notifications use: a file URI's path
    decoded and re-encoded as `file_uri` writes it; anything else unchanged."""
    scheme, slug, rest = split_uri(uri)
    if scheme == "ep" and rest.startswith("file/"):
        return file_uri(slug, _decoded(rest[len("file/") :]))
    return uri


def changed_uris(old: Pack, new: Pack) -> tuple[frozenset[str], bool]:
    """What a reload of one pack changed: (the URIs whose content changed, whether files
    were added or removed). A changed, added or removed file changes its own URI, the file
    listing and the index status; the manifest and authority boundary when their documents
    differ; a published skill's files when their digests differ."""
    slug = new.slug
    before = {d.path: d.file_hash for d in old.documents}
    after = {d.path: d.file_hash for d in new.documents}
    paths = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    uris = {file_uri(slug, p) for p in paths}
    listed = before.keys() != after.keys()
    if paths:
        uris |= {f"ep://{slug}/files", f"ep://{slug}/status"}
    if manifest_doc(old) != manifest_doc(new):
        uris.add(f"ep://{slug}/manifest")
    if authority_doc(old) != authority_doc(new):
        uris.add(f"ep://{slug}/authority")
    old_snap, new_snap = snapshot_of(old), snapshot_of(new)
    skills_before = {u: f.digest for u, f in (old_snap.files if old_snap else {}).items()}
    skills_after = {u: f.digest for u, f in (new_snap.files if new_snap else {}).items()}
    uris |= {
        u
        for u in skills_before.keys() | skills_after.keys()
        if skills_before.get(u) != skills_after.get(u)
    }
    listed = listed or skills_before.keys() != skills_after.keys()
    return frozenset(uris), listed


def split_uri(uri: str) -> tuple[str, str, str]:
    """(scheme, slug, rest) of an ep:// or skill:// URI, or NotFoundError."""
    if len(uri) > MAX_URI_CHARS:
        raise NotFoundError("resource URI too long")
    for scheme in ("ep", "skill"):
        prefix = f"{scheme}://"
        if uri.startswith(prefix):
            slug, sep, rest = uri[len(prefix) :].partition("/")
            if slug and sep:
                return scheme, slug, rest
    raise NotFoundError(
        f"unknown resource {uri[:200]!r} — use ep://{{pack}}/manifest, "
        "ep://{pack}/files or ep://{pack}/file/{path}"
    )


def _decoded(raw: str) -> str:
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise NotFoundError("not a file of this pack") from None


def read(
    pack: Pack, scheme: str, rest: str, status: Callable[[], object] | None = None
) -> tuple[str, str]:
    """(mime type, text) of one resource of ``pack``; NotFoundError for anything else.
    ``status`` gives the index build's state (``ep://{slug}/status``)."""
    if scheme == "skill":
        snap = snapshot_of(pack)
        f = snap.files.get(f"skill://{pack.slug}/{rest}") if snap is not None else None
        if f is None:
            raise NotFoundError(f"'{rest[:200]}' is not a skill file of pack '{pack.slug}'")
        return f.mime_type, f.text
    if rest == "manifest":
        return JSON, _dump(manifest_doc(pack))
    if rest == "authority":
        return JSON, _dump(authority_doc(pack))
    if rest == "files":
        return JSON, _dump(files_doc(pack))
    if rest == "status" and status is not None:
        return JSON, _dump({"pack": pack.slug, **dict(status())})  # type: ignore[call-overload]
    if rest.startswith("file/"):
        doc = pack.document(_decoded(rest[len("file/") :]))
        if doc is not None:
            return MARKDOWN, doc.text
        raise NotFoundError(
            f"not a file of pack '{pack.slug}' — list them at ep://{pack.slug}/files"
        )
    raise NotFoundError(
        f"unknown resource of pack '{pack.slug}' — use manifest, authority, status, files or "
        "file/{path}"
    )
