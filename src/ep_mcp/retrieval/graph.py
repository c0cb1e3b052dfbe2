"""Graph expansion: BFS over the pack's directed edges, decay per hop, reserved slots (§4.8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ep_mcp.retrieval.candidates import Candidate, by_score

Adjacency = Mapping[str, Sequence[str]]  # path → paths it links to


@dataclass(frozen=True)
class Neighbour:
    path: str
    via: str  # the top-k file the walk started from
    hop: int  # 1 = a direct link
    factor: float  # decay ** hop


def graph_neighbours(
    seeds: Sequence[str],
    adjacency: Adjacency,
    *,
    depth: int,
    decay: float,
    exclude: Sequence[str] = (),
) -> list[Neighbour]:
    """Files reachable from ``seeds`` in 1..``depth`` hops, nearest first, each once.

    Seeds and ``exclude`` are never returned; cycles are harmless (a file is visited once,
    at its smallest hop count, from the best-ranked seed that reaches it).
    """
    seen = set(seeds) | set(exclude)
    found: list[Neighbour] = []
    frontier = [(s, s) for s in seeds]
    for hop in range(1, max(depth, 0) + 1):
        nxt: list[tuple[str, str]] = []
        for node, origin in frontier:
            for target in adjacency.get(node, ()):
                if target in seen:
                    continue
                seen.add(target)
                found.append(Neighbour(target, origin, hop, decay**hop))
                nxt.append((target, origin))
        frontier = nxt
    return found


def merge_reserved(
    core: Sequence[Candidate],
    bonus: Sequence[Candidate],
    *,
    k: int,
    slots: int,
) -> list[Candidate]:
    """Top ``k - r`` core hits, then the best ``r`` graph neighbours (r ≤ slots).

    Graph hits only fill reserved slots: they never push a core hit out beyond those slots.
    """
    core_paths = {c.path for c in core[:k]}
    fresh = [b for b in by_score(list(bonus)) if b.path not in core_paths]
    r = min(max(slots, 0), len(fresh), k)
    if len(core) < k:  # room without displacing anything
        r = min(len(fresh), max(r, k - len(core)))
        return [*core, *fresh[:r]][:k]
    return [*core[: k - r], *fresh[:r]]
