"""The expansion stages over a fake source: which files join, with what score and note."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ep_mcp.config.model import RetrievalSettings
from ep_mcp.index.records import ChunkRecord, FileRecord, StoredChunk
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.expand import expand_graph, expand_requires_of, first_chunk
from ep_mcp.retrieval.view import PackView

IDS = {"a.md": 1, "b.md": 2, "c.md": 3, "d.md": 4, "e.md": 5, "nav.md": 6}


def chunk(path: str, index: int = 0, text: str = "some text") -> StoredChunk:
    file = FileRecord(path, "h", None, "c", path.upper(), "concept", ("t",), None, {})
    record = ChunkRecord(path, index, (), (1, 1), (0, len(text)), text, "", "s", None, 7)
    return StoredChunk(IDS[path] * 10 + index, record, file)


class FakeSource:
    def __init__(self, tokens: dict[str, int] | None = None) -> None:
        self.tokens = tokens or {}
        self.token_asks: list[list[str]] = []

    def chunks_for_path(self, path: str) -> list[StoredChunk]:
        if path == "e.md":
            return []  # in the graph, but not indexed
        return [chunk(path, 0, "first chunk of " + path), chunk(path, 1)]

    def file_tokens(self, paths: Sequence[str]) -> dict[str, int]:
        self.token_asks.append(list(paths))
        return {p: self.tokens.get(p, 10) for p in paths}


def settings(**kw: object) -> RetrievalSettings:
    base = {"graph_depth": 2, "graph_decay": 0.5, "graph_min_score": 0.0}
    return RetrievalSettings(**{**base, **kw})  # type: ignore[arg-type]


GRAPH = PackView(
    adjacency={"a.md": ("b.md", "c.md", "nav.md"), "b.md": ("d.md",), "c.md": ("e.md",)},
    navigation=frozenset({"nav.md"}),
)
TOP = [Candidate(10, "a.md", score=2.0), Candidate(11, "a.md", score=1.0)]


def test_first_chunk_is_a_files_first_chunk_or_none() -> None:
    assert first_chunk(FakeSource(), "b.md") == chunk("b.md", 0, "first chunk of b.md")  # type: ignore[arg-type]
    assert first_chunk(FakeSource(), "e.md") is None  # type: ignore[arg-type]


def test_a_neighbour_scores_the_best_hit_times_its_similarity_times_the_decay() -> None:
    dense = [(20, 0.8), (30, 0.4), (40, 0.6)]
    out = expand_graph(FakeSource(), TOP, TOP, 5, settings(), GRAPH, dense, caller_vector=False)  # type: ignore[arg-type]
    assert [(c.path, c.origin) for c in out] == [
        ("a.md", "search"),
        ("a.md", "search"),
        ("b.md", "graph"),
        ("c.md", "graph"),
        ("d.md", "graph"),
    ]
    b, c, d = out[2:]
    assert b.score == pytest.approx(2.0 * 0.8 * 0.5)
    assert c.score == pytest.approx(2.0 * 0.4 * 0.5)
    assert d.score == pytest.approx(2.0 * 0.6 * 0.25)
    assert b.notes == ("graph: 1 hop(s) from a.md, similarity 0.800 x decay 0.500",)
    assert d.notes == ("graph: 2 hop(s) from a.md, similarity 0.600 x decay 0.250",)
    assert (d.chunk_id, d.via, d.hop) == (40, "a.md", 2)
    assert (b.type, b.tags, b.chars, b.tokens) == ("concept", ("t",), len("first chunk of b.md"), 7)


def test_a_neighbour_outside_the_dense_pool_counts_as_unrelated() -> None:
    dense = [(20, 0.8), (99, 0.9)]  # c.md and d.md fell outside the pool
    out = expand_graph(FakeSource(), TOP, TOP, 5, settings(), GRAPH, dense, caller_vector=False)  # type: ignore[arg-type]
    scores = {c.path: c.score for c in out if c.origin == "graph"}
    assert scores == {"b.md": pytest.approx(0.8), "c.md": 0.0, "d.md": 0.0}
    strict = settings(graph_min_score=0.01)
    out = expand_graph(FakeSource(), TOP, TOP, 5, strict, GRAPH, dense, caller_vector=False)  # type: ignore[arg-type]
    assert [c.path for c in out if c.origin == "graph"] == ["b.md"]


@pytest.mark.parametrize(
    ("dense", "caller_vector"), [([], False), ([(20, 0.8)], True)], ids=["lexical", "caller"]
)
def test_without_cosines_to_ask_a_neighbour_counts_as_half_related(
    dense: list[tuple[int, float]], caller_vector: bool
) -> None:
    out = expand_graph(FakeSource(), TOP, TOP, 5, settings(), GRAPH, dense, caller_vector)  # type: ignore[arg-type]
    graph = {c.path: c for c in out if c.origin == "graph"}
    assert graph["c.md"].score == pytest.approx(2.0 * 0.5 * 0.5)
    assert graph["c.md"].notes == ("graph: 1 hop(s) from a.md, similarity 0.500 x decay 0.500",)
    assert graph["d.md"].score == pytest.approx(2.0 * 0.5 * 0.25)


def test_the_minimum_score_is_similarity_times_decay_at_or_above() -> None:
    dense = [(20, 0.8), (30, 0.4), (40, 0.6)]
    at = settings(graph_min_score=0.2)  # c.md: 0.4 x 0.5 = 0.2 joins; d.md: 0.15 does not
    out = expand_graph(FakeSource(), TOP, TOP, 5, at, GRAPH, dense, caller_vector=False)  # type: ignore[arg-type]
    assert [c.path for c in out if c.origin == "graph"] == ["b.md", "c.md"]


def test_neighbours_fill_only_the_reserved_slots_of_a_full_answer() -> None:
    picked = [Candidate(10 + i, f"x{i}.md", score=1.0 - i / 10) for i in range(4)]
    view = PackView(adjacency={"x0.md": ("b.md", "c.md", "d.md")})
    dense = [(20, 0.8), (30, 0.4), (40, 0.6)]
    out = expand_graph(
        FakeSource(),
        picked[:3],
        picked,
        3,
        settings(graph_reserved_slots=1),
        view,
        dense,
        False,  # type: ignore[arg-type]
    )
    assert [c.path for c in out] == ["x0.md", "x1.md", "b.md"]


def test_the_graph_walk_honours_the_depth() -> None:
    dense = [(20, 0.8), (30, 0.4), (40, 0.6)]
    out = expand_graph(
        FakeSource(),
        TOP,
        TOP,
        5,
        settings(graph_depth=1),
        GRAPH,
        dense,
        caller_vector=False,  # type: ignore[arg-type]
    )
    assert [c.path for c in out if c.origin == "graph"] == ["b.md", "c.md"]


def test_only_searched_hits_are_kept_as_the_core() -> None:
    joined = Candidate(30, "c.md", score=5.0, origin="requires")
    picked = [*TOP, joined]
    out = expand_graph(
        FakeSource(),
        TOP,
        picked,
        5,
        settings(),
        PackView(),
        [],
        caller_vector=False,  # type: ignore[arg-type]
    )
    assert [c.origin for c in out] == ["search", "search"]


REQUIRES = PackView(
    requires={"a.md": ("b.md", "nav.md", "c.md"), "b.md": ("d.md",), "d.md": ("e.md",)},
    navigation=frozenset({"nav.md"}),
)


def test_required_files_join_after_the_top_with_halving_scores_and_a_note() -> None:
    source = FakeSource()
    out = expand_requires_of(source, TOP, settings(), REQUIRES)  # type: ignore[arg-type]
    assert [(c.path, c.via, c.hop, c.origin) for c in out] == [
        ("b.md", "a.md", 1, "requires"),
        ("c.md", "a.md", 1, "requires"),
        ("d.md", "b.md", 2, "requires"),
    ]
    floor = 1.0  # the lowest score of the top
    assert [c.score for c in out] == pytest.approx([floor * 0.5, floor * 0.5 / 2, floor * 0.5 / 3])
    assert out[0].notes == ("requires: named by a.md (1 hop(s))",)
    assert out[2].notes == ("requires: named by b.md (2 hop(s))",)
    assert out[0].chunk_id == 20  # the file's first chunk
    # the token counts asked for cover every file the walk may reach within the depth
    assert source.token_asks == [["b.md", "c.md", "d.md", "nav.md"]]


def test_the_requires_walk_costs_every_hop_up_to_the_depth() -> None:
    source = FakeSource()
    expand_requires_of(source, TOP, settings(requires_max_depth=3), REQUIRES)  # type: ignore[arg-type]
    assert source.token_asks == [["b.md", "c.md", "d.md", "e.md", "nav.md"]]


def test_the_requires_budgets_come_from_the_settings() -> None:
    source = FakeSource(tokens={"b.md": 60, "c.md": 30, "d.md": 30})
    one_atom = settings(requires_max_atoms=1)
    assert [c.path for c in expand_requires_of(source, TOP, one_atom, REQUIRES)] == ["b.md"]  # type: ignore[arg-type]
    budget = settings(requires_token_budget=60)
    assert [c.path for c in expand_requires_of(source, TOP, budget, REQUIRES)] == ["b.md"]  # type: ignore[arg-type]
    budget = settings(requires_token_budget=50)
    assert [c.path for c in expand_requires_of(source, TOP, budget, REQUIRES)] == ["c.md"]  # type: ignore[arg-type]
    shallow = settings(requires_max_depth=1)
    assert [c.path for c in expand_requires_of(source, TOP, shallow, REQUIRES)] == ["b.md", "c.md"]  # type: ignore[arg-type]


def test_a_required_file_that_is_not_indexed_is_skipped() -> None:
    view = PackView(requires={"a.md": ("e.md", "b.md")})
    out = expand_requires_of(FakeSource(), TOP, settings(), view)  # type: ignore[arg-type]
    assert [(c.path, c.score) for c in out] == [("b.md", pytest.approx(1.0 * 0.5 / 2))]


def test_nothing_is_required_without_requires_or_hits() -> None:
    assert expand_requires_of(FakeSource(), TOP, settings(), PackView()) == []  # type: ignore[arg-type]
    assert expand_requires_of(FakeSource(), [], settings(), REQUIRES) == []  # type: ignore[arg-type]


def test_a_neighbour_that_is_not_indexed_or_too_weak_does_not_stop_the_others() -> None:
    view = PackView(adjacency={"a.md": ("e.md", "c.md", "b.md")})  # e.md is not indexed
    dense = [(20, 0.8), (30, 0.1)]
    strict = settings(graph_min_score=0.2)  # c.md: 0.1 x 0.5 is too weak
    out = expand_graph(FakeSource(), TOP, TOP, 5, strict, view, dense, caller_vector=False)  # type: ignore[arg-type]
    assert [c.path for c in out if c.origin == "graph"] == ["b.md"]
