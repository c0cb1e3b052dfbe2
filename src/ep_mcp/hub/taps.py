"""Taps on disk: clones under ``<home>/taps/<owner>__<repo>`` plus folders listed in config.

A clone is made into a temporary folder beside its final place and renamed only when git
succeeded, so a failed or interrupted clone never leaves a half tap. An update is such a fresh
clone too, swapped in when its commit differs: git never runs inside an existing tap, whose
``.git/config`` (fsmonitor, filters, hooks, includes…) is not ep-mcp's to execute. A local
folder listed in ``hub.taps`` is indexed in place (never cloned) and keyed by a fingerprint
of its files.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ep_mcp.config.model import TapSettings
from ep_mcp.hub.errors import TapError
from ep_mcp.hub.git import CREDENTIALS_DROPPED, Git, TapSource, parse_source, shown_url
from ep_mcp.hub.results import UpdateResult
from ep_mcp.hub.tapindex import Tap, path_fingerprint

logger = logging.getLogger(__name__)


class TapManager:
    def __init__(
        self,
        home: Path,
        config_taps: Sequence[TapSettings],
        git: Git,
        clone_timeout_s: float = 300.0,
    ) -> None:
        self.root = home / "taps"
        self.git = git
        self.config_taps = tuple(config_taps)
        self.clone_timeout_s = clone_timeout_s

    # -- listing -----------------------------------------------------------------------------

    def _folder_taps(self) -> list[Tap]:
        out = []
        for t in self.config_taps:
            path = Path(t.url.removeprefix("file://")).expanduser()
            if path.is_absolute() and path.is_dir():
                name = t.name or f"local__{path.name}"
                out.append(Tap(name, path.resolve(), path.resolve().as_uri(), cloned=False))
        return out

    def _remote_config(self) -> list[tuple[TapSource, TapSettings]]:
        out = []
        for t in self.config_taps:
            path = Path(t.url.removeprefix("file://")).expanduser()
            if path.is_absolute():
                if not path.is_dir():
                    logger.warning("hub.taps: %s is not a folder — skipped", t.url)
                continue
            try:
                parsed = parse_source(t.url)
            except TapError as exc:
                logger.warning("hub.taps: %s", exc)
                continue
            if parsed.dropped_credentials:
                logger.warning("hub.taps: %s: %s", parsed.url, CREDENTIALS_DROPPED)
            out.append((parsed, t))
        return out

    def all(self) -> list[Tap]:
        """Every tap: clones on disk, then config folders (first name wins)."""
        taps: dict[str, Tap] = {}
        if self.root.is_dir():
            for child in sorted(self.root.iterdir()):
                if child.name.startswith(".") or not (child / ".git").exists():
                    continue
                taps[child.name] = Tap(child.name, child, "", cloned=True)
        for tap in self._folder_taps():
            taps.setdefault(tap.name, tap)
        return list(taps.values())

    def key(self, tap: Tap) -> str:
        """What the index is keyed by: the git commit of a clone, a fingerprint of a folder."""
        return self.git.head(tap.path) if tap.cloned else path_fingerprint(tap.path)

    def describe(self, tap: Tap) -> tuple[str | None, str | None, str | None]:
        """The tap's shown origin URL and commit (or fingerprint), and why one is missing."""
        url = None
        try:
            url = shown_url(self.git.origin(tap.path) if tap.cloned else tap.url)
            return url, self.key(tap), None
        except TapError as exc:
            return url, None, str(exc)

    # -- changes -----------------------------------------------------------------------------

    def add(self, source: str, *, allow_file: bool = False, cwd: Path | None = None) -> Tap:
        """Clone a new tap. Refused sources never reach git; failures leave nothing behind."""
        parsed = parse_source(source, allow_file=allow_file, cwd=cwd)
        if parsed.dropped_credentials:
            logger.warning("%s: %s", parsed.url, CREDENTIALS_DROPPED)
        return self._clone(parsed)

    def _clone(self, parsed: TapSource, name: str | None = None) -> Tap:
        name = name or parsed.name
        dest = self.root / name
        if dest.exists():
            raise TapError(f"'{name}' is already tapped — refresh it with `ep-mcp update`")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=self.root))
        try:
            self.git.clone(parsed, tmp / "repo", timeout=self.clone_timeout_s)
            (tmp / "repo").rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        logger.info("tapped %s → %s", parsed.url, dest)
        return Tap(name, dest, parsed.url, cloned=True)

    def _refresh(self, tap: Tap) -> tuple[str | None, str]:
        """Clone the tap's origin afresh when its HEAD moved, and swap it in: (old, new)."""
        origin = self.git.origin(tap.path)
        parsed = parse_source(origin, allow_file=origin.startswith("file://"))
        try:
            old: str | None = self.git.head(tap.path)
        except TapError:
            old = None
        if old is not None and self.git.remote_head(parsed, self.clone_timeout_s) == old:
            return old, old  # one round trip, like a fetch that brings nothing
        tmp = Path(tempfile.mkdtemp(prefix=f".{tap.name}.", suffix=".partial", dir=self.root))
        try:
            self.git.clone(parsed, tmp / "repo", timeout=self.clone_timeout_s)
            new = self.git.head(tmp / "repo")
            if new != old:
                self._swap(tap.path, tmp / "repo", tmp / "old")
        finally:
            if (tmp / "old").exists() and not tap.path.exists():  # neither could be put back
                logger.error("tap %s: its previous clone is kept at %s", tap.name, tmp / "old")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
        return old, new

    @staticmethod
    def _swap(dest: Path, fresh: Path, aside: Path) -> None:
        """Put ``fresh`` at ``dest``; the old folder goes ``aside`` (and comes back on failure)."""
        try:
            dest.rename(aside)
            try:
                fresh.rename(dest)
            except OSError:
                aside.rename(dest)
                raise
        except OSError as exc:
            raise TapError(
                f"cannot replace {dest.name} with its fresh clone ({exc.strerror}) — check the "
                "permissions of the taps folder"
            ) from None

    def find(self, name: str) -> Tap:
        taps = {t.name: t for t in self.all()}
        if name in taps:
            return taps[name]
        try:
            guess = parse_source(name, allow_file=True).name
        except TapError:
            guess = name
        if guess in taps:
            return taps[guess]
        raise TapError(f"no tap named '{name}' — taps: {', '.join(taps) or 'none'}")

    def remove(self, name: str) -> Tap:
        tap = self.find(name)
        if not tap.cloned:
            raise TapError(f"'{tap.name}' comes from hub.taps in config.yaml — remove it there")
        shutil.rmtree(tap.path)
        return tap

    def update(self, names: Sequence[str] = ()) -> list[UpdateResult]:
        """Refresh every clone (or the named ones); clone config taps that are missing."""
        results: list[UpdateResult] = []
        existing = {t.name for t in self.all()}
        if not names:
            for parsed, cfg in self._remote_config():
                name = cfg.name or parsed.name
                if name in existing:
                    continue
                try:
                    tap = self._clone(parsed, name)
                    results.append(UpdateResult(name, None, self.git.head(tap.path), True))
                except TapError as exc:
                    results.append(UpdateResult(name, None, None, False, str(exc)))
        chosen = [self.find(n) for n in names] if names else self.all()
        for tap in chosen:
            if not tap.cloned:
                continue
            try:
                old, new = self._refresh(tap)
                results.append(UpdateResult(tap.name, old, new, old != new))
            except TapError as exc:
                results.append(UpdateResult(tap.name, None, None, False, str(exc)))
        return results
