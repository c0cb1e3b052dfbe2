"""The YAML schema of the settings, derived from their dataclasses: every field is a key.

Every unknown key and badly typed value is collected with its path (``retrieval.mmr_lambda``),
with a "did you mean …?" where a known key or choice is close, so one run reports them all.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from ep_mcp.config.compat import reference_keys
from ep_mcp.config.model import PackSettings, TapSettings
from ep_mcp.errors import ConfigError


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("typing.", "")


class _Invalid:
    """A value that could not be built; its problem is already recorded."""


INVALID: Any = _Invalid()


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` — did you mean X?`` when one choice is close to ``word``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" — did you mean {close[0]}?" if close else ""


def _coerce(value: Any, tp: Any, path: str, base: Path | None, problems: list[str]) -> Any:
    """Check and convert one YAML value to the annotated type. A leaf problem raises
    ConfigError; problems inside a nested mapping or list are added to ``problems`` and the
    bad part is left out (``INVALID``), so one run reports every mistake."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, path, base, problems)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{path}: invalid value {value!r}")
    if origin is tuple:
        (item_tp, _) = typing.get_args(tp)
        if isinstance(value, str | int | float) and item_tp is str:
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__}")
        items = []
        for i, v in enumerate(value):
            try:
                items.append(_coerce(v, item_tp, f"{path}[{i}]", base, problems))
            except ConfigError as exc:
                problems.append(str(exc))
        return tuple(item for item in items if item is not INVALID)
    if isinstance(tp, type) and issubclass(tp, StrEnum):
        allowed = [m.value for m in tp]
        if not isinstance(value, str) or value not in allowed:
            hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
            raise ConfigError(f"{path}: must be one of {', '.join(allowed)} — got {value!r}{hint}")
        return tp(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp is PackSettings and isinstance(value, str):
            value = {"path": value}
        artifact_only = isinstance(value, Mapping) and "artifact" in value and "path" not in value
        if tp is PackSettings and artifact_only:  # an artifact carries its pack's files
            value = {"path": value["artifact"], **value}
        if tp is TapSettings and isinstance(value, str):
            value = {"url": value}
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
        return build_dataclass(tp, value, path, base, problems)
    return _coerce_scalar(value, tp, path, base)


def _coerce_scalar(value: Any, tp: Any, path: str, base: Path | None) -> Any:
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return str(value)
    if tp is Path:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a path, got {value!r}")
        p = Path(value).expanduser()
        return p if p.is_absolute() or base is None else (base / p)
    raise ConfigError(f"{path}: unsupported type {_type_name(tp)}")  # pragma: no cover


LIST_KEYS_UP_TO = 15  # an unknown key in a section this small is answered with its keys


def _unknown_key(key_path: str, key: str, names: Iterable[str], section: str) -> str:
    known = sorted(n for n in names if not n.startswith("_"))
    hint = did_you_mean(key, [*known, *sorted(reference_keys(section))])
    if hint:
        return f"{key_path}: unknown key{hint}"
    if len(known) <= LIST_KEYS_UP_TO:
        return f"{key_path}: unknown key — known keys here: {', '.join(known)}"
    return f"{key_path}: unknown key — `ep-mcp config` prints every key with its value"


def build_dataclass(
    cls: type[Any],
    data: Mapping[str, Any],
    path: str,
    base: Path | None,
    problems: list[str] | None = None,
) -> Any:
    """Build a settings dataclass from a mapping. Every unknown key and bad value is added to
    ``problems`` with its path (bad keys keep their defaults); without ``problems`` the first
    one raises. A mapping that lacks a required key gives ``INVALID``."""
    found: list[str] = [] if problems is None else problems
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.metadata.get("file", True)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        key_path = f"{path}.{key}" if path else str(key)
        if key not in names:
            section = re.sub(r"\[\d+\]$", "[]", path)
            found.append(_unknown_key(key_path, str(key), names, section))
            continue
        try:
            built = _coerce(value, hints[key], key_path, base, found)
        except ConfigError as exc:
            found.append(str(exc))
            continue
        if built is not INVALID:
            kwargs[key] = built
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in data]  # present but bad: reported
    if missing:
        found.append(f"{path or 'config'}: missing required key(s) {', '.join(missing)}")
    result = INVALID if any(n not in kwargs for n in required) else cls(**kwargs)
    if problems is None and found:
        raise ConfigError(found[0])
    return result


def config_problems_error(problems: list[str], source: Path | None) -> ConfigError:
    """One error for every problem: a single one on one line, several one per line."""
    if len(problems) == 1:
        return ConfigError(problems[0])
    where = f" in {source}" if source else ""
    lines = "\n".join(f"  {p}" for p in problems)
    return ConfigError(f"{len(problems)} problems{where} — fix them all, then run again:\n{lines}")
