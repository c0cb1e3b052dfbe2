from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.confidence import (
    HIT_FEATURES,
    QUERY_FEATURES,
    ConfidenceModel,
    HitView,
    Logistic,
    applies,
    assess,
    hit_features,
    idf_coverage,
    idf_weights,
    model_from_dict,
    model_to_dict,
    query_features,
    sigmoid,
    uncovered_rest,
)
from ep_mcp.retrieval.confidence_file import load_model, packaged_model, packaged_path, save_model
from ep_mcp.retrieval.reconstruct import excerpt
from ep_mcp.retrieval.threshold import Evidence


def _model(weight: float) -> ConfidenceModel:
    def lin(names: tuple[str, ...], w: float) -> Logistic:
        n = len(names)
        return Logistic(names, (w,) * n, 0.0, (0.0,) * n, (1.0,) * n)

    return ConfidenceModel(lin(HIT_FEATURES, weight), lin(QUERY_FEATURES, weight), "local/")


def _hit(rank: int, cosine: float, text: str) -> HitView:
    c = Candidate(rank, f"f{rank}.md", score=1.0 / rank, lexical_rank=rank, vector_rank=rank,
                  vector_score=cosine)  # fmt: skip
    return HitView(c, text, "Title")


EVIDENCE = Evidence(top_cosine=0.7, cosine_margin=0.2, coverage=1.0, terms=2)


def test_rare_terms_weigh_more_in_idf_coverage() -> None:
    idf = idf_weights(["zigbee", "setup"], {"zigbee": 1, "setup": 90}, 100)
    assert idf_coverage(idf, "zigbee pairing") > 0.5 > idf_coverage(idf, "setup steps")


def test_every_hit_gets_a_probability_and_the_answer_one_too() -> None:
    hits = [_hit(1, 0.7, "zigbee pairing"), _hit(2, 0.3, "other words")]
    judged = assess(hits, EVIDENCE, {"zigbee": 3.0}, _model(0.5))
    assert len(judged.confidences) == 2
    assert all(0.0 < p < 1.0 for p in judged.confidences)
    assert judged.confidences[0] > judged.confidences[1]
    assert 0.0 < judged.answerable < 1.0


def _names_model() -> ConfidenceModel:
    return ConfidenceModel(
        _model(0.0).hit,
        Logistic(QUERY_FEATURES, tuple(-1.0 * (n == "unknown_uncovered") for n in QUERY_FEATURES),
                 2.0, (0.0,) * len(QUERY_FEATURES), (1.0,) * len(QUERY_FEATURES)),
        "local/",
    )  # fmt: skip


def test_a_name_the_pack_never_mentions_counts_against_answering() -> None:
    hits = [_hit(1, 0.6, "smoke simulation domain")]
    idf = {"houdini": 4.0, "pyro": 1.0}  # the rest of the question is not in the first hit
    known = assess(hits, EVIDENCE, idf, _names_model())
    unknown = assess(hits, EVIDENCE, idf, _names_model(), unknown_names={"houdini"})
    assert known.query_features["unknown_uncovered"] == 0.0
    assert unknown.query_features["unknown_uncovered"] == 0.8
    assert unknown.answerable < known.answerable


def test_a_name_the_pack_never_mentions_costs_nothing_when_the_rest_is_answered() -> None:
    hits = [_hit(1, 0.6, "index a folder of markdown files")]
    idf = {"obsidian": 4.0, "markdown": 2.0, "folder": 1.0, "index": 1.0}
    judged = assess(hits, EVIDENCE, idf, _names_model(), unknown_names={"obsidian"})
    assert judged.query_features["unknown_uncovered"] == 0.0
    half = assess(hits[:1], EVIDENCE, {**idf, "vault": 4.0}, _names_model(), {"obsidian"})
    assert half.query_features["unknown_uncovered"] == pytest.approx(4 / 12 * 4 / 8)


def test_an_empty_answer_is_not_answerable() -> None:
    assert assess([], EVIDENCE, {}, _model(1.0)).answerable == 0.0


def test_the_model_round_trips_through_its_data_file_form() -> None:
    model = _model(0.25)
    assert model_from_dict(model_to_dict(model)) == model


def test_the_model_applies_only_to_the_embedder_it_was_fitted_for() -> None:
    assert applies(_model(1.0), "local/all-MiniLM-L6-v2-int8")
    assert not applies(_model(1.0), "openai/text-embedding-3-small")


def test_the_packaged_model_is_shipped_and_readable() -> None:
    model = packaged_model()
    assert model is not None
    assert model.hit.names == HIT_FEATURES
    assert model.answerable.names == QUERY_FEATURES


def test_excerpts_skip_comments_frontmatter_and_residue() -> None:
    text = "---\ntitle: X\n---\n<!-- generated -->\ntags: a, b\n\nThe real prose starts here."
    assert excerpt(text) == "The real prose starts here."


def test_idf_is_smoothed_and_an_unknown_term_counts_as_rarest() -> None:
    idf = idf_weights(["pump", "zigbee"], {"pump": 9}, 99)
    assert idf == {"pump": pytest.approx(math.log(100 / 9.5)), "zigbee": math.log(100 / 0.5)}


def test_idf_coverage_of_nothing_to_cover_is_zero() -> None:
    assert idf_coverage({}, "anything") == 0.0
    assert idf_coverage({"pump": 0.0}, "pump") == 0.0
    assert idf_coverage({"pump": 0.5, "seal": 0.25}, "a pump") == pytest.approx(2 / 3)


def test_the_sigmoid_is_stable_and_symmetric_at_both_ends() -> None:
    assert sigmoid(0.0) == 0.5
    assert sigmoid(2.0) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert sigmoid(-2.0) == pytest.approx(1 - sigmoid(2.0))
    assert sigmoid(-800.0) == 0.0 and sigmoid(800.0) == 1.0  # no overflow


def test_the_logistic_standardises_each_feature_before_weighing_it() -> None:
    model = Logistic(("a", "b", "c"), (2.0, -1.0, 3.0), 0.5, (1.0, 0.0, 4.0), (2.0, 1.0, 0.0))
    # 0.5 + 2 (3 - 1) / 2 - 1 (absent: 0 - 0) / 1 + 3 (5 - 4) / (0 → 1)
    assert model.logit({"a": 3.0, "c": 5.0}) == pytest.approx(0.5 + 2.0 + 0.0 + 3.0)
    assert model.probability({"a": 3.0, "c": 5.0}) == pytest.approx(sigmoid(5.5))


def test_the_hit_features_of_a_searched_hit_in_both_legs() -> None:
    c = Candidate(1, "a.md", score=0.5, lexical_rank=4, vector_rank=10, vector_score=0.6)
    idf = {"zigbee": 3.0, "pair": 1.0}
    view = HitView(c, "Zigbee pairing works.", "Pairing guide")
    assert hit_features(view, 2, 2.0, EVIDENCE, idf) == {
        "cosine": 0.6,
        "cosine_gap": pytest.approx(0.1),
        "lexical_rr": 0.25,
        "vector_rr": 0.1,
        "agree": 1.0,
        "idf_coverage": 1.0,
        "field_coverage": 0.25,
        "relative_score": 0.25,
        "position_rr": 0.5,
        "expanded": 0.0,
    }


def test_the_hit_features_of_an_expanded_hit_outside_both_legs() -> None:
    c = Candidate(1, "a.md", score=0.5, origin="graph")
    view = HitView(c, "nothing", "")
    got = hit_features(view, 4, 0.0, Evidence(None, None, 0.0, 1), {"x": 1.0})
    assert got == {
        "cosine": 0.0,
        "cosine_gap": 1.0,
        "lexical_rr": 0.0,
        "vector_rr": 0.0,
        "agree": 0.0,
        "idf_coverage": 0.0,
        "field_coverage": 0.0,
        "relative_score": 0.0,
        "position_rr": 0.25,
        "expanded": 1.0,
    }


@pytest.mark.parametrize(
    ("lexical_rank", "vector_rank", "agree"),
    [(10, 10, 1.0), (11, 1, 0.0), (1, 11, 0.0), (None, 1, 0.0), (1, None, 0.0)],
)
def test_the_legs_agree_when_the_hit_is_in_the_top_ten_of_both(
    lexical_rank: int | None, vector_rank: int | None, agree: float
) -> None:
    c = Candidate(1, "a.md", score=1.0, lexical_rank=lexical_rank, vector_rank=vector_rank)
    assert hit_features(HitView(c, "", ""), 1, 1.0, EVIDENCE, {})["agree"] == agree


def test_the_query_features_name_the_rarest_term_no_hit_contains() -> None:
    idf = {"zigbee": 3.0, "pair": 1.0, "hub": 2.0}
    rows = [{"idf_coverage": 0.2}, {"idf_coverage": 0.5}]
    got = query_features(EVIDENCE, rows, 1.5, ["pairing", "a pair"], idf)
    assert got == {
        "best_hit": 1.5,
        "top_cosine": 0.7,
        "cosine_margin": 0.2,
        "coverage": 1.0,
        "idf_coverage": 0.5,
        "rare_missing": 0.5,  # zigbee: 3 of 6
        "unknown_uncovered": 0.0,  # no name-like word of the query is absent from the pack
    }


def test_the_query_features_without_hits_or_a_dense_leg() -> None:
    got = query_features(Evidence(None, None, 0.0, 0), [], -1.0, [], {})
    assert got == {
        "best_hit": -1.0,
        "top_cosine": 0.0,
        "cosine_margin": 0.0,
        "coverage": 0.0,
        "idf_coverage": 0.0,
        "rare_missing": 0.0,
        "unknown_uncovered": 0.0,
    }


def test_assess_feeds_the_best_hit_and_the_first_five_texts_to_the_answer_model() -> None:
    hits = [_hit(i, 0.7 - i / 100, "filler") for i in range(1, 6)]
    hits += [_hit(6, 0.1, "zigbee"), _hit(7, 0.1, "zigbee")]  # the rare term, sixth and later
    hit_model = Logistic(("position_rr",), (2.0,), -1.0, (0.0,), (1.0,))
    answer_model = Logistic(("best_hit", "rare_missing"), (1.0, 1.0), 0.0, (0.0, 0.0), (1.0, 1.0))
    judged = assess(hits, EVIDENCE, {"zigbee": 1.0}, ConfidenceModel(hit_model, answer_model, "*"))
    assert judged.confidences[0] == pytest.approx(sigmoid(1.0))  # -1 + 2 x 1/1
    assert judged.confidences[1] == pytest.approx(sigmoid(0.0))  # -1 + 2 x 1/2
    assert judged.query_features["best_hit"] == pytest.approx(1.0)
    assert judged.query_features["rare_missing"] == 1.0  # hits 6 and 7 are not read
    assert judged.answerable == pytest.approx(sigmoid(2.0))
    assert len(judged.hit_features) == 7
    assert judged.hit_features[0]["relative_score"] == 1.0  # best score: hit 1 (1/1)


def test_a_data_file_without_means_or_scales_leaves_the_features_as_they_are() -> None:
    data = {
        "hit": {"names": ["cosine"], "weights": [1], "bias": 0},
        "answerable": {"names": ["coverage", "top_cosine"], "weights": [1, 2], "bias": -1},
    }
    model = model_from_dict(data)
    assert model.hit == Logistic(("cosine",), (1.0,), 0.0, (0.0,), (1.0,))
    assert model.answerable.mean == (0.0, 0.0) and model.answerable.scale == (1.0, 1.0)
    assert (model.calibrated_for, model.fitted_on) == ("*", "")
    assert applies(model, None)


def test_the_data_file_form_rounds_to_six_places() -> None:
    lg = Logistic(("a",), (0.12345678,), 0.98765432, (1.23456789,), (1.50000049,))
    form = model_to_dict(ConfidenceModel(lg, lg, "local/", "golden dev"))
    assert form == {
        "calibrated_for": "local/",
        "fitted_on": "golden dev",
        "hit": {
            "names": ["a"],
            "weights": [0.123457],
            "bias": 0.987654,
            "mean": [1.234568],
            "scale": [1.5],
        },
        "answerable": form["hit"],
    }


def test_a_model_fitted_for_one_embedder_does_not_apply_without_one() -> None:
    assert not applies(_model(1.0), None)
    assert not applies(_model(1.0), "")


def test_a_saved_model_loads_back(tmp_path: Path) -> None:
    path = tmp_path / "confidence.json"
    save_model(_model(0.5), path)
    assert path.read_text(encoding="utf-8").endswith("}\n")
    assert json.loads(path.read_text(encoding="utf-8"))["calibrated_for"] == "local/"
    assert load_model(path) == _model(0.5)


def test_a_missing_model_file_means_no_confidence(tmp_path: Path) -> None:
    assert load_model(tmp_path / "absent.json") is None


UNEVEN = (
    '{"hit": {"names": ["a", "b"], "weights": [1.0], "bias": 0},'
    ' "answerable": {"names": ["a"], "weights": [1.0], "bias": 0}}'
)


@pytest.mark.parametrize("text", ["not json", "{}", '{"hit": 3, "answerable": 4}', "[]", UNEVEN])
def test_an_unreadable_model_file_warns_and_means_no_confidence(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    path = tmp_path / "confidence.json"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ep_mcp.retrieval.confidence_file"):
        assert load_model(path) is None
    (record,) = [r for r in caplog.records if r.name == "ep_mcp.retrieval.confidence_file"]
    assert record.getMessage().startswith(f"confidence model {path} unreadable (")
    assert record.getMessage().endswith(") — no confidence")
    assert "(None)" not in record.getMessage()  # the reason is named
    if text == UNEVEN:  # refused when read, not by every search that would use it
        assert "2 names but 1 weights" in record.getMessage()


def test_the_packaged_model_is_read_from_the_package_data() -> None:
    assert packaged_path().name == "confidence.json"
    assert packaged_path().parent.name == "data"
    assert load_model(packaged_path()) == packaged_model()


def test_a_rare_term_in_one_of_the_first_five_hits_is_not_missing() -> None:
    hits = [_hit(1, 0.7, "filler"), _hit(2, 0.6, "zigbee pairing")]
    judged = assess(hits, EVIDENCE, {"zigbee": 1.0}, _model(0.5))
    assert judged.query_features["rare_missing"] == 0.0


def test_a_dense_leg_of_zero_cosines_gives_a_zero_gap() -> None:
    c = Candidate(1, "a.md", score=1.0, vector_rank=1, vector_score=0.0)
    evidence = Evidence(top_cosine=0.0, cosine_margin=None, coverage=0.0, terms=1)
    assert hit_features(HitView(c, "", ""), 1, 1.0, evidence, {})["cosine_gap"] == 0.0


def test_a_saved_model_is_indented_for_readable_diffs(tmp_path: Path) -> None:
    path = tmp_path / "confidence.json"
    save_model(_model(0.5), path)
    assert path.read_text(encoding="utf-8").startswith('{\n  "calibrated_for": "local/",\n')


def test_with_no_other_term_or_no_text_the_rest_of_the_query_is_all_uncovered() -> None:
    idf = {"houdini": 4.0, "pyro": 1.0}
    assert uncovered_rest({"houdini": 4.0}, {"houdini"}, ["houdini pyro"]) == 1.0
    assert uncovered_rest(idf, {"houdini"}, []) == 1.0
    assert uncovered_rest(idf, {"houdini"}, ["pyro smoke"]) == 0.0


def test_a_model_part_that_is_not_an_object_is_named_by_its_type() -> None:
    with pytest.raises(TypeError, match=r"names and weights, not list$"):
        model_from_dict({"hit": [1.0], "answerable": {}})
