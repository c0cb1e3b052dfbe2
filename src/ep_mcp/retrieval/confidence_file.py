"""The fitted confidence model, read once from the package (``ep_mcp/data/confidence.json``).

Kept apart from ``confidence`` so the stage stays pure: this is the edge that reads the file.
``ep-mcp bench calibrate`` writes it.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

import ep_mcp
from ep_mcp.retrieval.confidence import ConfidenceModel, model_from_dict, model_to_dict

logger = logging.getLogger(__name__)

PACKAGED = "confidence.json"


def packaged_path() -> Path:
    """The package's own folder (importlib.resources would name the same file of an installed
    package, at the cost of importing tempfile, shutil and zipfile on a server's start)."""
    return Path(ep_mcp.__file__).parent / "data" / PACKAGED


@lru_cache(maxsize=1)
def packaged_model() -> ConfidenceModel | None:
    """The shipped model, or None (with a warning) when the file is missing or unreadable."""
    return load_model(packaged_path())


def load_model(path: Path) -> ConfidenceModel | None:
    try:
        return model_from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("confidence model %s unreadable (%s) — no confidence", path, exc)
        return None


def save_model(model: ConfidenceModel, path: Path) -> None:
    path.write_text(json.dumps(model_to_dict(model), indent=2) + "\n", encoding="utf-8")
