"""Every config key a user-facing message names (`index.max_file_bytes`, `hub.min_match`)
exists in the settings model: a message that names a key nobody can set sends people nowhere."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

from ep_mcp.config.model import Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "ep_mcp"
# section(.or section[i]).key, the key snake_case; not part of a longer dotted name
KEY = re.compile(r"(?<![\w.])([a-z]{2,})(?:\[[^\]]*\])?\.([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE)\b")
# dotted names that are not config keys: the cgroup v1 files serve/cpu_budget.py reads, and
# the code bench/restart.py runs in a child process
NOT_CONFIG = {
    "cpu.cfs_quota_us",
    "cpu.cfs_period_us",
    "memory.limit_in_bytes",
    "time.perf_counter",
}


def _fields(cls: Any) -> dict[str, Any]:
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _sections() -> dict[str, set[str]]:
    """Top-level section → its keys (a tuple of dataclasses, as `packs`, by its item's)."""
    out = {}
    for name, tp in _fields(Settings).items():
        item = next((a for a in get_args(tp) if dataclasses.is_dataclass(a)), tp)
        if dataclasses.is_dataclass(item):
            out[name] = set(_fields(item))
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def named_keys(source: str) -> list[str]:
    """The dotted config-like keys the string constants of ``source`` name (docstrings and
    SQL excepted)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in docs and not SQL.search(text):
            keys = (f"{m.group(1)}.{m.group(2)}" for m in KEY.finditer(text))
            found += [key for key in keys if key not in NOT_CONFIG]
    return found


def test_the_scan_finds_a_key_named_in_a_message_and_not_one_in_a_docstring() -> None:
    source = '"""About chunking.max_file_bytes."""\nx = f"raise chunking.max_file_bytes {1}"\n'
    assert named_keys(source) == ["chunking.max_file_bytes"]
    assert named_keys('y = "packs[0].index_dir, see index.db"\n') == ["packs.index_dir"]


def test_every_config_key_named_in_a_message_exists_in_the_settings() -> None:
    sections = _sections()
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        for key in named_keys(path.read_text(encoding="utf-8")):
            section, name = key.split(".", 1)
            if name not in sections.get(section, set()):
                wrong.append(f"{path.relative_to(SRC)}: {key}")
    assert wrong == [], "messages name keys the config does not have"
