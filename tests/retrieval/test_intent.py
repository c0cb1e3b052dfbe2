import pytest

from ep_mcp.retrieval.intent import classify_intent


@pytest.mark.parametrize(
    ("query", "intent", "vector_weight"),
    [
        ("when was the energy dashboard added", "WHEN", 0.40),
        ("which version deprecated the old syntax", "WHEN", 0.40),
        ("changelog for zigbee2mqtt", "WHEN", 0.40),
        ("how do I set up a VLAN", "HOW", 0.80),
        ("install the add-on", "HOW", 0.80),
        ("why does my battery drain", "WHY", 0.80),
        ("difference between zigbee and z-wave", "WHY", 0.80),
        ("what is a bayesian sensor", "ENTITY", 0.45),
        ("tell me about Cryptomatte", "ENTITY", 0.45),
        ("charge controller sizing", "GENERAL", 0.70),
    ],
)
def test_the_query_shape_picks_the_intent_and_its_weights(
    query: str, intent: str, vector_weight: float
) -> None:
    got = classify_intent(query)
    assert got.name == intent
    assert got.vector_weight == pytest.approx(vector_weight)
    assert got.vector_weight + got.text_weight == pytest.approx(1.0)


def test_when_is_tried_before_how_so_the_first_matching_pattern_wins() -> None:
    assert classify_intent("how do I find when was it added").name == "WHEN"


def test_general_takes_the_configured_weights() -> None:
    got = classify_intent("inverter clipping", general_vector_weight=0.6)
    assert (got.name, got.vector_weight, got.text_weight) == ("GENERAL", 0.6, 0.4)
