"""The whole pipeline over a tmp pack, with the hashing embedder (and without any)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.config.model import PackSettings, RetrievalSettings, Settings
from ep_mcp.errors import QueryError
from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.library.runtime import PackRuntime
from ep_mcp.retrieval.explain import render_explain
from ep_mcp.retrieval.types import SearchRequest

MANIFEST = """slug: solar
name: Solar
type: product
freshness:
  refresh_cycle: P90D
context:
  always: [concepts/safety.md]
"""

FILES = {
    "manifest.yaml": MANIFEST,
    "_index.md": "# Index\n\nBatteries, inverters, panels, wiring: every page listed here.\n",
    "concepts/battery.md": "---\nid: solar/battery\nverified_at: 2026-01-01\n"
    "requires: [wiring, concepts/safety.md]\n---\n# Battery banks\n\n"
    "Lithium iron phosphate battery banks store energy for the night. Size the battery "
    "bank from the daily load and the days of autonomy you want.\n",
    "concepts/wiring.md": "---\nrequires: [battery]\n---\n# Wiring\n\n"
    "Cable gauge depends on current and run length; fuse every positive conductor.\n",
    "concepts/safety.md": "# Safety\n\nDisconnect the array before touching any conductor.\n",
    "concepts/inverter.md": "---\nvolatile:\n  expires_at: 2026-02-01\n---\n# Inverters\n\n"
    "The inverter turns battery DC into household AC; size it for the peak load.\n",
    "concepts/panels.md": "# Panels\n\n"
    "Solar panels produce DC; tilt and orientation decide the yield.\n",
}


def runtime(
    root: Path, home: Path, embedder: HashingEmbedder | None = None, **retrieval: object
) -> PackRuntime:
    settings = Settings(
        retrieval=dataclasses.replace(RetrievalSettings(today="2026-06-01"), **retrieval)
    )  # type: ignore[arg-type]
    rt = PackRuntime(PackSettings(path=root, index_dir=home / "idx"), settings, embedder, home)
    rt.index(show_progress=False)
    return rt


@pytest.fixture
def solar(make_pack: Callable[[dict[str, str]], Path], tmp_path: Path) -> PackRuntime:
    rt = runtime(make_pack(FILES), tmp_path, HashingEmbedder(256))
    yield rt  # type: ignore[misc]
    rt.close()


def test_a_hybrid_search_finds_the_page_and_says_its_mode(solar: PackRuntime) -> None:
    result = solar.search(SearchRequest("lithium battery bank size", k=3))
    assert result.mode == "hybrid"
    assert result.hits[0].source_file == "concepts/battery.md"


def test_navigation_files_never_come_back(solar: PackRuntime) -> None:
    result = solar.search(SearchRequest("batteries inverters panels wiring listed", k=10))
    assert "_index.md" not in [h.source_file for h in result.hits]


def test_required_atoms_are_appended_after_the_top_k(solar: PackRuntime) -> None:
    result = solar.search(SearchRequest("lithium iron phosphate battery", k=1))
    files = [h.source_file for h in result.hits]
    assert files[0] == "concepts/battery.md"
    assert files[1:] == ["concepts/wiring.md", "concepts/safety.md"]  # declaration order
    assert [h.requires_expanded for h in result.hits] == [False, True, True]


def test_freshness_fields_use_the_pinned_today(solar: PackRuntime) -> None:
    hits = {
        h.source_file: h.to_dict()
        for h in solar.search(SearchRequest("battery inverter household", k=5)).hits
    }
    battery = hits["concepts/battery.md"]
    assert battery["verified_age_days"] == 151 and battery["age_stale"] is True  # > P90D
    assert hits["concepts/inverter.md"]["expired"] is True


def test_reconstruct_gives_provenance_and_notices_a_changed_file(solar: PackRuntime) -> None:
    req = SearchRequest("tilt and orientation decide the yield", k=1, reconstruct=True)
    hit = solar.search(req).hits[0].to_dict()
    assert hit["source_file"] == "concepts/panels.md"
    raw = (solar.pack.root / "concepts/panels.md").read_bytes()
    start, end = hit["byte_offset"]
    assert raw[start:end].decode() == hit["original_markdown"]
    assert hit["fragment_id"].startswith("concepts/panels.md#panels:")
    assert hit["stale"] is False
    (solar.pack.root / "concepts/panels.md").write_bytes(raw.replace(b"tilt", b"TILT"))
    assert solar.search(req).hits[0].to_dict()["stale"] is True


def test_without_an_embedder_the_search_answers_lexically(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    rt = runtime(make_pack(FILES), tmp_path, None)
    try:
        result = rt.search(SearchRequest("how do I size the inverter", k=3))
        assert result.mode == "lexical"
        assert result.hits[0].source_file == "concepts/inverter.md"
    finally:
        rt.close()


def test_a_query_sharing_nothing_with_the_pack_answers_nothing(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    rt = runtime(
        make_pack(FILES),
        tmp_path,
        HashingEmbedder(256),
        activation_floor=0.5,
        activation_model="fake/hashing",
    )
    try:
        result = rt.search(SearchRequest("sourdough starter hydration", k=5))
        assert result.hits == () and result.mode == "empty"
        assert rt.search(SearchRequest("battery bank autonomy", k=5)).hits
    finally:
        rt.close()


def test_with_vectors_of_a_model_the_floor_was_not_calibrated_for_coverage_decides(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    # the hashing embedder's cosines are not on the calibrated model's scale: the floor reads
    # the term coverage alone (it used to be skipped, answering noise), as skill_search does
    rt = runtime(make_pack(FILES), tmp_path, HashingEmbedder(256), activation_floor=0.0)
    try:
        result = rt.search(SearchRequest("sourdough starter hydration", k=5))
        assert result.hits == () and result.mode == "empty"
        assert rt.search(SearchRequest("battery bank autonomy", k=5)).mode == "hybrid"
    finally:
        rt.close()


def test_without_vectors_a_query_matching_no_term_answers_nothing(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    rt = runtime(make_pack(FILES), tmp_path, None)
    try:
        assert rt.search(SearchRequest("sourdough starter hydration", k=5)).hits == ()
    finally:
        rt.close()


def test_filters_restrict_and_hints_only_boost(solar: PackRuntime) -> None:
    assert solar.search(SearchRequest("battery", k=5, type="nope")).hits == ()
    assert solar.search(SearchRequest("battery", k=5, type_hint="nope")).hits


def test_an_empty_query_is_refused_with_advice(solar: PackRuntime) -> None:
    with pytest.raises(QueryError, match="pass some words"):
        solar.search(SearchRequest("   "))


def test_explain_shows_every_stage_and_why_each_hit_moved(solar: PackRuntime) -> None:
    result = solar.search(SearchRequest("lithium battery", k=2, explain=True))
    stages = [r["stage"] for r in result.explain]
    assert stages[0] == "legs" and stages[-1] == "final"
    assert {"fusion", "threshold", "boosts", "mmr"} <= set(stages)
    text = render_explain(result.explain)
    assert "concepts/battery.md" in text and "requires: named by" in text
    assert solar.search(SearchRequest("lithium battery", k=2)).explain == ()


def test_graph_expansion_adds_linked_pages_in_reserved_slots(
    make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    files = dict(FILES)
    files["concepts/panels.md"] += "\nSee [[inverter]] for conversion.\n"
    rt = runtime(
        make_pack(files),
        tmp_path,
        HashingEmbedder(256),
        graph_expansion=True,
        graph_reserved_slots=1,
        graph_min_score=0.0,
        requires_expansion=False,
    )
    try:
        result = rt.search(SearchRequest("solar panels tilt orientation yield", k=2))
        graph = [h for h in result.hits if h.graph_expanded]
        assert [h.source_file for h in graph] == ["concepts/inverter.md"]
        assert result.hits[0].source_file == "concepts/panels.md"
        assert len(result.hits) == 2
    finally:
        rt.close()


def test_the_requires_token_budget_holds_beyond_two_hops(make_pack, tmp_path: Path) -> None:
    long = "filler " * 150  # about 300 tokens
    files = {
        "a.md": "---\nrequires: [b.md]\n---\n# Anchor\n\nZebra quartz anchor page.\n",
        "b.md": f"---\nrequires: [c.md]\n---\n# Bee\n\n{long}\n",
        "c.md": f"---\nrequires: [d.md]\n---\n# Sea\n\n{long}\n",
        "d.md": f"# Dee\n\n{long}\n",
    }
    rt = runtime(make_pack(files), tmp_path, requires_max_depth=3, requires_token_budget=700)
    try:
        hits = rt.search(SearchRequest("zebra quartz anchor", k=1)).hits
        assert [h.source_file for h in hits] == ["a.md", "b.md", "c.md"]  # d.md is over budget
    finally:
        rt.close()
