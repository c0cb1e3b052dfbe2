"""Reading a pack: whole atoms, one section, its neighbours, topics by type, graph walks.

Pure functions over a `Pack` (no index, no disk): a path or id is looked up among the files
the pack reader listed, so nothing outside the pack can ever be named. The tools call these.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.errors import LIST_FILES, LIST_TOPICS, NotFoundError, QueryError
from ep_mcp.packs.fragments import (
    MAX_PATH_CHARS,
    TOP,
    anchors,
    fragment_id,
    holds_span,
    split_fragment_id,
)
from ep_mcp.packs.headings import Heading, find_headings
from ep_mcp.packs.models import Document, Pack
from ep_mcp.packs.reading_results import (
    DocumentInfo,
    DocumentRead,
    GraphEdge,
    GraphNode,
    NeighborSection,
    Span,
    Topic,
    TopicFile,
    Topics,
    Traversal,
)
from ep_mcp.packs.references import resolve_reference

# The messages every front door (MCP, the workbench, the CLI) gives for a bad read.
PATH_OR_ID = "pass exactly one of `path` or `id` (a fragment id from a search hit is an id)"
NEIGHBORS_NEED_SECTION = "`neighbors` needs `section` — name the section to centre on"
_SEPARATORS = re.compile(r"\s*(?:>|\u203a|\u00bb)\s*")  # >, single and double angle quotes


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    level: int
    line_range: tuple[int, int]  # 1-based inclusive, raw file lines (heading line first)


def find_document(pack: Pack, path: str | None = None, doc_id: str | None = None) -> Document:
    """The document named by pack path or by id; a clear error naming how to find files."""
    wanted = path if path is not None else doc_id
    if not wanted or not isinstance(wanted, str) or len(wanted) > MAX_PATH_CHARS:
        raise QueryError("pass `path` (a pack-relative file path) or `id` (a frontmatter id)")
    doc = None
    if path is not None:
        doc = pack.document(path[2:] if path.startswith("./") else path)
    else:
        doc = next((d for d in pack.documents if d.id == doc_id), None)
        if doc is None and "\x00" not in wanted:
            resolved = resolve_reference(pack, "", wanted)
            doc = pack.document(resolved) if resolved else None
    if doc is None:
        kind = "file" if path is not None else "id"
        raise NotFoundError(
            f"{kind} {_short(wanted)!r} is not in pack '{pack.slug}'", next_step=LIST_FILES
        )
    return doc


def fragment_target(wanted: str) -> tuple[str, str | None] | None:
    """A fragment id from search (``<id or path>#<anchor>:<sha12>``) as the id or path it
    names and its section (None: the whole file); None when ``wanted`` is not one."""
    fragment = split_fragment_id(wanted)
    if fragment is None:
        return None
    ref, anchor, digest = fragment
    return ref, None if anchor == TOP else f"{anchor}:{digest}" if digest else anchor


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def sections(doc: Document) -> list[Section]:
    """Every heading's section: from the heading to the line before the next heading of the
    same or a higher level (so a section includes its sub-sections)."""
    headings = find_headings(doc)
    n_lines = len(doc.text.splitlines())
    result: list[Section] = []
    stack: list[Heading] = []
    for i, h in enumerate(headings):
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        end = n_lines
        for later in headings[i + 1 :]:
            if later.level <= h.level:
                end = later.line - 1
                break
        result.append(Section(tuple(s.title for s in stack), h.level, (h.line, max(h.line, end))))
    return result


def _norm(title: str) -> str:
    return " ".join(title.lower().lstrip("#").split())


def find_section(doc: Document, wanted: str) -> tuple[int, list[Section]]:
    """Index of the section named by a heading ("Ports") or a heading path
    ("Routing > Setup > Ports"), and the document's sections."""
    all_sections = sections(doc)
    parts = [_norm(p) for p in _SEPARATORS.split(wanted.strip()) if p.strip()]
    if not parts:
        raise QueryError("`section` is empty — pass a heading or a heading path like 'A > B'")
    for i, s in enumerate(all_sections):
        path = [_norm(t) for t in s.heading_path]
        if path[-len(parts) :] == parts and len(path) >= len(parts):
            return i, all_sections
    by_anchor = _find_anchor(doc, all_sections, wanted)
    if by_anchor is not None:
        return by_anchor, all_sections
    available = ", ".join(repr(" > ".join(s.heading_path)) for s in all_sections[:30])
    raise NotFoundError(
        f"no section {_short(wanted)!r} in {doc.path} — sections: {available or 'none'}"
    )


def _neighbors(all_sections: Sequence[Section], index: int) -> list[Section]:
    """The sections just before and after ``index`` at the same level and parent."""
    me = all_sections[index]
    siblings = [
        s
        for s in all_sections
        if s.level == me.level and s.heading_path[:-1] == me.heading_path[:-1]
    ]
    at = siblings.index(me)
    return [siblings[j] for j in (at - 1, at + 1) if 0 <= j < len(siblings)]


def _find_anchor(doc: Document, all_sections: Sequence[Section], wanted: str) -> int | None:
    """The section a fragment anchor names (``v20-api`` or ``v20-api:<sha12>``); among
    duplicate headings, the one holding the span the digest was taken from."""
    name, _, digest = wanted.strip().partition(":")
    found = [i for i, s in enumerate(all_sections) if name in anchors(s.heading_path[-1])]
    if len(found) > 1 and digest:
        lines = doc.text.splitlines(keepends=True)
        for i in found:
            first, last = all_sections[i].line_range
            if holds_span(lines[first - 1 : last], digest):
                return i
    return found[0] if found else None


def _span(doc: Document, line_range: tuple[int, int], reconstruct: bool) -> Span:
    lines = doc.text.splitlines(keepends=True)
    first, last = line_range
    text = "".join(lines[first - 1 : last])
    if not reconstruct:
        return Span(text, (first, last))
    start = sum(len(line.encode("utf-8")) for line in lines[: first - 1])
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    end = start + len(text.encode("utf-8"))
    return Span(text, (first, last), (start, end), f"sha256:{digest}")


@dataclass(frozen=True)
class ReadRequest:
    """What to read of one file: ``ep_read``'s arguments, checked once for every door."""

    path: str | None = None
    doc_id: str | None = None
    section: str | None = None
    neighbors: bool = False
    reconstruct: bool = False

    @classmethod
    def from_args(cls, args: Mapping[str, object], *, centre: bool = False) -> ReadRequest:
        """From ``path`` or ``id`` (exactly one; a fragment id opens its section), ``section``,
        ``neighbors`` and ``reconstruct``. ``centre`` (the workbench): the sections around
        the one read come with it whenever a section is read."""
        path, doc_id, section = (_opt_text(args, key) for key in ("path", "id", "section"))
        if (path is None) == (doc_id is None):
            raise QueryError(PATH_OR_ID)
        target = fragment_target(doc_id or path or "") if section is None else None
        if target is not None:  # a fragment id from a search: its file, at its section
            path, doc_id, section = None, target[0], target[1]  # `id` resolves ids and paths
        neighbors = section is not None if centre else bool(args.get("neighbors", False))
        if neighbors and section is None:
            raise QueryError(NEIGHBORS_NEED_SECTION)
        return cls(path, doc_id, section, neighbors, bool(args.get("reconstruct", False)))

    def read(self, pack: Pack) -> DocumentRead:
        return read_document(
            pack,
            path=self.path,
            doc_id=self.doc_id,
            section=self.section,
            neighbors=self.neighbors,
            reconstruct=self.reconstruct,
        )


def _opt_text(args: Mapping[str, object], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise QueryError(f"`{key}` must be a string")
    return value


def read_document(
    pack: Pack,
    *,
    path: str | None = None,
    doc_id: str | None = None,
    section: str | None = None,
    neighbors: bool = False,
    reconstruct: bool = False,
) -> DocumentRead:
    """A whole atom (frontmatter included), or one section and optionally its neighbours."""
    doc = find_document(pack, path, doc_id)
    resolved = tuple(
        r for r in (resolve_reference(pack, doc.path, ref) for ref in doc.requires) if r
    )
    n_lines = max(1, len(doc.text.splitlines()))
    heading: tuple[str, ...] | None = None
    listed: tuple[str, ...] | None = None
    around: tuple[NeighborSection, ...] | None = None
    if section is None:
        span = _span(doc, (1, n_lines), reconstruct)
        listed = tuple(" > ".join(s.heading_path) for s in sections(doc))
    else:
        index, all_sections = find_section(doc, section)
        me = all_sections[index]
        span = _span(doc, me.line_range, reconstruct)
        heading = me.heading_path
        if neighbors:
            around = tuple(
                NeighborSection(s.heading_path, _span(doc, s.line_range, reconstruct))
                for s in _neighbors(all_sections, index)
            )
    fragment = None
    if span.span_hash is not None:
        title = heading[-1] if heading else None
        fragment = fragment_id(doc.id or doc.path, title, span.span_hash[7:])
    return DocumentRead(
        pack.slug, DocumentInfo.of(doc), resolved, span, heading, listed, around, fragment
    )


def list_topics(pack: Pack, doc_type: str | None = None) -> Topics:
    """The pack's files grouped by frontmatter type (navigation files marked)."""
    groups: dict[str, list[TopicFile]] = defaultdict(list)
    for doc in sorted(pack.documents, key=lambda d: d.path):
        t = doc.type or "untyped"
        if doc_type is not None and t != doc_type:
            continue
        groups[t].append(TopicFile(doc.path, doc.title, doc.id, doc.navigation))
    if doc_type is not None and not groups:
        types = sorted({d.type or "untyped" for d in pack.documents})
        raise NotFoundError(
            f"no files of type {doc_type!r} in pack '{pack.slug}' — types: {', '.join(types)}"
        )
    topics = tuple(Topic(t, tuple(items)) for t, items in sorted(groups.items()))
    return Topics(pack.slug, pack.name, pack.kind, topics)


def filter_warnings(
    pack: Pack, doc_type: str | None = None, tags: Sequence[str] = ()
) -> tuple[str, ...]:
    """Why a search filter cannot match: a type or tag no file of the pack has, with the
    nearest known values and the full list (a typo otherwise returns nothing, silently)."""
    warnings = []
    types = sorted({d.type for d in pack.documents if d.type})
    if doc_type is not None and doc_type not in types:
        warnings.append(_unknown("type", doc_type, types, pack.slug))
    known = sorted({t for d in pack.documents for t in d.tags})
    warnings.extend(_unknown("tag", t, known, pack.slug) for t in tags if t not in known)
    return tuple(warnings)


def _unknown(what: str, value: str, known: Sequence[str], slug: str) -> str:
    close = difflib.get_close_matches(value, known, n=3)
    guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    shown = ", ".join(known[:30]) + (f" … ({len(known)} in all)" if len(known) > 30 else "")
    return f"no file of pack '{slug}' has {what} {value!r} — {guess}{what}s: {shown or 'none'}"


def _resolve_start(pack: Pack, start: str) -> str:
    if pack.document(start) is not None:
        return start
    resolved = resolve_reference(pack, "", start) if "\x00" not in start else None
    if resolved is None:
        raise NotFoundError(
            f"{_short(start)!r} is neither a file nor a node id of pack '{pack.slug}'",
            next_step=LIST_TOPICS,
        )
    return resolved


def traverse(
    pack: Pack, start: str, depth: int = 1, edge_kinds: Iterable[str] | None = None
) -> Traversal:
    """Breadth-first walk over the pack's link graph from a file or node id, both directions,
    each node once (cycles are safe), up to ``depth`` hops."""
    kinds = set(edge_kinds or ())

    def wanted(kind: str) -> bool:
        return not kinds or kind in kinds or kind.removeprefix("graph:") in kinds

    out_edges: dict[str, list[tuple[str, str]]] = defaultdict(list)
    in_edges: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for e in pack.edges:
        if wanted(e.kind):
            out_edges[e.source].append((e.target, e.kind))
            in_edges[e.target].append((e.source, e.kind))
    origin = _resolve_start(pack, start)
    seen = {origin: 0}
    queue: deque[str] = deque([origin])
    edges: list[GraphEdge] = []
    while queue:
        node = queue.popleft()
        if seen[node] >= depth:
            continue
        for target, kind, outgoing in [(t, k, True) for t, k in out_edges[node]] + [
            (s, k, False) for s, k in in_edges[node]
        ]:
            src, dst = (node, target) if outgoing else (target, node)
            edges.append(GraphEdge(src, dst, kind))
            if target not in seen:
                seen[target] = seen[node] + 1
                queue.append(target)
    nodes = []
    for path, hops in sorted(seen.items(), key=lambda item: (item[1], item[0])):
        doc = pack.document(path)
        nodes.append(
            GraphNode(
                path,
                doc.id if doc else None,
                doc.title if doc else path,
                doc.type if doc else "",
                hops,
            )
        )
    return Traversal(pack.slug, origin, depth, tuple(nodes), tuple(dict.fromkeys(edges)))
