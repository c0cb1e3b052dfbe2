"""The one hermetic setting every git call runs in: its environment and its ``-c`` options.

git reads config from the system, the user (global) and the repository, and several values
name programs it runs: ``core.fsmonitor``, filter drivers, hooks, ``core.pager``,
``diff.external``, ``core.sshCommand``, ``core.askPass``, credential helpers,
``remote.*.uploadpack``. ep-mcp reads no system or global config, drops every ``GIT_*``
variable of the caller and sets the named ones with ``-c`` (which beats any file, includes
too). A repository's own config cannot be made harmless this way — a filter is named by the
repository — so ep-mcp never runs git inside a pack or a tap at all (``hub/git.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

SSH_COMMAND = "ssh -oBatchMode=yes"
_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "SSH_AUTH_SOCK", "TMPDIR", "SYSTEMROOT")


def git_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of every git call: a few of the caller's variables, then ours.

    No system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), no
    system attributes, no prompt, no askpass, a batch-mode ssh, ``cat`` as the pager, no
    external diff, no replace refs; every ``GIT_*`` variable of the caller is dropped.
    """
    base = {k: env[k] for k in _ENV_KEYS if k in env}
    base.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GCM_INTERACTIVE="never",
        GIT_SSH_COMMAND=SSH_COMMAND,
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_PROTOCOL_FROM_USER="0",
    )
    return base


def git_options(allow_file: bool = False, credential_helpers: Sequence[str] = ()) -> list[str]:
    """The ``-c`` options of every git call (they beat any config file git may still read)."""
    file_allow = "always" if allow_file else "never"
    options = [
        "protocol.allow=never",
        "protocol.https.allow=always",
        "protocol.ssh.allow=always",
        f"protocol.file.allow={file_allow}",
        "protocol.ext.allow=never",
        "core.hooksPath=" + os.devnull,
        "core.fsmonitor=false",
        "core.untrackedCache=false",
        "core.pager=cat",
        "core.askPass=",
        "core.sshCommand=" + SSH_COMMAND,
        "core.alternateRefsCommand=",
        "core.symlinks=false",  # a link in a tap lands as a small plain text file
        "diff.external=",
        "submodule.recurse=false",
        "fetch.recurseSubmodules=false",
        "gc.auto=0",
        "maintenance.auto=false",
        "credential.helper=",  # empties the list: only the helpers below are asked
        *(f"credential.helper={helper}" for helper in credential_helpers),
    ]
    return [arg for option in options for arg in ("-c", option)]
