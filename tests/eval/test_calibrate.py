from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ep_mcp.eval.calibrate import (
    QueryRow,
    calibration,
    choose_min_answerable,
    fit_logistic,
    negative_weight,
    operating_point,
)
from ep_mcp.retrieval.confidence import ConfidenceModel, Logistic


def test_logistic_regression_recovers_the_direction_of_a_separable_signal() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.1 * rng.normal(size=400) > 0).astype(float)
    w, _ = fit_logistic(x, y, l2=1.0)
    assert w[0] > 3 * abs(w[1])


def test_perfectly_calibrated_probabilities_have_zero_ece() -> None:
    probs = [0.05] * 20 + [0.95] * 20
    labels = [0.0] * 19 + [1.0] + [1.0] * 19 + [0.0]
    assert calibration(probs, labels).ece < 1e-9
    assert calibration([0.9] * 10, [0.0] * 10).ece > 0.8


def _row(negative: bool) -> QueryRow:
    return QueryRow("p", "dev", negative, (), (), {}, None)


def test_negatives_are_weighted_to_their_share_of_the_fit() -> None:
    rows = [_row(True)] * 60 + [_row(False)] * 40
    w = negative_weight(rows, 0.15)
    assert abs(60 * w / (60 * w + 40) - 0.15) < 1e-9
    assert negative_weight([_row(False)] * 3, 0.15) == 1.0


def _scored(p: float, negative: bool, split: str = "dev") -> QueryRow:
    """A row whose answerable probability is ``p`` under ``_MODEL`` (found at rank 1)."""
    import math

    logit = math.log(p / (1 - p))
    return QueryRow("p", split, negative, ({"x": 0.0},), (not negative,), {"z": logit}, 1)


def _model() -> ConfidenceModel:
    hit = Logistic(("x",), (0.0,), 0.0, (0.0,), (1.0,))
    answer = Logistic(("z",), (1.0,), 0.0, (0.0,), (1.0,))
    return ConfidenceModel(hit, answer, "*")


def test_the_floor_withholds_at_most_five_percent_of_a_second_collection_too() -> None:
    """The floor catching the most dev negatives is bounded by dev's answerable queries and by
    another collection's (SciFact train): there it may not withhold more than 5 % either."""
    dev = [_scored(0.3, True)] * 5 + [_scored(0.6, True)] * 5 + [_scored(0.9, False)] * 40
    alone = choose_min_answerable(dev, _model())
    assert alone.not_covered == 10 and 0.6 < alone.min_answerable < 0.9
    claims = [_scored(0.2, False)] * 2 + [_scored(0.5, False)] * 8 + [_scored(0.95, False)] * 90
    bounded = choose_min_answerable(dev, _model(), also=claims)
    assert 0.3 < bounded.min_answerable <= 0.5  # above 0.5, 10 % of the claims are withheld
    assert bounded.not_covered == 5
    assert operating_point(claims, _model(), bounded.min_answerable).withheld == 2


def test_calibrate_writes_a_new_file_and_replaces_only_when_told(tmp_path: Path) -> None:
    from ep_mcp.cli.calibrate_cmds import model_target
    from ep_mcp.errors import ConfigError
    from ep_mcp.retrieval.confidence_file import packaged_path

    home = tmp_path / "home"
    fresh = model_target(None, False, home, "20261201-120000")
    assert fresh == home / "calibration" / "confidence-20261201-120000.json"
    assert model_target(None, True, home, "x") == packaged_path()  # the one way to replace it
    taken = tmp_path / "mine.json"
    taken.write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match="exists — pass --replace to overwrite it"):
        model_target(taken, False, home, "x")
    assert model_target(taken, True, home, "x") == taken


def test_calibrate_refuses_an_existing_out_before_any_work(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ep_mcp.cli import main

    taken = tmp_path / "confidence.json"
    taken.write_text('{"kept": true}', encoding="utf-8")
    (tmp_path / "golden.yaml").write_text("pack: p\nqueries: []\n", encoding="utf-8")
    args = ["bench", "calibrate", "--golden", str(tmp_path / "golden.yaml"),
            "--packs-root", str(tmp_path), "--out", str(taken)]  # fmt: skip
    result = CliRunner().invoke(main, args, env={"EP_MCP_HOME": str(tmp_path / "home")})
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {taken} exists — pass --replace")
    assert taken.read_text(encoding="utf-8") == '{"kept": true}'
