"""`ep-mcp config`: the settings in force, as YAML (every key with its value)."""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path
from typing import Any

import click
import yaml

from ep_mcp.cli.app import config_option, fail_cleanly, main, resolve_settings
from ep_mcp.config.model import Settings


def plain(value: Any) -> Any:
    """Settings as plain YAML-ready data: tuples as lists, paths as strings; secrets (fields
    kept out of repr) only say whether they are set."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            if f.repr
            else ("<set>" if getattr(value, f.name) else None)
            for f in dataclasses.fields(value)
            if f.metadata.get("file", True)  # set at the edge only (EnvKeys)
        }
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    return value


def settings_yaml(settings: Settings) -> str:
    return yaml.safe_dump(plain(settings), sort_keys=False, allow_unicode=True)


@main.command("config")
@config_option
@click.option("--defaults", is_flag=True, help="Print the built-in defaults, ignoring files.")
@fail_cleanly
def config_cmd(config: Path | None, defaults: bool) -> None:
    """Print the settings in force (config file over defaults) as YAML."""
    if defaults:
        data = plain(Settings())
        data.pop("home")
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
        return
    settings = resolve_settings(config)
    for note in settings.deprecations:  # YAML comments: the output still reads as config
        click.echo(f"# deprecated: {note}")
    click.echo(settings_yaml(settings), nl=False)
