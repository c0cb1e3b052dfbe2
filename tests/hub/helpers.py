"""Helpers shared by the hub tests: skill files, small repositories, commits, fake PATHs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ep_mcp.hub.git import Git


def skill_md(name: str, description: str, body: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"


SMALL_REPO = {
    "skills/pdf-forms/SKILL.md": skill_md(
        "pdf-forms",
        "Use when filling PDF forms or extracting fields from a PDF.",
        "## Filling fields\n\nOpen the form, list the fields, write the values.\n\n"
        "## Flattening\n\nFlatten the form so nobody can edit it afterwards.\n",
    ),
    "skills/pdf-forms/reference.md": "# Field types\n\nText, checkbox and signature fields.\n",
    "skills/kubernetes-ingress/SKILL.md": skill_md(
        "kubernetes-ingress",
        "Use when exposing a Kubernetes service over HTTPS with TLS.",
        "## Certificates\n\nUse cert-manager to issue the TLS certificates.\n",
    ),
    "skills/marinade/SKILL.md": skill_md(
        "marinade",
        "Use when grilling chicken and it needs flavour.",
        "## Basics\n\nOil, acid, salt and garlic; two hours in the fridge.\n",
    ),
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def commit(repo: Path, files: dict[str, str], message: str = "change") -> str:
    write_tree(repo, files)
    return Git(os.environ).init_commit(repo, message)


def env_with_path(folder: Path, **extra: str) -> dict[str, str]:
    """An environment whose PATH holds the fake tools and git, nothing else of ours."""
    git_dir = str(Path(shutil.which("git") or "/usr/bin/git").parent)
    return {
        "PATH": f"{folder}{os.pathsep}{git_dir}{os.pathsep}/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        **extra,
    }
