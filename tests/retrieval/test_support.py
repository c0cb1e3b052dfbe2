"""The one-leg support stage alone: which candidates it scales and how it re-sorts them."""

from __future__ import annotations

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.support import one_leg, penalise_one_leg


def _c(cid: int, score: float, lexical: int | None, vector: int | None) -> Candidate:
    return Candidate(cid, f"{cid}.md", score, lexical, None, vector, None, fused=score)


def test_only_candidates_one_leg_found_are_scaled_and_the_list_is_resorted() -> None:
    lexical_only, both, dense_only = _c(1, 0.6, 1, None), _c(2, 0.5, 2, 3), _c(3, 0.4, None, 1)
    out = penalise_one_leg([lexical_only, both, dense_only], 0.5)
    assert [(c.chunk_id, round(c.score, 3)) for c in out] == [(2, 0.5), (1, 0.3), (3, 0.2)]
    assert out[1].fused == 0.6  # the fusion's own score is kept for --explain
    assert (
        out[1].notes[-1] == "lexical leg only: x0.5" and out[2].notes[-1] == "dense leg only: x0.5"
    )
    assert out[0] is both


def test_a_factor_of_one_changes_nothing() -> None:
    cands = [_c(1, 0.6, 1, None), _c(2, 0.7, 2, 3)]
    assert penalise_one_leg(cands, 1.0) == cands
    assert one_leg(cands[0]) and not one_leg(cands[1]) and not one_leg(_c(4, 0.1, None, None))
