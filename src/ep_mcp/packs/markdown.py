"""Plain markdown folder reader: any `.md` files; title = first `# ` heading or the file stem."""

from __future__ import annotations

from pathlib import Path

from ep_mcp.packs.documents import build_document, read_markdown_files
from ep_mcp.packs.files import Warnings
from ep_mcp.packs.models import Pack
from ep_mcp.packs.references import References, link_edges


def load_markdown(root: Path, *, slug: str, max_file_bytes: int) -> Pack:
    """Read a plain folder of markdown (``root`` resolved). Frontmatter is used when present."""
    warnings = Warnings()
    parsed_files, _ = read_markdown_files(root, max_file_bytes, warnings)
    documents = [build_document(parsed) for parsed in parsed_files]
    edges = link_edges(documents, References(documents, slug))
    return Pack(
        root=root,
        slug=slug,
        name=root.name,
        kind="markdown",
        pack_type="markdown",
        manifest={},
        documents=tuple(documents),
        edges=tuple(edges),
        warnings=tuple(warnings.items),
    )
