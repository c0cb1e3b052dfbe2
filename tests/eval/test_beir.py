import json
import math
from pathlib import Path

import pytest

from ep_mcp.bench.query import run_beir
from ep_mcp.config.load import load_settings
from ep_mcp.errors import NotFoundError
from ep_mcp.eval.beir import load_beir, materialise
from ep_mcp.eval.metrics import ndcg_at, percentile, recall_at
from ep_mcp.retrieval.confidence import HIT_FEATURES, QUERY_FEATURES, ConfidenceModel, Logistic


def test_ndcg_is_one_for_the_ideal_ranking_and_discounts_later_hits() -> None:
    rel = {"a": 1, "b": 1}
    assert ndcg_at(["a", "b", "c"], rel) == 1.0
    assert ndcg_at(["c", "a"], {"a": 1}) == pytest.approx(1 / math.log2(3))
    assert ndcg_at(["c"], {}) == 0.0


def test_recall_counts_relevant_documents_in_the_cut() -> None:
    assert recall_at(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=2) == pytest.approx(1 / 3)


def test_percentiles_pick_from_the_sorted_samples() -> None:
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert percentile([], 50) == 0.0


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "Solar panels", "text": "Panels make DC."},
        {"_id": "d/2", "title": "", "text": "Batteries store energy."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (root / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "panels"})
        + "\n"
        + json.dumps({"_id": "q9", "text": "unjudged"})
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_a_beir_folder_loads_with_only_judged_queries(tmp_path: Path) -> None:
    data = load_beir(write_beir(tmp_path / "set"))
    assert list(data.queries) == ["q1"] and data.qrels == {"q1": {"d1": 1}}
    mapping = materialise(data, tmp_path / "docs")
    assert mapping == {"d1.md": "d1", "d_2.md": "d/2"}
    assert (tmp_path / "docs" / "d1.md").read_text() == "# Solar panels\n\nPanels make DC.\n"
    assert (tmp_path / "docs" / "d_2.md").read_text().startswith("# d/2\n")


def test_a_missing_qrels_file_says_what_a_beir_folder_holds(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"qrels/dev\.tsv"):
        load_beir(write_beir(tmp_path / "set"), "dev")


def _coverage_model() -> ConfidenceModel:
    """Answerable only when a lexical hit holds every query term (coverage 1 against 2/3)."""
    hits = Logistic(HIT_FEATURES, (0.0,) * len(HIT_FEATURES), 0.0, (0.0,) * 10, (1.0,) * 10)
    n = len(QUERY_FEATURES)
    weights = tuple(100.0 * (name == "coverage") for name in QUERY_FEATURES)
    answer = Logistic(QUERY_FEATURES, weights, 0.0, (0.9,) * n, (1.0,) * n)
    return ConfidenceModel(hits, answer, "*")


def test_the_served_figure_counts_a_query_the_floor_withholds_as_a_miss(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "set")
    with (folder / "queries.jsonl").open("a") as fh:
        fh.write("\n" + json.dumps({"_id": "q2", "text": "batteries energy zeppelin"}))
    with (folder / "qrels" / "test.tsv").open("a") as fh:
        fh.write("q2\td/2\t1\n")
    settings = load_settings(data={"embedding": {"provider": "hashing"}})
    rep = run_beir(folder, settings, tmp_path / "work", confidence=_coverage_model())
    assert rep.queries == 2 and rep.withheld == 1  # "zeppelin" is nowhere: not covered
    assert rep.ndcg_at_10 == 1.0  # floor off, both queries find their abstract first
    assert rep.served_ndcg_at_10 == 0.5  # as served, the withheld one scores 0
    assert (rep.served_k, rep.k) == (10, 100)
