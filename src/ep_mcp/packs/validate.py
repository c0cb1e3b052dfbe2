"""`ep-mcp validate`: every problem of a pack, with file and line where possible."""

from __future__ import annotations

from collections.abc import Iterator

from ep_mcp.packs.frontmatter import body_hash, is_unclosed
from ep_mcp.packs.models import Document, Pack, PackWarning
from ep_mcp.packs.references import References, extract_wikilinks, resolve_reference

__all__ = ["NO_FRONTMATTER", "no_frontmatter_files", "resolve_reference", "validate_pack"]

# Files an ExpertPack carries at its root without frontmatter: the integrator contract
# (`TOOLS.md`) and the repository's own papers. Navigation files (`_index.md`,
# `source-coverage.md`) are known by name anywhere. Frontmatter is not asked of them.
NO_FRONTMATTER_AT_ROOT = frozenset(
    {"TOOLS.md", "README.md", "LICENSE.md", "CHANGELOG.md", "CONTRIBUTING.md"}
)
NO_FRONTMATTER_ANYWHERE = frozenset({"_index.md", "source-coverage.md"})
NO_FRONTMATTER = tuple(sorted(NO_FRONTMATTER_AT_ROOT | NO_FRONTMATTER_ANYWHERE))


def _needs_no_frontmatter(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (path in NO_FRONTMATTER_AT_ROOT) or name in NO_FRONTMATTER_ANYWHERE


def no_frontmatter_files(pack: Pack) -> list[str]:
    """The ExpertPack files that carry no frontmatter and need none (validate skips them)."""
    if pack.kind != "expertpack":
        return []
    return sorted(
        d.path
        for d in pack.documents
        if _needs_no_frontmatter(d.path) and d.body_line == 1 and not d.meta
    )


def validate_pack(pack: Pack) -> list[PackWarning]:
    """Load warnings plus unresolved references, stale content hashes, missing
    title/type (ExpertPacks) and duplicate ids, sorted by file and line."""
    refs = References.of(pack)
    problems: list[PackWarning] = []
    first_with_id: dict[str, str] = {}
    for doc in pack.documents:
        problems += _unresolved(doc, refs)
        problems += _hash_mismatch(doc)
        if pack.kind == "expertpack":
            problems += _missing_fields(doc)
        if doc.id is not None:
            first = first_with_id.setdefault(doc.id, doc.path)
            if first != doc.path:
                message = f"id '{doc.id}' is also used by {first} — ids must be unique"
                problems.append(PackWarning(doc.path, message, _meta_line(doc, "id")))
    problems.sort(key=lambda w: (w.path, w.line or 0))
    return list(dict.fromkeys([*pack.warnings, *problems]))


def _frontmatter_lines(doc: Document) -> list[str]:
    return doc.text.splitlines()[: max(doc.body_line - 1, 0)]


def _meta_line(doc: Document, key: str, entry: str | None = None) -> int | None:
    """The frontmatter line of ``key`` (or of ``entry`` listed under it), 1-based."""
    key_line = None
    for number, line in enumerate(_frontmatter_lines(doc), start=1):
        if key_line is None and line.startswith(f"{key}:"):
            key_line = number
            if entry is None or entry in line:
                return number
        elif key_line is not None and entry is not None and entry in line:
            return number
    return key_line


def _unresolved(doc: Document, refs: References) -> Iterator[PackWarning]:
    for key, entries in (("requires", doc.requires), ("related", doc.related)):
        for entry in entries:
            if refs.resolve(doc.path, entry) is None:
                message = f"{key}: '{entry}' does not match any file or id in the pack"
                yield PackWarning(doc.path, message, _meta_line(doc, key, entry))
    for line, target in extract_wikilinks(doc.text, doc.body_line):
        if refs.resolve(doc.path, target) is None:
            yield PackWarning(doc.path, f"wikilink [[{target}]] does not match any file", line)


def _hash_mismatch(doc: Document) -> Iterator[PackWarning]:
    declared = doc.meta.get("content_hash")
    if declared is None:
        return
    actual = body_hash(doc.body)
    if declared != actual:
        message = (
            f"content_hash {str(declared)[:19]}… does not match the body ({actual[:19]}…) "
            "— update it after editing the file"
        )
        yield PackWarning(doc.path, message, _meta_line(doc, "content_hash"))


def _missing_fields(doc: Document) -> Iterator[PackWarning]:
    if doc.body_line == 1 and not doc.meta:
        if not _needs_no_frontmatter(doc.path) and not is_unclosed(doc.text):
            # (an unclosed block is the loader's warning, at line 1)
            yield PackWarning(doc.path, "no frontmatter — add title: and type:", 1)
        return
    missing = [key for key in ("title", "type") if not doc.meta.get(key)]
    if missing:
        fields = " and ".join(f"{key}:" for key in missing)
        yield PackWarning(doc.path, f"frontmatter has no {fields} — add it", 1)
