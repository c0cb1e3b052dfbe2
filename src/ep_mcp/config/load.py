"""Loading the settings: a config file (bounded YAML) or a mapping, into one checked `Settings`.

It sits above the settings model, its schema and checks (which import nothing of ours but the
errors) because it reads YAML through `packs/yamlsafe` and asks the registries what a config may
name: the pack kinds (`packs.loader.READERS`) and the embedding providers (built-ins and any a
plugin registered before the settings were read).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ep_mcp.config.checks import check_settings
from ep_mcp.config.compat import old_hub_key, translate_reference
from ep_mcp.config.model import Settings
from ep_mcp.config.schema import build_dataclass, config_problems_error
from ep_mcp.errors import ConfigError
from ep_mcp.index.embed.base import providers
from ep_mcp.index.embed.registry import register_builtins
from ep_mcp.packs.loader import READERS
from ep_mcp.packs.yamlsafe import YamlError, load_yaml_file


def known_providers() -> list[str]:
    """The embedding providers a config may name: the built-ins and any registered since."""
    register_builtins()
    return providers()


def load_settings(path: Path | None = None, data: Mapping[str, Any] | None = None) -> Settings:
    """Read and validate a config file (or mapping). Nothing starts before this succeeds."""
    base: Path | None = None
    if path is not None:
        try:
            loaded = load_yaml_file(path)
        except OSError as exc:
            raise ConfigError(
                f"cannot read config {path}: {exc.strerror} — check the path"
            ) from exc
        except YamlError as exc:
            raise ConfigError(str(exc)) from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, Mapping):
            raise ConfigError(f"{path}: the config must be a YAML mapping at the top level")
        data = translate_reference(loaded)
        base = path.resolve().parent
    problems: list[str] = []
    data, deprecations = old_hub_key(data or {}, problems)
    settings: Settings = build_dataclass(Settings, data, "", base, problems)
    problems += check_settings(settings, providers=known_providers(), pack_kinds=tuple(READERS))
    if problems:
        raise config_problems_error(problems, path)
    return dataclasses.replace(settings, deprecations=deprecations) if deprecations else settings
