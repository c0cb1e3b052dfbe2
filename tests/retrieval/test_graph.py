import pytest

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.graph import graph_neighbours, merge_reserved

EDGES = {"a.md": ("b.md", "c.md"), "b.md": ("d.md", "a.md"), "d.md": ("e.md",), "c.md": ("a.md",)}


def test_bfs_decays_per_hop_and_stops_at_the_depth() -> None:
    found = graph_neighbours(["a.md"], EDGES, depth=2, decay=0.5)
    assert [(n.path, n.hop, n.factor) for n in found] == [
        ("b.md", 1, 0.5),
        ("c.md", 1, 0.5),
        ("d.md", 2, 0.25),
    ]
    assert all(n.via == "a.md" for n in found)


def test_cycles_and_seeds_are_never_returned() -> None:
    found = graph_neighbours(["a.md", "b.md"], EDGES, depth=5, decay=0.9)
    paths = [n.path for n in found]
    assert "a.md" not in paths and "b.md" not in paths
    assert len(paths) == len(set(paths))


def test_excluded_files_are_not_walked_through() -> None:
    found = graph_neighbours(["a.md"], EDGES, depth=3, decay=0.9, exclude=["b.md"])
    assert [n.path for n in found] == ["c.md"]


def test_edges_are_directed() -> None:
    assert graph_neighbours(["e.md"], EDGES, depth=3, decay=0.9) == []


def core(n: int) -> list[Candidate]:
    return [Candidate(i, f"core{i}.md", 1.0 - i / 100) for i in range(n)]


@pytest.mark.parametrize(
    ("slots", "graph_hits", "expected_graph"), [(2, 3, 2), (2, 1, 1), (0, 3, 0)]
)
def test_reserved_slots_hold_graph_neighbours_at_the_end(
    slots: int, graph_hits: int, expected_graph: int
) -> None:
    bonus = [
        Candidate(100 + i, f"g{i}.md", 0.01 * (i + 1), origin="graph") for i in range(graph_hits)
    ]
    out = merge_reserved(core(10), bonus, k=5, slots=slots)
    assert len(out) == 5
    assert sum(1 for c in out if c.origin == "graph") == expected_graph
    assert [c.chunk_id for c in out if c.origin == "search"] == list(range(5 - expected_graph))
    graph_scores = [c.score for c in out if c.origin == "graph"]
    assert graph_scores == sorted(graph_scores, reverse=True)


def test_graph_neighbours_fill_free_room_without_displacing_anything() -> None:
    bonus = [Candidate(100 + i, f"g{i}.md", 0.1, origin="graph") for i in range(5)]
    out = merge_reserved(core(2), bonus, k=5, slots=1)
    assert [c.chunk_id for c in out[:2]] == [0, 1] and len(out) == 5


def test_a_graph_neighbour_already_in_the_core_is_not_repeated() -> None:
    out = merge_reserved(core(5), [Candidate(99, "core1.md", 0.1, origin="graph")], k=5, slots=2)
    assert [c.path for c in out] == [f"core{i}.md" for i in range(5)]


def test_a_file_reached_by_two_paths_is_returned_once_at_its_first() -> None:
    diamond = {"a.md": ("b.md", "c.md"), "b.md": ("d.md",), "c.md": ("d.md",)}
    found = graph_neighbours(["a.md"], diamond, depth=2, decay=0.5)
    assert [(n.path, n.via, n.hop) for n in found] == [
        ("b.md", "a.md", 1),
        ("c.md", "a.md", 1),
        ("d.md", "a.md", 2),
    ]


def test_a_depth_of_zero_walks_nowhere() -> None:
    assert graph_neighbours(["a.md"], EDGES, depth=0, decay=0.5) == []


def test_reserved_slots_beyond_k_never_take_more_than_k() -> None:
    bonus = [Candidate(100 + i, f"g{i}.md", 0.1, origin="graph") for i in range(5)]
    out = merge_reserved(core(10), bonus, k=3, slots=5)
    assert [c.path for c in out] == ["g0.md", "g1.md", "g2.md"]
