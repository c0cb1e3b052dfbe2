"""`--explain`: what each candidate scored at each stage and why it moved.

The engine feeds a `Trace` (a no-op unless the request asks for it); `render_explain` turns the
exported records into the text the CLI prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.intent import Intent

SHOWN = 10  # candidates listed per stage


def _label(c: Candidate) -> str:
    return f"{c.path}#{c.chunk_id}"


class Trace:
    """Collects stage snapshots when enabled; otherwise every call returns at once."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.records: list[dict[str, Any]] = []
        self._ranks: dict[int, int] = {}

    def legs(
        self,
        lexical: Sequence[tuple[int, float]],
        dense: Sequence[tuple[int, float]],
        intent: Intent,
    ) -> None:
        if not self.enabled:
            return
        self.records.append(
            {
                "stage": "legs",
                "summary": (
                    f"intent {intent.name} (vector {intent.vector_weight:g} / lexical "
                    f"{intent.text_weight:g}); lexical {len(lexical)} hits, "
                    f"vector {len(dense)} hits"
                ),
            }
        )

    def note(self, stage: str, summary: str) -> None:
        if self.enabled:
            self.records.append({"stage": stage, "summary": summary, "ranking": []})

    def stage(self, stage: str, candidates: Sequence[Candidate], summary: str) -> None:
        if not self.enabled:
            return
        ranking = []
        for rank, c in enumerate(candidates[:SHOWN], start=1):
            before = self._ranks.get(c.chunk_id)
            ranking.append(
                {"rank": rank, "candidate": _label(c), "score": round(c.score, 6), "was": before}
            )
        self._ranks = {c.chunk_id: r for r, c in enumerate(candidates, start=1)}
        self.records.append(
            {"stage": stage, "summary": f"{summary}; {len(candidates)} left", "ranking": ranking}
        )

    def dropped(
        self, stage: str, before: Sequence[Candidate], after: Sequence[Candidate], summary: str
    ) -> None:
        if not self.enabled:
            return
        kept = {c.chunk_id for c in after}
        gone = [_label(c) for c in before if c.chunk_id not in kept]
        self.stage(stage, after, f"{summary}; dropped {len(gone)}")
        if gone:
            self.records[-1]["dropped"] = gone[:SHOWN]

    def export(self, final: Sequence[Candidate]) -> tuple[dict[str, Any], ...]:
        if not self.enabled:
            return ()
        per = [
            {
                "rank": rank,
                "candidate": _label(c),
                "origin": c.origin,
                "via": c.via,
                "lexical_rank": c.lexical_rank,
                "lexical_score": None if c.lexical_score is None else round(c.lexical_score, 4),
                "vector_rank": c.vector_rank,
                "vector_score": None if c.vector_score is None else round(c.vector_score, 4),
                "fused": round(c.fused, 6),
                "final": round(c.score, 6),
                "why": list(c.notes),
            }
            for rank, c in enumerate(final, start=1)
        ]
        return (
            *self.records,
            {"stage": "final", "summary": f"{len(final)} results", "candidates": per},
        )


def render_explain(records: Sequence[dict[str, Any]]) -> str:
    """Plain-text rendering of a result's explain records."""
    lines: list[str] = ["", "explain:"]
    for rec in records:
        lines.append(f"  [{rec['stage']}] {rec.get('summary', '')}")
        ranking = rec.get("ranking", [])
        if ranking and all(row.get("was") == row["rank"] for row in ranking):
            lines.append("      (top of the ranking unchanged)")
            ranking = []
        for row in ranking:
            was = row.get("was")
            move = "" if was is None else ("  (=)" if was == row["rank"] else f"  (was #{was})")
            lines.append(f"     {row['rank']:>2}. {row['candidate']}  {row['score']:.5f}{move}")
        for gone in rec.get("dropped", []):
            lines.append(f"      ✗ {gone}")
        for c in rec.get("candidates", []):
            lex = (
                "—" if c["lexical_rank"] is None else f"#{c['lexical_rank']} ({c['lexical_score']})"
            )
            vec = "—" if c["vector_rank"] is None else f"#{c['vector_rank']} ({c['vector_score']})"
            origin = c["origin"] + (f" via {c['via']}" if c.get("via") else "")
            lines.append(
                f"     {c['rank']:>2}. {c['candidate']}  [{origin}]  lexical {lex}  "
                f"vector {vec}  fused {c['fused']:.5f}  final {c['final']:.5f}"
            )
            for why in c["why"]:
                lines.append(f"         · {why}")
    return "\n".join(lines)
