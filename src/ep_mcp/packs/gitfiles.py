"""A checkout's git metadata read as files: no git runs, no link is followed, nothing executes.

A pack or a tap carries its ``.git`` (an archive, a synced folder, a clone someone edited), and
that folder's config can name programs git would run (``core.fsmonitor``, filters, hooks,
``includeIf``…). ep-mcp therefore never runs git *in* such a folder; what it needs — the commit
HEAD names, the index file, a config file's bytes — is read here:

- ``.git`` must be a real folder (a ``gitdir:`` file of a worktree or submodule, or a link,
  counts as no repository: the content hash rules instead);
- every file is opened segment by segment below ``.git`` with ``O_NOFOLLOW`` (``openat``),
  must be a regular file and is read up to a size cap;
- HEAD is a commit id, or ``ref: refs/…`` resolved through the loose ref file or
  ``packed-refs`` (one level, as git writes it; anything else is no commit).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ep_mcp.packs.safeopen import _open_beneath

MAX_META_BYTES = 1 << 20  # HEAD, a ref, config, info/exclude
MAX_PACKED_REFS_BYTES = 64 << 20
MAX_INDEX_BYTES = 512 << 20  # .git/index of a very large checkout

_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"refs/[A-Za-z0-9._/@+-]{1,240}")


def git_dir(root: Path) -> tuple[Path, Path] | None:
    """``(top, top/.git)`` for the checkout holding ``root`` (``root`` or an ancestor), or None.

    None when no ancestor has a ``.git``, or the nearest ``.git`` is not a real folder.
    """
    here = Path(os.path.realpath(root))
    for top in (here, *here.parents):
        try:
            st = os.lstat(top / ".git")
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return (top, top / ".git") if stat.S_ISDIR(st.st_mode) else None
    return None


def read_git_file(gitdir: Path, rel: str, limit: int = MAX_META_BYTES) -> bytes | None:
    """The bytes of ``gitdir/rel``, or None: missing, a link on the way, not a regular file,
    over ``limit`` or unreadable."""
    parts = tuple(rel.split("/"))
    if any(p in ("", ".", "..") for p in parts):
        return None
    try:
        fd = _open_beneath(gitdir, parts)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            block = os.read(fd, min(1 << 20, limit + 1 - size))
            if not block:
                break
            chunks.append(block)
            size += len(block)
        return None if size > limit else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def is_real_dir(gitdir: Path, rel: str) -> bool:
    """``gitdir/rel`` is a folder reached through no link (``objects`` before git reads it)."""
    path = gitdir
    for part in rel.split("/"):
        path = path / part
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def _ref_commit(gitdir: Path, ref: str) -> str | None:
    if not _REF.fullmatch(ref) or any(p.startswith(".") for p in ref.split("/")):
        return None
    loose = read_git_file(gitdir, ref)
    if loose is not None:
        oid = loose.strip()
        return oid.decode() if _OID.fullmatch(oid) else None
    packed = read_git_file(gitdir, "packed-refs", MAX_PACKED_REFS_BYTES)
    for line in (packed or b"").splitlines():
        oid, _, name = line.partition(b" ")
        if name.strip() == ref.encode() and _OID.fullmatch(oid):
            return oid.decode()
    return None


def head_commit(gitdir: Path) -> str | None:
    """The commit HEAD names (a branch through its ref, or a detached HEAD), or None."""
    head = read_git_file(gitdir, "HEAD")
    if head is None:
        return None
    text = head.strip()
    if _OID.fullmatch(text):
        return text.decode()
    if text.startswith(b"ref:"):
        try:
            return _ref_commit(gitdir, text[4:].strip().decode("ascii"))
        except UnicodeDecodeError:
            return None
    return None
