"""From stored chunks to candidates and hits, and hits and results to the JSON callers read."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from typing import Any

from ep_mcp.index.records import ChunkRecord, FileRecord, StoredChunk
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.hits import candidate_of, hit_of
from ep_mcp.retrieval.types import Hit, SearchResult
from ep_mcp.retrieval.view import PackView

TODAY = dt.date(2026, 6, 1)
RAW = b"# Battery\n\nSize the bank for three days.\n"
SPAN = (11, len(RAW))
TEXT = RAW[SPAN[0] : SPAN[1]].decode()
SPAN_HASH = hashlib.sha256(TEXT.encode()).hexdigest()


def stored(  # type: ignore[no-untyped-def]
    path: str = "concepts/battery.md",
    doc_id: str | None = "solar/battery",
    section: str | None = None,
    span_hash: str = SPAN_HASH,
    **info: Any,
):
    file = FileRecord(
        path=path,
        file_hash="f",
        sidecar_hash=None,
        content_hash="sha256:file",
        title="Battery",
        type="concept",
        tags=("storage", "dc"),
        doc_id=doc_id,
        info=info,
    )
    chunk = ChunkRecord(
        path=path,
        chunk_index=1,
        heading_path=("Battery",),
        line_range=(3, 3),
        byte_range=SPAN,
        text=TEXT,
        context_prefix="",
        span_hash=span_hash,
        section=section,
        tokens=9,
    )
    return StoredChunk(id=42, chunk=chunk, file=file)


def test_a_candidate_carries_its_ranks_in_each_leg_and_its_files_metadata() -> None:
    sc = stored()
    c = candidate_of(sc, 0.5, {42: (3, 7.5)}, {42: (1, 0.8)}, PackView(), TODAY)
    assert c == Candidate(
        chunk_id=42,
        path="concepts/battery.md",
        score=0.5,
        fused=0.5,
        lexical_rank=3,
        lexical_score=7.5,
        vector_rank=1,
        vector_score=0.8,
        type="concept",
        tags=("storage", "dc"),
        always=False,
        chars=len(TEXT),
        tokens=9,
    )


def test_a_candidate_outside_a_leg_has_no_rank_there() -> None:
    c = candidate_of(stored(), 0.5, {}, {}, PackView(), TODAY)
    assert (c.lexical_rank, c.lexical_score, c.vector_rank, c.vector_score) == (None,) * 4


def test_a_file_is_always_on_by_its_frontmatter_or_the_manifest() -> None:
    assert candidate_of(stored(always=True), 1, {}, {}, PackView(), TODAY).always
    view = PackView(always=frozenset({"concepts/battery.md"}))
    assert candidate_of(stored(), 1, {}, {}, view, TODAY).always
    assert not candidate_of(stored(always=False), 1, {}, {}, PackView(), TODAY).always


def test_a_candidate_knows_whether_its_file_is_past_its_refresh_date() -> None:
    """The boosts' freshness penalty reads it: a file verified longer ago than its `refresh`
    (else the manifest's cycle) is stale on the day judged."""
    old = stored(verified_at="2026-05-02", refresh="P7D")
    assert candidate_of(old, 1, {}, {}, PackView(), TODAY).age_stale
    assert not candidate_of(old, 1, {}, {}, PackView(), dt.date(2026, 5, 5)).age_stale
    assert not candidate_of(old, 1, {}, {}, PackView(), None).age_stale  # no penalty: not judged
    cycle = PackView(refresh_cycle="P30D")
    assert candidate_of(stored(verified_at="2026-04-01"), 1, {}, {}, cycle, TODAY).age_stale
    assert not candidate_of(stored(), 1, {}, {}, cycle, TODAY).age_stale  # never verified


def test_a_hit_is_the_chunk_with_its_rounded_score_and_freshness() -> None:
    sc = stored(verified_at="2026-05-02", refresh="P7D", expires_at="2026-07-01")
    c = Candidate(42, sc.file.path, score=0.123456789)
    hit = hit_of(sc, c, PackView(), TODAY, None)
    assert hit.to_dict() == {
        "id": "solar/battery",
        "source_file": "concepts/battery.md",
        "title": "Battery",
        "type": "concept",
        "tags": ["storage", "dc"],
        "heading_path": ["Battery"],
        "text": TEXT,
        "score": 0.123457,
        "content_hash": "sha256:file",
        "verified_at": "2026-05-02",
        "chunk_index": 1,
        "line_range": [3, 3],
        "graph_expanded": False,
        "requires_expanded": False,
        "verified_age_days": 30,
        "age_stale": True,  # 30 days > the file's refresh P7D
        "expired": False,
        "expires_at": "2026-07-01",
    }


def test_the_packs_refresh_cycle_makes_an_old_hit_stale() -> None:
    sc = stored(verified_at="2026-01-01")
    c = Candidate(42, sc.file.path)
    assert hit_of(sc, c, PackView(refresh_cycle="P90D"), TODAY, None).extra["age_stale"] is True
    assert hit_of(sc, c, PackView(), TODAY, None).extra["age_stale"] is False


def test_a_hit_without_an_id_is_named_by_its_path_and_says_how_it_joined() -> None:
    sc = stored(doc_id=None)
    graph = hit_of(sc, Candidate(42, sc.file.path, origin="graph"), PackView(), TODAY, None)
    assert (graph.id, graph.verified_at, graph.graph_expanded, graph.requires_expanded) == (
        "concepts/battery.md",
        None,
        True,
        False,
    )
    required = hit_of(sc, Candidate(42, sc.file.path, origin="requires"), PackView(), TODAY, None)
    assert (required.graph_expanded, required.requires_expanded) == (False, True)


def test_a_reconstructed_hit_gives_provenance_and_is_fresh_while_the_span_is_unchanged() -> None:
    asked: list[tuple[str, int]] = []

    def live(path: str, length: int) -> tuple[bytes | None, str | None]:
        asked.append((path, length))
        return RAW, None

    extra = hit_of(stored(), Candidate(42, "concepts/battery.md"), PackView(), TODAY, live).extra
    assert asked == [("concepts/battery.md", SPAN[1])]  # read up to the end of the span
    assert extra["fragment_id"] == f"solar/battery#battery:{SPAN_HASH[:12]}"
    assert extra["byte_offset"] == list(SPAN)
    assert extra["line_range"] == [3, 3]
    assert extra["original_markdown"] == TEXT
    assert extra["span_content_hash"] == f"sha256:{SPAN_HASH}"
    assert extra["excerpt"] == "Size the bank for three days."
    assert extra["stale"] is False
    assert "stale_note" not in extra


def test_a_reconstructed_hit_whose_file_cannot_be_read_is_stale_and_says_why() -> None:
    def gone(path: str, length: int) -> tuple[bytes | None, str | None]:
        return None, "no such file"

    sc = stored(doc_id=None)
    extra = hit_of(sc, Candidate(42, sc.file.path), PackView(), TODAY, gone).extra
    assert extra["fragment_id"].startswith("concepts/battery.md#battery:")
    assert extra["stale"] is True
    assert extra["stale_note"] == "live file unavailable: no such file"


def test_a_hit_without_confidence_leaves_the_field_out() -> None:
    sc = stored()
    hit = hit_of(sc, Candidate(42, sc.file.path), PackView(), TODAY, None)
    assert "confidence" not in hit.to_dict()
    assert dataclasses.replace(hit, confidence=0.75).to_dict()["confidence"] == 0.75


def _hit() -> Hit:
    sc = stored()
    return hit_of(sc, Candidate(42, sc.file.path, score=1.0), PackView(), TODAY, None)


def test_a_result_as_json_names_the_query_pack_mode_and_intent() -> None:
    result = SearchResult("bank size", "solar", "hybrid", (_hit(),), "HOW", took_ms=12.3456)
    data = result.to_dict()
    assert data == {
        "query": "bank size",
        "pack": "solar",
        "mode": "hybrid",
        "intent": "HOW",
        "took_ms": 12.35,
        "results": [_hit().to_dict()],
    }


def test_a_result_as_json_adds_answerable_notes_and_explain_when_there_are_some() -> None:
    result = SearchResult(
        "bank size",
        "solar",
        "empty",
        (),
        notes=("the pack does not appear to cover this question (no hit)",),
        explain=({"stage": "final", "summary": "0 results", "candidates": []},),
        answerable=0.123456,
        covered=False,
    )
    data = result.to_dict()
    assert data["intent"] == "GENERAL"
    assert data["took_ms"] == 0.0
    assert (data["answerable"], data["covered"]) == (0.1235, False)
    assert data["notes"] == ["the pack does not appear to cover this question (no hit)"]
    assert data["explain"] == [{"stage": "final", "summary": "0 results", "candidates": []}]


def test_a_reconstructed_hit_names_the_sidecar_section_and_the_stored_span_hash() -> None:
    stored_hash = "ab" * 32  # what the index recorded for the span
    sc = stored(section="Bank sizing", span_hash=stored_hash)
    extra = hit_of(
        sc, Candidate(42, sc.file.path), PackView(), TODAY, lambda p, n: (RAW, None)
    ).extra
    assert extra["fragment_id"] == f"solar/battery#bank-sizing:{stored_hash[:12]}"
    assert extra["span_content_hash"] == f"sha256:{stored_hash}"
    assert extra["stale"] is True  # the live bytes do not hash to what was recorded
