"""`--explain`: the records each stage leaves and the text the CLI prints from them."""

from __future__ import annotations

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.explain import Trace, render_explain
from ep_mcp.retrieval.intent import Intent


def cand(i: int, score: float, **kw: object) -> Candidate:
    return Candidate(i, f"f{i}.md", score=score, **kw)  # type: ignore[arg-type]


def test_a_trace_that_is_off_records_nothing() -> None:
    trace = Trace(enabled=False)
    cands = [cand(1, 1.0)]
    trace.legs([(1, 2.0)], [(1, 0.5)], Intent("GENERAL", 0.4, 0.6))
    trace.note("threshold", "nothing activated")
    trace.stage("fusion", cands, "rrf")
    trace.dropped("threshold", cands, [], "dropped all")
    assert trace.records == []
    assert trace.export(cands) == ()


def test_the_legs_record_names_the_intent_its_weights_and_the_hit_counts() -> None:
    trace = Trace(enabled=True)
    trace.legs([(1, 2.0), (2, 1.0), (3, 0.5)], [(4, 0.9)], Intent("HOW", 0.8, 0.2))
    assert trace.records == [
        {
            "stage": "legs",
            "summary": "intent HOW (vector 0.8 / lexical 0.2); lexical 3 hits, vector 1 hits",
        }
    ]


def test_a_note_is_a_stage_without_a_ranking() -> None:
    trace = Trace(enabled=True)
    trace.note("confidence", "answerable 0.912")
    assert trace.records == [{"stage": "confidence", "summary": "answerable 0.912", "ranking": []}]


def test_each_stage_lists_the_top_ten_with_their_rank_at_the_stage_before() -> None:
    trace = Trace(enabled=True)
    first = [cand(i, 1.0 - i / 100) for i in range(1, 13)]  # twelve candidates
    trace.stage("fusion", first, "rrf")
    fusion = trace.records[0]
    assert fusion["stage"] == "fusion"
    assert fusion["summary"] == "rrf; 12 left"
    assert len(fusion["ranking"]) == 10  # only the top ten are shown
    assert fusion["ranking"][0] == {"rank": 1, "candidate": "f1.md#1", "score": 0.99, "was": None}
    assert fusion["ranking"][9]["candidate"] == "f10.md#10"
    # the twelfth climbs to the top: its rank before counts though it was not shown
    second = [first[11], *first[:11]]
    trace.stage("boosts", second, "hints")
    rows = trace.records[1]["ranking"]
    assert [(r["rank"], r["was"]) for r in rows[:3]] == [(1, 12), (2, 1), (3, 2)]


def test_a_stage_rounds_scores_to_six_places() -> None:
    trace = Trace(enabled=True)
    trace.stage("fusion", [cand(1, 0.123456789)], "rrf")
    assert trace.records[0]["ranking"][0]["score"] == 0.123457


def test_dropped_lists_what_a_stage_removed() -> None:
    trace = Trace(enabled=True)
    before = [cand(i, 1.0) for i in range(1, 14)]
    trace.dropped("threshold", before, before[:1], "top cosine 0.5")
    (record,) = trace.records
    assert record["summary"] == "top cosine 0.5; dropped 12; 1 left"
    assert record["dropped"] == [f"f{i}.md#{i}" for i in range(2, 12)]  # the first ten gone


def test_a_stage_that_dropped_nothing_lists_no_dropped() -> None:
    trace = Trace(enabled=True)
    kept = [cand(1, 1.0), cand(2, 0.5)]
    trace.dropped("threshold", kept, kept, "ratio 0.5")
    (record,) = trace.records
    assert record["summary"] == "ratio 0.5; dropped 0; 2 left"
    assert "dropped" not in record


def test_export_ends_with_every_final_candidate_and_why_it_moved() -> None:
    trace = Trace(enabled=True)
    trace.note("threshold", "kept")
    searched = cand(
        7,
        0.876543219,
        fused=0.0312345678,
        lexical_rank=2,
        lexical_score=3.141592,
        vector_rank=1,
        vector_score=0.8765432,
        notes=("boosts: type hint +0.05",),
    )
    linked = cand(9, 0.1, origin="graph", via="f7.md", hop=1)
    records = trace.export([searched, linked])
    assert records[0] == {"stage": "threshold", "summary": "kept", "ranking": []}
    final = records[-1]
    assert (final["stage"], final["summary"]) == ("final", "2 results")
    assert final["candidates"] == [
        {
            "rank": 1,
            "candidate": "f7.md#7",
            "origin": "search",
            "via": None,
            "lexical_rank": 2,
            "lexical_score": 3.1416,
            "vector_rank": 1,
            "vector_score": 0.8765,
            "fused": 0.031235,
            "final": 0.876543,
            "why": ["boosts: type hint +0.05"],
        },
        {
            "rank": 2,
            "candidate": "f9.md#9",
            "origin": "graph",
            "via": "f7.md",
            "lexical_rank": None,
            "lexical_score": None,
            "vector_rank": None,
            "vector_score": None,
            "fused": 0.0,
            "final": 0.1,
            "why": [],
        },
    ]


def test_the_rendered_explain_shows_moves_drops_and_each_final_candidate() -> None:
    trace = Trace(enabled=True)
    a = cand(1, 0.9, lexical_rank=1, lexical_score=2.5, notes=("boosts: always tier +0.03",))
    b = cand(2, 0.8, vector_rank=1, vector_score=0.75)
    c = cand(3, 0.7, origin="requires", via="f1.md")
    trace.legs([(1, 2.5)], [(2, 0.75)], Intent("GENERAL", 0.4, 0.6))
    trace.stage("fusion", [b, a, c], "weighted")
    trace.stage("boosts", [a, b, c], "hints")
    trace.dropped("threshold", [a, b, c], [a, b], "coverage 1.00")
    trace.stage("mmr", [a, b], "MMR off")
    text = render_explain(trace.export([a, b, c]))
    assert text.splitlines() == [
        "",
        "explain:",
        "  [legs] intent GENERAL (vector 0.4 / lexical 0.6); lexical 1 hits, vector 1 hits",
        "  [fusion] weighted; 3 left",
        "      1. f2.md#2  0.80000",
        "      2. f1.md#1  0.90000",
        "      3. f3.md#3  0.70000",
        "  [boosts] hints; 3 left",
        "      1. f1.md#1  0.90000  (was #2)",
        "      2. f2.md#2  0.80000  (was #1)",
        "      3. f3.md#3  0.70000  (=)",
        "  [threshold] coverage 1.00; dropped 1; 2 left",
        "      (top of the ranking unchanged)",
        "      ✗ f3.md#3",
        "  [mmr] MMR off; 2 left",
        "      (top of the ranking unchanged)",
        "  [final] 3 results",
        "      1. f1.md#1  [search]  lexical #1 (2.5)  vector —  fused 0.00000  final 0.90000",
        "         · boosts: always tier +0.03",
        "      2. f2.md#2  [search]  lexical —  vector #1 (0.75)  fused 0.00000  final 0.80000",
        "      3. f3.md#3  [requires via f1.md]  lexical —  vector —  fused 0.00000  final 0.70000",
    ]


def test_a_record_without_a_summary_renders_its_stage_alone() -> None:
    assert render_explain([{"stage": "confidence"}]) == "\nexplain:\n  [confidence] "
