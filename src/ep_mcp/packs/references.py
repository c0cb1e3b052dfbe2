"""Resolving references between documents (requires:, related:, wikilinks) to pack paths."""

from __future__ import annotations

import posixpath
import re
import weakref
from collections import defaultdict
from collections.abc import Iterable

from ep_mcp.packs.frontmatter import iter_prose_lines
from ep_mcp.packs.models import Document, Edge, Pack

_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_CODE_SPAN = re.compile(r"`[^`]*`")
_MD = ".md"


class References:
    """An index of a pack's documents by id, path and basename; build once, resolve often."""

    def __init__(self, documents: Iterable[Document], slug: str = "") -> None:
        self._slug = slug
        self._paths: set[str] = set()
        self._ids: dict[str, str] = {}
        names: dict[str, list[str]] = defaultdict(list)
        for doc in sorted(documents, key=lambda d: d.path):
            self._paths.add(doc.path)
            if doc.id:
                self._ids.setdefault(doc.id, doc.path)
            base = posixpath.basename(doc.path)
            names[base].append(doc.path)
            stem = posixpath.splitext(base)[0]
            if stem != base:
                names[stem].append(doc.path)
        self._unique = {name: paths[0] for name, paths in names.items() if len(paths) == 1}

    @classmethod
    def of(cls, pack: Pack) -> References:
        """The cached index of ``pack`` (rebuilt only for a new Pack object)."""
        key = id(pack)
        entry = _CACHE.get(key)
        if entry is not None and entry[0]() is pack:
            return entry[1]
        refs = cls(pack.documents, pack.slug)
        _CACHE[key] = (weakref.ref(pack), refs)
        weakref.finalize(pack, _CACHE.pop, key, None)
        return refs

    def _path(self, candidate: str) -> str | None:
        for option in (candidate, candidate + _MD):
            if option in self._paths:
                return option
        return None

    def resolve(self, from_path: str, ref: str) -> str | None:
        """Order: frontmatter id; exact pack path; ``<slug>/``-id-style path; the same
        directory as ``from_path`` (``ref`` or ``ref.md``, ``../`` allowed); unique basename."""
        ref = ref.strip().split("#", 1)[0].strip()
        if not ref:
            return None
        if ref in self._ids:
            return self._ids[ref]
        exact = posixpath.normpath(ref.lstrip("/"))
        found = self._path(exact)
        if found is None and self._slug and exact.startswith(self._slug + "/"):
            found = self._path(exact[len(self._slug) + 1 :])
        if found is None:
            local = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), ref))
            found = self._path(local)
        if found is None:
            found = self._unique.get(posixpath.basename(exact))
        return found


_CACHE: dict[int, tuple[weakref.ref[Pack], References]] = {}


def resolve_reference(pack: Pack, from_path: str, ref: str) -> str | None:
    """Resolve ``ref`` (an id, a path, a relative path or a basename) written in ``from_path``."""
    return References.of(pack).resolve(from_path, ref)


def extract_wikilinks(text: str, start_line: int = 1) -> list[tuple[int, str]]:
    """(line, target) of every ``[[target]]`` / ``[[target|label]]`` outside code."""
    links: list[tuple[int, str]] = []
    if "[[" not in text:  # most files link nothing: no need to walk their lines
        return links
    for number, line in iter_prose_lines(text, start_line):
        if "[[" not in line:
            continue
        for match in _WIKILINK.finditer(_CODE_SPAN.sub("", line)):
            links.append((number, match.group(1).strip()))
    return links


def link_edges(documents: Iterable[Document], refs: References) -> list[Edge]:
    """Edges from wikilinks in bodies and from frontmatter ``related:`` (resolved only)."""
    edges: dict[Edge, None] = {}
    for doc in documents:
        targets = [("wikilink", t) for _, t in extract_wikilinks(doc.text, doc.body_line)]
        targets += [("related", r) for r in doc.related]
        for kind, ref in targets:
            target = refs.resolve(doc.path, ref)
            if target is not None and target != doc.path:
                edges[Edge(doc.path, target, kind)] = None
    return list(edges)
