"""Git, the one outside service taps need: parse a tap source safely, clone, read HEAD.

Every git call is an argument list (never a shell), puts ``--`` before the URL, runs with
``GIT_TERMINAL_PROMPT=0`` and a protocol allow-list (https and ssh always; ``file`` only when the
user passed the explicit flag; ``ext`` never), with ``core.symlinks=false`` (a symlink in a tap
lands as a plain file holding the link text), and is bounded in time. Sources are checked before
git ever runs, so ``ext::sh -c …``, ``--upload-pack=…`` or ``-oProxyCommand=…`` never reach it;
credentials in a URL (``https://user:token@…``) are dropped before git sees it, so they are
never written to the clone's config nor shown.

Nothing a tap or a pack configures is executed. git never runs *inside* an existing tap or pack
(whose ``.git/config`` may name an fsmonitor, filters, hooks, includes, an ssh command, a
credential helper…): HEAD is read as files (``packs/gitfiles.py``), the origin URL is parsed by
``git config --file -`` from the config's bytes, an update is a fresh clone swapped in, and a
pack's clean check runs against a private git folder holding only ep-mcp's config. And every
call runs in one hermetic setting (``hub/gitenv.py``): no system or global
config, no hooks, fsmonitor, pager, external diff, askpass or ssh command of anyone's choosing;
the one thing taken from the user's global config is ``credential.helper``, for clones only.
"""

from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ep_mcp.hub.errors import TapError
from ep_mcp.hub.gitenv import git_env, git_options
from ep_mcp.hub.process import run_text
from ep_mcp.packs import gitfiles

logger = logging.getLogger(__name__)

CLONE_TIMEOUT_S = 300.0
QUICK_TIMEOUT_S = 30.0

_SHORTHAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_SCP = re.compile(
    r"(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*):(?P<path>[^\s:]+)"
)
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)")
_SAFE_PART = re.compile(r"[^A-Za-z0-9._-]+")
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")  # in git's messages


CREDENTIALS_DROPPED = (
    "the tap URL carried credentials — they were dropped and are never stored or shown; "
    "give git the credentials with a credential helper (`git config --global "
    "credential.helper store`, or your platform's helper) or use an ssh URL"
)


@dataclass(frozen=True)
class TapSource:
    """A checked tap source: what git is given, and the tap's folder name."""

    url: str  # https://…, ssh://…, user@host:path, or file:///abs/path — never credentials
    name: str  # <owner>__<repo>
    kind: str  # https | ssh | file
    dropped_credentials: bool = False  # the source carried user:password@ (now removed)


def strip_credentials(url: str) -> tuple[str, bool]:
    """``url`` without credentials, and whether it had any.

    https (and any scheme but ssh): the whole ``user[:password]@`` goes (a bare user name is
    often a token). ssh: only ``:password`` goes; the login name (``git@``) is not a secret.
    """
    match = _URL.fullmatch(url.strip())
    if not match:
        return url, False
    scheme, rest = match["scheme"], match["rest"]
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    authority, tail = (rest, "") if cut < 0 else (rest[:cut], rest[cut:])
    userinfo, at, host = authority.rpartition("@")
    if not at:
        return url, False
    if scheme.lower() == "ssh":
        user, colon, _ = userinfo.partition(":")
        if not colon:
            return url, False
        return f"{scheme}://{user}@{host}{tail}", True
    return f"{scheme}://{host}{tail}", True


def shown_url(url: str) -> str:
    """A tap URL safe to print or return: credentials removed (also from old clones)."""
    return strip_credentials(url)[0]


def _name_from(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p and p not in (".", "..")]
    if not parts:
        raise TapError("cannot tell the repository name from the source — pass owner/repo or a URL")
    repo = parts[-1].removesuffix(".git")
    owner = parts[-2] if len(parts) > 1 else "local"
    name = f"{_SAFE_PART.sub('-', owner)}__{_SAFE_PART.sub('-', repo)}".strip(".-")
    if not repo or name.startswith("__"):
        raise TapError("cannot tell the repository name from the source — pass owner/repo or a URL")
    return name


def _refuse(source: str, why: str) -> TapError:
    source = shown_url(source)
    shown = source if len(source) <= 80 else source[:77] + "…"
    return TapError(
        f"refusing tap source {shown!r}: {why} — use https://host/owner/repo, "
        "git@host:owner/repo, owner/repo (GitHub) or a local path with --allow-file"
    )


def parse_source(source: str, *, allow_file: bool = False, cwd: Path | None = None) -> TapSource:
    """Check a tap source and normalise it. Raises TapError before anything runs."""
    text = source.strip()
    if not text:
        raise _refuse(source, "it is empty")
    if text.startswith("-"):
        raise _refuse(source, "it looks like a command-line option")
    if "::" in text:
        raise _refuse(source, "transport helpers (ext::, fd::, …) are never allowed")
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        raise _refuse(source, "it contains control characters")
    match = _URL.fullmatch(text)
    if match:
        scheme = match["scheme"].lower()
        rest = match["rest"]
        if scheme == "file":
            return _file_source(Path(rest), source, allow_file)
        if scheme not in ("https", "ssh"):
            raise _refuse(source, f"the {scheme}:// scheme is not allowed")
        clean, dropped = strip_credentials(text)
        rest = clean[len(match["scheme"]) + 3 :]
        host, _, path = rest.partition("/")
        if not host or host.startswith("-") or any(c.isspace() for c in rest) or not path:
            raise _refuse(source, "it is not a valid repository URL")
        return TapSource(clean, _name_from(path), scheme, dropped)
    scp = _SCP.fullmatch(text)
    if scp and not scp["host"].startswith("-"):
        return TapSource(text, _name_from(scp["path"]), "ssh")
    is_pathlike = (
        text.startswith(("/", "./", "../", "~")) or (cwd or Path.cwd()).joinpath(text).is_dir()
    )
    if _SHORTHAND.fullmatch(text) and not text.startswith(("./", "../")) and not is_pathlike:
        return TapSource(
            f"https://github.com/{text.removesuffix('.git')}", _name_from(text), "https"
        )
    if is_pathlike:
        base = Path(text).expanduser()
        return _file_source(
            base if base.is_absolute() else (cwd or Path.cwd()) / base, source, allow_file
        )
    raise _refuse(source, "it is neither a URL, owner/repo nor an existing folder")


def _file_source(path: Path, source: str, allow_file: bool) -> TapSource:
    if not allow_file:
        raise TapError(
            f"{source!r} is a local repository — cloning local repositories needs the explicit "
            "--allow-file flag (or list the folder under hub.taps in config.yaml to index it "
            "in place)"
        )
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise TapError(f"local tap source {str(resolved)!r} is not a folder — check the path")
    return TapSource(resolved.as_uri(), _name_from(resolved.as_posix()), "file")


def _hidden(path: str) -> bool:
    """A path in a hidden folder or file: never read as part of a pack (``.ep-mcp/``...)."""
    return any(part.startswith(".") for part in path.split("/"))


class Git:
    """Runs git hermetically (:func:`git_env`, :func:`git_options`); ``env`` comes from the edge."""

    def __init__(self, env: Mapping[str, str], binary: str = "git") -> None:
        self._env = git_env(env)
        self._user_env = {k: env[k] for k in ("PATH", "HOME", "XDG_CONFIG_HOME") if k in env}
        self._binary = binary
        self._helpers: tuple[str, ...] | None = None

    def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None = None,
        allow_file: bool = False,
        timeout: float = QUICK_TIMEOUT_S,
        stdin: str | None = None,
        extra_env: Mapping[str, str] | None = None,
        credential_helpers: Sequence[str] = (),
    ) -> str:
        cmd = [self._binary, *git_options(allow_file, credential_helpers), *args]
        env = {**self._env, **(extra_env or {})}
        if cwd is not None:
            return self._call(cmd, args, cwd, env, timeout, stdin)
        # not the process's folder, which may be inside someone's repository; nor above it
        with tempfile.TemporaryDirectory(prefix="ep-mcp-git-") as tmp:
            env["GIT_CEILING_DIRECTORIES"] = str(Path(tmp).parent)
            return self._call(cmd, args, Path(tmp), env, timeout, stdin)

    def _call(
        self,
        cmd: Sequence[str],
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        stdin: str | None,
    ) -> str:
        try:
            done = run_text(cmd, cwd=cwd, env=env, timeout=timeout, stdin=stdin)
        except FileNotFoundError:
            raise TapError("git is not installed — install git to use skill taps") from None
        except subprocess.TimeoutExpired:
            raise TapError(
                f"git {args[0]} took longer than {timeout:.0f}s — try again later"
            ) from None
        if done.returncode != 0:
            detail = _USERINFO.sub(r"\1", (done.stderr or done.stdout)).strip().splitlines()
            raise TapError(f"git {args[0]} failed: {detail[-1] if detail else done.returncode}")
        return done.stdout

    def user_credential_helpers(self) -> tuple[str, ...]:
        """``credential.helper`` from the user's own global git config (read once, or none).

        The user's helper is how private https taps authenticate; it is the only value ep-mcp
        takes from any git config, and only for clones.
        """
        if self._helpers is None:
            cmd = [self._binary, "config", "--global", "--includes", "--get-all"]
            try:
                with tempfile.TemporaryDirectory(prefix="ep-mcp-git-") as tmp:
                    done = run_text(
                        [*cmd, "credential.helper"],
                        cwd=tmp,
                        env={
                            **self._user_env,
                            "GIT_CONFIG_NOSYSTEM": "1",
                            "GIT_CEILING_DIRECTORIES": str(Path(tmp).parent),
                        },
                        timeout=QUICK_TIMEOUT_S,
                    )
                found = done.stdout.splitlines() if done.returncode == 0 else []
            except (OSError, subprocess.SubprocessError):
                found = []
            self._helpers = tuple(h for h in found if h.strip())
        return self._helpers

    def clone(self, source: TapSource, dest: Path, timeout: float = CLONE_TIMEOUT_S) -> None:
        """Shallow clone into ``dest`` (which must not exist)."""
        self.run(
            [
                "clone",
                "--depth",
                "1",
                "--quiet",
                "--no-recurse-submodules",
                "--template=",  # no hooks or info files copied from anyone's template folder
                "--config",
                "core.symlinks=false",  # kept in the clone's config for later checkouts
                "--",
                source.url,
                str(dest),
            ],
            allow_file=source.kind == "file",
            timeout=timeout,
            credential_helpers=self.user_credential_helpers() if source.kind == "https" else (),
        )

    def head(self, repo: Path) -> str:
        """The commit of a clone's HEAD, read as files (git does not run in the clone)."""
        commit = gitfiles.head_commit(repo / ".git")
        if commit is None:
            raise TapError(f"cannot read the commit of {repo.name} — untap it and tap it again")
        return commit

    def origin(self, repo: Path) -> str:
        """A clone's ``remote.origin.url``, parsed from the config's bytes (includes ignored)."""
        data = gitfiles.read_git_file(repo / ".git", "config")
        if data is None:
            raise TapError(f"cannot read the git config of {repo.name} — untap it and tap it again")
        return self.run(
            ["config", "--file", "-", "--no-includes", "--get", "remote.origin.url"],
            stdin=data.decode("utf-8", "replace"),
        ).strip()

    def remote_head(self, source: TapSource, timeout: float = CLONE_TIMEOUT_S) -> str | None:
        """The commit the source's HEAD names now (``ls-remote``, run outside any clone)."""
        out = self.run(
            ["ls-remote", "--", source.url, "HEAD"],
            allow_file=source.kind == "file",
            timeout=timeout,
            credential_helpers=self.user_credential_helpers() if source.kind == "https" else (),
        )
        first = out.split()[:1]
        return first[0] if first and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", first[0]) else None

    def is_clean(self, top: Path, gitdir: Path, commit: str, below: Path) -> bool:
        """Whether ``below`` (inside the checkout ``top``) matches ``commit`` exactly: every
        file a pack could serve there (not in a hidden folder) is the commit's, unchanged —
        untracked and ignored ones included.

        git runs against a private git folder holding only ep-mcp's config, HEAD (``commit``)
        and an index read from ``commit`` itself (not the checkout's: its skip-worktree and
        assume-unchanged bits would hide edits); objects are read from ``gitdir/objects``. So
        no config, hook, attribute driver or fsmonitor of the checkout's ``.git`` applies.
        """
        if not gitfiles.is_real_dir(gitdir, "objects"):
            return False
        exclude = gitfiles.read_git_file(gitdir, "info/exclude") or b""
        try:
            with tempfile.TemporaryDirectory(prefix="ep-mcp-git-") as tmp:
                shadow = Path(tmp)
                (shadow / "refs").mkdir()
                (shadow / "info").mkdir()
                (shadow / "HEAD").write_text(commit + "\n", encoding="ascii")
                (shadow / "config").write_text(
                    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n", encoding="ascii"
                )
                (shadow / "info" / "exclude").write_bytes(exclude)
                paths = {
                    "GIT_DIR": str(shadow),
                    "GIT_WORK_TREE": str(top),
                    "GIT_OBJECT_DIRECTORY": str(gitdir / "objects"),
                    "GIT_INDEX_FILE": str(shadow / "index"),
                }
                self.run(["read-tree", commit], cwd=below, extra_env=paths)
                out = self.run(
                    [
                        "status",
                        "--porcelain",
                        "-z",
                        "--ignored",
                        "--untracked-files=all",
                        "--ignore-submodules=all",
                        "--",
                        ".",
                    ],
                    cwd=below,
                    extra_env=paths,
                )
        except (TapError, OSError):  # git failed, or no room for the private folder: no commit
            return False
        return not [entry for entry in out.split("\0") if entry and not _hidden(entry[3:])]

    def init_commit(self, repo: Path, message: str) -> str:
        """Commit everything in ``repo`` (``git init`` first when needed); returns the commit.

        For benchmarks and tests that build real repositories on disk.
        """
        if not (repo / ".git").exists():
            self.run(["init", "--quiet", "--initial-branch=main"], cwd=repo)
        self.run(["add", "--all"], cwd=repo)
        self.run(
            [
                "-c",
                "user.name=ep-mcp",
                "-c",
                "user.email=ep-mcp@localhost",
                "commit",
                "--quiet",
                "--allow-empty",
                "-m",
                message,
            ],
            cwd=repo,
        )
        return self.head(repo)
