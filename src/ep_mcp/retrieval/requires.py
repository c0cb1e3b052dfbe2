"""`requires:` expansion after the slice: directional, ≤2 hops, ≤3 atoms, ≤3,500 tokens (§4.10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Required:
    path: str
    via: str  # the file whose requires: named it
    hop: int


def expand_requires(
    top_paths: Sequence[str],
    requires: Mapping[str, Sequence[str]],
    tokens: Mapping[str, int],
    *,
    max_depth: int = 2,
    max_atoms: int = 3,
    token_budget: int = 3500,
    skip: Sequence[str] = (),
) -> list[Required]:
    """Atoms the top hits require (resolved paths), breadth first, in declaration order.

    Never returns a file already among ``top_paths`` (nor in ``skip``: navigation files) —
    so it only appends, it never displaces. An atom that would overflow the token budget is
    skipped and the walk continues with smaller ones; cycles are safe.
    """
    seen = set(top_paths) | set(skip)
    out: list[Required] = []
    used = 0
    frontier = list(dict.fromkeys(top_paths))
    for hop in range(1, max(max_depth, 0) + 1):
        nxt: list[str] = []
        for source in frontier:
            for target in requires.get(source, ()):
                if len(out) >= max_atoms:
                    return out
                if target in seen:
                    continue
                seen.add(target)
                cost = tokens.get(target, 0)
                if used + cost > token_budget:
                    continue
                used += cost
                out.append(Required(target, source, hop))
                nxt.append(target)
        frontier = nxt
    return out
