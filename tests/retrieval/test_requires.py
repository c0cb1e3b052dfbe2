from hypothesis import given
from hypothesis import strategies as st

from ep_mcp.retrieval.requires import expand_requires

REQ = {"a.md": ("b.md", "c.md"), "b.md": ("d.md",), "d.md": ("e.md",), "c.md": ("a.md",)}
TOKENS = {"b.md": 100, "c.md": 100, "d.md": 100, "e.md": 100}


def paths(found) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.path for r in found]


def test_required_atoms_come_in_declaration_order_breadth_first() -> None:
    found = expand_requires(["a.md"], REQ, TOKENS)
    assert [(r.path, r.via, r.hop) for r in found] == [
        ("b.md", "a.md", 1),
        ("c.md", "a.md", 1),
        ("d.md", "b.md", 2),
    ]


def test_at_most_two_hops() -> None:
    assert "e.md" not in paths(expand_requires(["a.md"], REQ, TOKENS, max_atoms=10))
    assert "e.md" in paths(expand_requires(["a.md"], REQ, TOKENS, max_atoms=10, max_depth=3))


def test_at_most_max_atoms() -> None:
    assert paths(expand_requires(["a.md"], REQ, TOKENS, max_atoms=1)) == ["b.md"]


def test_an_atom_over_the_token_budget_is_skipped_and_smaller_ones_still_fit() -> None:
    tokens = {**TOKENS, "b.md": 5000}
    assert paths(expand_requires(["a.md"], REQ, tokens, token_budget=3500)) == ["c.md"]
    assert paths(expand_requires(["a.md"], REQ, TOKENS, token_budget=150)) == ["b.md"]


def test_files_already_in_the_top_k_are_not_appended_but_their_requires_propagate() -> None:
    assert paths(expand_requires(["a.md", "b.md"], REQ, TOKENS)) == ["c.md", "d.md", "e.md"]


def test_cycles_are_safe_and_navigation_files_are_skipped() -> None:
    cyc = {"x.md": ("y.md",), "y.md": ("x.md",)}
    assert paths(expand_requires(["x.md"], cyc, {}, max_depth=10)) == ["y.md"]
    assert paths(expand_requires(["a.md"], REQ, TOKENS, skip=["b.md"])) == ["c.md"]


ALL300 = {f"{c}.md": 300 for c in "abcdefgh"}
names = st.sampled_from([f"{c}.md" for c in "abcdefgh"])


@given(
    st.lists(names, unique=True, max_size=5),
    st.dictionaries(names, st.lists(names, max_size=4).map(tuple)),
    st.integers(0, 3),
    st.integers(0, 5),
    st.integers(0, 5000),
)
def test_requires_never_displaces_or_repeats_a_top_k_hit(top, req, depth, atoms, budget) -> None:  # type: ignore[no-untyped-def]
    found = expand_requires(top, req, ALL300, max_depth=depth, max_atoms=atoms, token_budget=budget)
    got = paths(found)
    assert not set(got) & set(top)
    assert len(got) == len(set(got)) <= atoms
    assert 300 * len(got) <= max(budget, 0) or not got


def test_the_spec_defaults_are_three_atoms_and_3500_tokens() -> None:
    many = {"a.md": ("b.md", "c.md", "d.md", "e.md")}
    assert paths(expand_requires(["a.md"], many, {})) == ["b.md", "c.md", "d.md"]
    exact = {"a.md": ("b.md",)}
    assert paths(expand_requires(["a.md"], exact, {"b.md": 3500})) == ["b.md"]
    assert paths(expand_requires(["a.md"], exact, {"b.md": 3501})) == []


def test_a_depth_of_zero_requires_nothing() -> None:
    assert expand_requires(["a.md"], REQ, TOKENS, max_depth=0) == []


def test_a_file_of_unknown_size_costs_nothing() -> None:
    assert paths(expand_requires(["a.md"], {"a.md": ("z.md",)}, {}, token_budget=0)) == ["z.md"]
