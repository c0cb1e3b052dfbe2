"""docs/ARCHITECTURE.md speaks of the tree as it is, and the layers contract names all of it.

Every path the "Where to add" table names is a file under ``src/ep_mcp``; every module path the
whole page names in backticks (``packs/headings.py``, ``serve/mcp/server.py``) exists; and every
package or top-level module of ``ep_mcp`` stands on a floor of the layers contract, so a new
package cannot sit outside the house's one direction of dependency.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ep_mcp"
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
PATH = re.compile(r"`([a-z_]+(?:/[a-z_]+)*(?:/\*_cmds)?\.py)`")
KINDS = ("tool", "provider", "stage", "storage engine", "CLI command", "workbench page")


def _where_to_add() -> str:
    return DOC.split("## Where to add", 1)[1].split("\n## ", 1)[0]


def _exists(rel: str) -> bool:
    if rel.startswith(("tests/", "docs/", "scripts/")):
        return (ROOT / rel).is_file()
    if "*" in rel:
        return any(SRC.glob(rel))
    if (SRC / rel).is_file():
        return True
    # a file named inside its package's paragraph (`runtime.py` under **`library/`**)
    return "/" not in rel and any(SRC.rglob(rel))


def test_every_path_in_where_to_add_exists() -> None:
    table = _where_to_add()
    paths = PATH.findall(table)
    assert len(paths) >= 10, paths
    missing = [p for p in paths if "/" in p and not _exists(p)]
    assert not missing, (
        f"docs/ARCHITECTURE.md's 'Where to add' names files that do not exist: {missing}"
    )


def test_where_to_add_answers_a_newcomers_questions() -> None:
    table = _where_to_add().lower()
    assert all(kind.lower() in table for kind in KINDS), KINDS


def test_every_module_the_page_names_exists() -> None:
    missing = [p for p in sorted(set(PATH.findall(DOC))) if not _exists(p)]
    assert not missing, f"docs/ARCHITECTURE.md names modules that do not exist: {missing}"


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [m.strip() for layer in layers for m in layer.split("|")]


def test_the_layers_contract_names_every_package() -> None:
    named = set(_layers())
    parts = {
        f"ep_mcp.{p.stem if p.is_file() else p.name}"
        for p in SRC.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }
    # a package split across floors is named by its modules (config: load above index)
    split = {n.rsplit(".", 1)[0] for n in named if n.count(".") == 2}
    unnamed = sorted(parts - named - split)
    assert not unnamed, f"name these on a floor of the layers contract in pyproject.toml: {unnamed}"
    for package in split:
        modules = {f"{package}.{p.stem}" for p in (SRC / package.split(".")[1]).glob("*.py")}
        rest = sorted(modules - named - {f"{package}.__init__"})
        assert not rest, f"name these on a floor of the layers contract in pyproject.toml: {rest}"


def test_no_module_imports_itself_back() -> None:
    """No import cycle between our modules, ``TYPE_CHECKING`` and function-level imports
    included: the house has one direction of dependency, room by room too."""
    import grimp  # import-linter's graph builder, a dev dependency

    graph = grimp.build_graph("ep_mcp", exclude_type_checking_imports=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph.find_modules_directly_imported_by(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert not cycles, f"modules that import each other: {cycles}"
