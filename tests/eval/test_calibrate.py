from __future__ import annotations

import numpy as np

from ep_mcp.eval.calibrate import calibration, fit_logistic


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
