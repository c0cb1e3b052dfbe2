from __future__ import annotations

import numpy as np

from ep_mcp.eval.calibrate import QueryRow, calibration, fit_logistic, negative_weight


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
