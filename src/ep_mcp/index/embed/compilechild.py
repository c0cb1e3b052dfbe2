"""The child that compiles the model graph (`compiled.compile_behind` starts it).

``python -m ep_mcp.index.embed.compilechild FOLDER`` lowers its own priority to nice 19 before
it imports anything heavy, waits for the folder's compile lock and builds the optimised graph
with `local.build_optimised`. It is a module of its own so that the model (`local`) and the
compile's bookkeeping (`compiled`) do not import each other.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

from ep_mcp.index.buildlock import exclusive
from ep_mcp.index.embed import compiled


def _terminated(signum: int, frame: object) -> NoReturn:
    raise SystemExit(128 + signum)  # the temp file of a half-written graph is removed


def main(argv: list[str]) -> int:
    """The child: lower its priority, wait for the folder's compile lock, build, exit."""
    os.setpriority(os.PRIO_PROCESS, 0, max(compiled.NICE, os.getpriority(os.PRIO_PROCESS, 0)))
    signal.signal(signal.SIGTERM, _terminated)
    if len(argv) != 1:
        sys.stderr.write("usage: python -m ep_mcp.index.embed.compilechild MODELS_FOLDER\n")
        return 2
    folder = Path(argv[0])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with exclusive(folder / compiled.LOCK_NAME):
            if not compiled.is_built(folder):  # another child may have built it meanwhile
                # onnxruntime and the model load only now, at nice 19, and only to compile
                from ep_mcp.index.embed import local

                local.build_optimised(folder)
    except Exception as exc:  # the child's outer boundary: one line for its parent
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
