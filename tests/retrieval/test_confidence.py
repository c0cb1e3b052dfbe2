from __future__ import annotations

from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.confidence import (
    HIT_FEATURES,
    QUERY_FEATURES,
    ConfidenceModel,
    HitView,
    Logistic,
    applies,
    assess,
    idf_coverage,
    idf_weights,
    model_from_dict,
    model_to_dict,
)
from ep_mcp.retrieval.confidence_file import packaged_model
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


def test_a_name_the_pack_never_mentions_counts_against_answering() -> None:
    hits = [_hit(1, 0.6, "smoke simulation domain")]
    idf = {"houdini": 4.0, "smoke": 1.0}
    model = ConfidenceModel(
        _model(0.0).hit,
        Logistic(QUERY_FEATURES, tuple(-1.0 * (n == "unknown_names") for n in QUERY_FEATURES),
                 2.0, (0.0,) * len(QUERY_FEATURES), (1.0,) * len(QUERY_FEATURES)),
        "local/",
    )  # fmt: skip
    known = assess(hits, EVIDENCE, idf, model)
    unknown = assess(hits, EVIDENCE, idf, model, unknown_names={"houdini"})
    assert known.query_features["unknown_names"] == 0.0
    assert unknown.query_features["unknown_names"] == 0.8
    assert unknown.answerable < known.answerable


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
