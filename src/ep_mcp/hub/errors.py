"""Errors of the skills hub (all `EpMcpError`s, so every adapter renders them as user errors)."""

from __future__ import annotations

from ep_mcp.errors import EpMcpError, NotFoundError


class TapError(EpMcpError):
    """A tap source was refused, or git could not clone, fetch or read it."""


class SkillNotFoundError(NotFoundError):
    """No skill (or several) answer to a name."""


class DiscoveryError(EpMcpError):
    """GitHub discovery could not run (no `gh`, not logged in, or it failed)."""
