from pathlib import Path

import pytest

from ep_mcp.errors import ConfigError, NotFoundError
from ep_mcp.eval.golden import (
    GoldenQuery,
    GoldenSet,
    find_pack,
    judge,
    load_golden,
    metrics,
    parse_minimums,
    render_table,
    report,
    select_split,
    shortfalls,
    stratified_split,
    with_refusals,
)


def q(
    expected: tuple[str, ...], category: str = "keyword", must_not: tuple[str, ...] = ()
) -> GoldenQuery:
    return GoldenQuery("x", "query", category, expected, must_not)


def test_rank_is_that_of_the_first_expected_file_among_distinct_files() -> None:
    o = judge(q(("b.md", "c.md")), ["a.md", "a.md", "c.md", "b.md"], lambda p: p)
    assert o.ranked == ("a.md", "c.md", "b.md") and o.rank == 2


def test_a_supporting_file_of_the_expected_skill_counts_as_the_skill() -> None:
    unit = {"pdf/SKILL.md": "pdf", "pdf/forms.md": "pdf"}.get
    o = judge(q(("pdf/SKILL.md",)), ["other/SKILL.md", "pdf/forms.md"], lambda p: unit(p, p))
    assert o.rank == 2


def test_must_not_counts_only_in_the_top_five() -> None:
    query = q(("a.md",), must_not=("_index.md",))
    assert judge(query, ["_index.md", "a.md"], lambda p: p).must_not_hits == ("_index.md",)
    deep = [f"{i}.md" for i in range(5)] + ["_index.md"]
    assert judge(query, deep, lambda p: p).must_not_hits == ()


def test_metrics_split_answerable_and_negative_queries() -> None:
    outcomes = [
        judge(q(("a.md",)), ["a.md"], lambda p: p),
        judge(q(("a.md",)), ["b.md", "c.md", "a.md"], lambda p: p),
        judge(q(("a.md",)), [], lambda p: p),
        judge(q((), "negative"), [], lambda p: p),
        judge(q((), "negative"), ["z.md"], lambda p: p),
    ]
    m = metrics(outcomes)
    assert m.recall == {1: pytest.approx(1 / 3), 3: pytest.approx(2 / 3), 5: pytest.approx(2 / 3)}
    assert m.mrr == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert (m.negatives, m.negatives_empty, m.negative_false_positives) == (2, 1, 1)


def test_a_report_has_a_row_per_category_and_lists_misses() -> None:
    rep = report(
        "p", [judge(q(("a.md",)), ["b.md"], lambda p: p), judge(q((), "negative"), [], lambda p: p)]
    )
    assert set(rep.by_category) == {"keyword", "negative"}
    assert [m["id"] for m in rep.to_dict()["misses"]] == ["x"]
    assert "ALL" in render_table([rep])


def test_minimums_are_parsed_and_checked() -> None:
    mins = parse_minimums("recall@5=0.9, mrr=0.7")
    assert mins == {"recall@5": 0.9, "mrr": 0.7}
    rep = report("p", [judge(q(("a.md",)), ["b.md"], lambda p: p)])
    assert shortfalls(rep, mins) == ["p: recall@5 0.000 < 0.9", "p: mrr 0.000 < 0.7"]
    with pytest.raises(ConfigError, match="name=number"):
        parse_minimums("recall@5")
    with pytest.raises(ConfigError, match="unknown metric"):
        shortfalls(rep, {"precision": 1.0})


def test_golden_files_load_and_bad_ones_say_what_is_wrong(tmp_path: Path) -> None:
    good = tmp_path / "g.yaml"
    good.write_text(
        "pack: demo\nqueries:\n  - id: d1\n    query: hi\n    category: keyword\n"
        "    expected: [a.md]\n  - id: d2\n    query: nope\n    category: negative\n"
        "    expected: []\n"
    )
    gs = load_golden(good)
    assert gs.pack == "demo" and [x.negative for x in gs.queries] == [False, True]
    bad = tmp_path / "b.yaml"
    bad.write_text("queries: []\n")
    with pytest.raises(ConfigError, match="pack:"):
        load_golden(bad)


def test_a_golden_set_whose_queries_are_not_a_list_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    bad.write_text("pack: demo\nqueries: 5\n")
    with pytest.raises(ConfigError, match="queries: must be a list"):
        load_golden(bad)


def test_packs_are_found_under_any_root(tmp_path: Path) -> None:
    (tmp_path / "b" / "demo").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    assert find_pack("demo", [tmp_path / "a", tmp_path / "b"]) == tmp_path / "b" / "demo"
    with pytest.raises(NotFoundError, match="--packs-root"):
        find_pack("missing", [tmp_path / "a"])


def test_a_query_names_its_split_and_one_without_a_split_is_dev(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "pack: demo\nqueries:\n  - {id: d1, query: a, expected: [a.md], split: test}\n"
        "  - {id: d2, query: b, expected: [b.md]}\n"
    )
    assert [q.split for q in load_golden(path).queries] == ["test", "dev"]
    path.write_text("pack: demo\nqueries:\n  - {id: d1, query: a, split: holdout}\n")
    with pytest.raises(ConfigError, match="split"):
        load_golden(path)


def test_selecting_a_split_keeps_its_queries_and_all_keeps_every_query() -> None:
    gs = GoldenSet(
        "p",
        (
            GoldenQuery("a", "q", "keyword", ("a.md",), split="dev"),
            GoldenQuery("b", "q", "keyword", ("b.md",), split="test"),
        ),
    )
    assert [q.id for q in select_split(gs, "test").queries] == ["b"]
    assert select_split(gs, "dev").split == "dev"
    assert len(select_split(gs, "all").queries) == 2
    with pytest.raises(ConfigError, match="dev, test, all"):
        select_split(gs, "train")


def test_the_packs_own_refusals_join_as_test_only_negatives(tmp_path: Path) -> None:
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "benchmark.yaml").write_text(
        "questions:\n"
        "  - {id: q1, category: concept, question: 'What is a mesh?'}\n"
        "  - {id: q2, category: refusal, question: 'Tell me about Premiere.'}\n"
    )
    gs = GoldenSet("p", (q(("a.md",)),), refusals="eval/benchmark.yaml")
    joined = with_refusals(gs, tmp_path)
    added = joined.queries[-1]
    assert len(joined.queries) == 2
    assert (added.query, added.category, added.split, added.negative) == (
        "Tell me about Premiere.",
        "refusal",
        "test",
        True,
    )
    assert with_refusals(GoldenSet("p", ()), tmp_path).queries == ()
    with pytest.raises(NotFoundError, match="refusals"):
        with_refusals(GoldenSet("p", (), refusals="eval/missing.yaml"), tmp_path)


def test_the_split_rule_halves_every_category_and_does_not_depend_on_order() -> None:
    queries = [GoldenQuery(f"k{i}", "q", "keyword", ("a.md",)) for i in range(7)] + [
        GoldenQuery(f"n{i}", "q", "negative", ()) for i in range(4)
    ]
    rule = stratified_split(queries)
    assert rule == stratified_split(list(reversed(queries)))
    keyword = [rule[f"k{i}"] for i in range(7)]
    negative = [rule[f"n{i}"] for i in range(4)]
    assert keyword.count("test") == 4 and negative.count("test") == 2
