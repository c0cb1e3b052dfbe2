"""File-profile stage: how close the query is to what each candidate's file is about.

A chunk is judged on its own words; a question is often about the whole file. Every file has a
one-line profile (its title — for skill repositories the skill's name and description, the very
line agents use to pick a skill; see ``view.profiles``). The stage adds
``weight x scale x cosine(query, profile)`` to each candidate, so a chunk that matches the
question inside a file *about* the question beats the same words in a hub page (a glossary, a
list of common mistakes) or a neighbouring skill. Pure: vectors come in, candidates go out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from ep_mcp.retrieval.candidates import Candidate, by_score

if TYPE_CHECKING:  # numpy is imported where vectors are touched (not by a restart's start)
    import numpy as np
    import numpy.typing as npt

Vector: TypeAlias = "npt.NDArray[np.float32]"


def profile_similarities(
    paths: Sequence[str],
    profiles: Mapping[str, str],
    query_vector: Vector,
    embed: Callable[[str], Vector],
) -> dict[str, float]:
    """Cosine of the query to each path's profile (paths without one are left out)."""
    import numpy as np  # on use: a restart's start imports this module, not numpy

    q = _unit(query_vector)
    out: dict[str, float] = {}
    for path in dict.fromkeys(paths):
        text = profiles.get(path)
        if text:
            out[path] = float(np.dot(q, _unit_once(embed(text))))
    return out


def apply_profile(
    candidates: Sequence[Candidate],
    similarity: Mapping[str, float],
    weight: float,
    scale: float,
) -> list[Candidate]:
    """Add ``weight x scale x similarity`` (clipped at 0) to every candidate with a profile."""
    out = []
    for c in candidates:
        sim = similarity.get(c.path)
        if sim is None or weight <= 0:
            out.append(c)
            continue
        bonus = weight * scale * max(sim, 0.0)
        out.append(c.moved(c.score + bonus, f"file profile: cosine {sim:.3f} +{bonus:.4f}"))
    return by_score(out)


_UNITS: dict[int, tuple[Vector, Vector]] = {}  # id(vector) -> (that vector, its unit vector)
MAX_UNITS = 4096


def _unit_once(v: Vector) -> Vector:
    """``_unit(v)``, computed once per vector object: the runtime hands out the same vector of
    a profile on every query. The entry holds ``v`` itself, so its id is not reused while it
    is remembered (vectors are never changed in place)."""
    known = _UNITS.get(id(v))
    if known is not None and known[0] is v:
        return known[1]
    if len(_UNITS) >= MAX_UNITS:
        _UNITS.clear()
    unit = _unit(v)
    _UNITS[id(v)] = (v, unit)
    return unit


def _unit(v: Vector) -> Vector:
    import numpy as np  # on use: a restart's start imports this module, not numpy

    flat = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 0 else flat
