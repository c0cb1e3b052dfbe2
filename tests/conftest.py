"""Shared fixtures: paths to the shared packs, a tmp pack builder, a fake embedder."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ep_mcp.bench.reliability import DAMAGE as BENCH_DAMAGE

pytest_plugins = ["postgres_server"]  # the `postgres_dsn` fixture

REPO = Path(__file__).resolve().parents[1]
SHARED_ENV = "EP_MCP_SHARED"  # the shared folder (packs/, skills/); default ../shared
SHARED = Path(os.environ.get(SHARED_ENV) or REPO.parent / "shared")
PACKS = SHARED / "packs"
SKILLS = SHARED / "skills"
EXAMPLE_PACK = REPO / "src" / "ep_mcp" / "example_pack"


def _shared_snapshot() -> dict[str, str]:
    """Every entry under the shared folder: a link's target, a file's mtime and SHA-256."""
    snapshot: dict[str, str] = {}
    if not SHARED.is_dir():
        return snapshot
    for path in sorted(SHARED.rglob("*")):
        rel = path.relative_to(SHARED).as_posix()
        if path.is_symlink():
            snapshot[rel] = f"link {os.readlink(path)}"
        elif path.is_dir():
            snapshot[rel] = "folder"
        elif path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            snapshot[rel] = f"file {path.stat().st_mtime_ns} {digest}"
        else:
            snapshot[rel] = "other"
    return snapshot


_SHARED_BEFORE = pytest.StashKey[dict[str, str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SHARED_BEFORE] = _shared_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails if anything under the shared folder appeared, changed or went away:
    tests copy the shared packs first (or open them read-only), never write into them."""
    before = session.config.stash.get(_SHARED_BEFORE, None)
    if before is None:
        return
    after = _shared_snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if not changed:
        return
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(
            f"FAILED: the tests wrote into {SHARED} ({len(changed)} path(s) changed: "
            f"{', '.join(changed[:5])}) — copy a shared pack before writing to it",
            red=True,
        )


def shared_path(*parts: str) -> Path:
    """A folder of the shared test data (``shared_path("packs", "solar-diy")``), or a skip
    that says where it was looked for and how to point at it. Every test that needs the
    shared packs or skills goes through here (import it: ``from conftest import shared_path``)."""
    path = SHARED.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(
            f"{path} is not there — set {SHARED_ENV} to the shared folder (with packs/ and "
            "skills/), or put it at ../shared beside the repository"
        )
    return path


def wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Poll ``base``/health until it answers 200; fail with the server's log if it exits first
    or does not answer within ``timeout_s``."""
    import httpx2

    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        assert time.monotonic() < deadline, f"server did not start in {timeout_s:g} s"
        time.sleep(0.1)


def shared_pack(name: str) -> Path:
    return shared_path("packs", name)


@pytest.fixture(scope="session")
def compiled_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the local model's optimised graph, built once per test run. A test that
    is not about the compile copies it into its home (`seed_compiled_model`) and skips it."""
    from ep_mcp.index.embed.base import EmbeddingSpec
    from ep_mcp.index.embed.local import LocalEmbedder

    folder = tmp_path_factory.mktemp("compiled-model")
    LocalEmbedder(EmbeddingSpec(cache_dir=folder)).embed_query("warm up")
    return folder


def seed_compiled_model(home: Path, compiled: Path) -> None:
    """Put the run's compiled model where ``home``'s local embedder looks for it."""
    import shutil

    shutil.copytree(compiled, home / "models", dirs_exist_ok=True)


@pytest.fixture
def make_pack(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write {relative path: text} into a fresh folder and return it."""

    def make(files: dict[str, str], name: str = "pack") -> Path:
        root = tmp_path / name
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return make


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-user data (taps, read-only packs' indexes) goes to a temp folder in tests."""
    monkeypatch.setenv("EP_MCP_HOME", str(tmp_path_factory.mktemp("ep-home")))


CANARY = "zebracanary"  # in every secret file below: no output may ever contain it


@dataclass(frozen=True)
class HostileCorpus:
    """What `plant_hostile` put in a pack: paths to ask for, and the bytes never to serve."""

    requests: tuple[str, ...]  # pack-relative paths an attacker would ask for
    canaries: tuple[str, ...]  # one per secret; none may appear in any output
    hard_link: str  # the hard link to an outside file (served: see docs/server.md)
    alias: str  # an in-pack link to a good file (served)


def _secret(path: Path, token: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:  # appends to a real .git/config
        fh.write(f"\n# {CANARY} {token}\n[ep]\n\tsecret = {CANARY}-{token}\n")
    return f"{CANARY}-{token}"


def _plant_hostile(root: Path, outside: Path, good: str) -> HostileCorpus:
    """Symlinks to `.git/config`, dot-files, dot-folders and outside (absolute and relative),
    a symlinked folder, a FIFO, a link to /dev/zero, a hidden file, a hard link and an alias.
    ``good`` names an existing pack file the alias points at."""
    canaries = (
        _secret(root / ".git" / "config", "gitconfig"),
        _secret(root / ".secret.md", "dotfile"),
        _secret(root / ".hidden" / "x.md", "dotfolder"),
        _secret(outside / "secret.md", "outside"),
    )
    links = {
        "git-config.md": ".git/config",
        "sub/git.md": "../.git/config",
        "dotfile.md": ".secret.md",
        "dotfolder.md": ".hidden/x.md",
        "outside-abs.md": str(outside / "secret.md"),
        "outside-rel.md": os.path.relpath(outside / "secret.md", root),
        "zero.md": "/dev/zero",
    }
    for rel, target in links.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(target)
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)
    (root / "hidden-dir").symlink_to(".hidden", target_is_directory=True)
    os.mkfifo(root / "fifo.md")
    (outside / "hard.md").write_text("# Hard\n\nhardlinked operator file\n", encoding="utf-8")
    os.link(outside / "hard.md", root / "hard.md")
    (root / "alias.md").symlink_to(good)
    requests = (
        *links,
        "linked-dir/secret.md",
        "hidden-dir/x.md",
        "fifo.md",
        ".git/config",
        ".secret.md",
        ".hidden/x.md",
        "sub/../.git/config",
        os.path.relpath(outside / "secret.md", root),
        str(outside / "secret.md"),
    )
    return HostileCorpus(requests, canaries, "hard.md", "alias.md")


@pytest.fixture
def plant_hostile() -> Callable[[Path, Path, str], HostileCorpus]:
    """plant_hostile(pack_root, outside_folder, good_file) → HostileCorpus (see above)."""
    return _plant_hostile


def _fts_shadow(path: Path) -> None:
    import apsw

    conn = apsw.Connection(str(path))
    conn.execute("DELETE FROM chunks_fts_data WHERE id > 10")
    conn.close()


# the damage `ep-mcp bench reliability` measures, plus FTS5 shadow-table damage
DAMAGE: dict[str, Callable[[Path], object]] = {**BENCH_DAMAGE, "fts shadow table": _fts_shadow}


@pytest.fixture(params=sorted(DAMAGE))
def damage(request: pytest.FixtureRequest) -> tuple[str, Callable[[Path], None]]:
    """(name, damage(index_path)): one way an index file gets damaged, for each test run."""
    name = str(request.param)
    return name, DAMAGE[name]
