"""`ep-mcp index PACK --out DIR` (publish an artifact) and `ep-mcp index --check DIR`."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from ep_mcp.cli.app import emit_json, warn
from ep_mcp.config.model import Settings


def publish_artifact(
    settings: Settings, out: Path, keep: int, force: bool, as_json: bool, to: str = "artifact"
) -> None:
    """Build the pack into ``out/<slug>/<version>``, make it current, say what happened;
    ``to`` postgres: then load that version into PostgreSQL and make it current there."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.library.publish import publish

    if to == "postgres":
        # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
        from ep_mcp.index.pgconnect import connect, resolve_dsn

        connect(resolve_dsn(settings.index)).close()  # before any build: a bad DSN is news
    done = publish(settings, os.environ, out, keep=keep, force=force)
    m = done.manifest
    loaded = None
    if to == "postgres":
        # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
        from ep_mcp.index.pgload import publish_version

        loaded = publish_version(settings.index, done.version_dir, keep)
    if as_json:
        emit_json(
            {
                **({"postgres": dataclasses.asdict(loaded)} if loaded is not None else {}),
                "pack": done.slug,
                "artifact": str(done.version_dir),
                "unchanged": done.unchanged,
                "seconds": done.seconds,
                "removed": [str(p) for p in done.removed],
                "warnings": list(done.warnings),
                "manifest": m.to_dict(),
            }
        )
    else:
        state = "unchanged, still current" if done.unchanged else "published, now current"
        click.echo(
            f"{done.slug}: version {m.version} {state} — {m.files} files, {m.chunks} chunks, "
            f"model {m.model or 'none'}, {m.index_bytes} bytes in {done.seconds:.2f}s "
            f"→ {done.version_dir}"
        )
        if loaded is not None:
            what = "already loaded" if loaded.already else f"loaded in {loaded.seconds:.2f}s"
            click.echo(
                f"{done.slug}: version {m.version} {what}, now current on PostgreSQL "
                f"(schema {loaded.schema})"
                + (f"; dropped {', '.join(loaded.removed)}" if loaded.removed else "")
            )
    for warning in done.warnings:
        warn(f"warning: {warning}")


def check_artifact(location: Path, as_json: bool) -> None:
    """Verify the artifact(s) at ``location``; an `ArtifactError` is the one failing line."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.library.publish import check_location

    manifests = check_location(location)
    if as_json:
        emit_json({"ok": True, "artifacts": [m.to_dict() for m in manifests]})
        return
    for m in manifests:
        click.echo(
            f"ok {m.slug} {m.version}: {m.files} files, {m.chunks} chunks, "
            f"model {m.model or 'none'} ({m.dimension or '-'} dims), schema {m.schema_version}, "
            f"sha256 {m.index_sha256[:12]}"
        )
