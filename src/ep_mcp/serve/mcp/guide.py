"""Server instructions and prompts of a pack (SPEC §5)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.packs.models import Pack

CONSUME_LOOP = (
    "How to use this server: 1) ep_search with the user's question in plain words; "
    "2) ep_read the whole atom (file) behind the best hit; 3) ep_read the atoms its "
    "`requires` names; 4) stop as soon as you can answer, and cite the atom id or path. "
    "An empty search result means the pack does not cover the question: say so instead "
    "of guessing."
)


def _boundary(pack: Pack) -> str:
    b = pack.manifest.get("authority_boundary")
    if not isinstance(b, Mapping):
        return f"Pack '{pack.slug}': answer only from its files."
    parts = [f"Authority boundary of '{pack.slug}':"]
    if b.get("in_scope"):
        parts.append(f"in scope: {' '.join(str(b['in_scope']).split())}.")
    for key, label in (("out_of_scope", "out of scope"), ("refuse_when", "refuse when")):
        items = b.get(key)
        if isinstance(items, list) and items:
            parts.append(f"{label}: " + "; ".join(str(i) for i in items) + ".")
    if b.get("no_source_no_claim"):
        parts.append("No source, no claim: never state what no atom supports.")
    return " ".join(parts)


def _own(pack: Pack) -> str:
    mcp = pack.manifest.get("mcp")
    own = mcp.get("instructions") if isinstance(mcp, Mapping) else None
    if isinstance(own, str) and own.strip():
        return " ".join(own.split())
    return f"Pack '{pack.slug}' ({pack.name}): {pack.description or pack.kind}".strip()


def instructions(packs: Sequence[Pack]) -> str:
    """The pack's own instructions, the consume loop and each authority boundary."""
    if len(packs) == 1:
        pack = packs[0]
        return "\n\n".join([_own(pack), CONSUME_LOOP, _boundary(pack)])
    lines = [
        "This server serves several packs; pass `pack` (a slug) to every tool — ep_search "
        "without it searches them all, each hit naming its pack."
    ]
    lines += [f"- {p.slug}: {_own(p)}" for p in packs]
    return (
        "\n".join(lines) + "\n\n" + CONSUME_LOOP + "\n\n" + "\n".join(_boundary(p) for p in packs)
    )


@dataclass(frozen=True)
class PromptDef:
    name: str
    description: str
    source: str  # pack-relative path of the file whose text becomes the prompt


def pack_prompts(pack: Pack) -> list[PromptDef]:
    """Prompts from `mcp.prompts`, else one per `type: workflow` file."""
    mcp = pack.manifest.get("mcp")
    declared = mcp.get("prompts") if isinstance(mcp, Mapping) else None
    found: dict[str, PromptDef] = {}
    for item in declared if isinstance(declared, list) else []:
        if not isinstance(item, Mapping):
            continue
        name, source = item.get("name"), item.get("source")
        if isinstance(name, str) and isinstance(source, str) and pack.document(source):
            desc = " ".join(str(item.get("description") or "").split())
            found.setdefault(name, PromptDef(name, desc or f"Workflow {name}", source))
    if not found:
        for doc in pack.documents:
            if doc.type == "workflow":
                name = posixpath.splitext(posixpath.basename(doc.path))[0]
                found.setdefault(name, PromptDef(name, doc.title, doc.path))
    return sorted(found.values(), key=lambda p: p.name)


def render_prompt(pack: Pack, prompt: PromptDef, question: str | None) -> str:
    doc = pack.document(prompt.source)
    body = doc.body.strip() if doc is not None else ""
    text = (
        f"Follow this workflow from pack '{pack.slug}' ({prompt.source}). Use ep_search and "
        f"ep_read with pack='{pack.slug}' for anything it refers to.\n\n{body}"
    )
    if question:
        text += f"\n\nThe user's situation: {question}"
    return text
