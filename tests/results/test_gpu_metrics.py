"""GPU metrics: cost and time averages, by hand."""

from __future__ import annotations

import pytest

from hdrm.results.gpu_metrics import StepIntegral, gpu_cost_usd, time_average


def test_cost_is_gpu_hours_times_the_price_a_shared_gpu_charged_for_its_share():
    assert gpu_cost_usd(2, 1000, 1800, 2.48) == pytest.approx(2.48)  # 1 GPU-hour
    assert gpu_cost_usd(1, 250, 3600, 0.35) == pytest.approx(0.0875)
    assert gpu_cost_usd(0, 0, 3600, 3.9) == 0


def test_time_average_of_a_piecewise_constant_series():
    # 0 before t=2, then 10 until 4, then 4 until the span's end (6): (2*10 + 2*4) / 6
    assert time_average([2, 4], [10, 4], 6) == pytest.approx(28 / 6)
    # values past the span are cut; an empty span or series is 0
    assert time_average([0, 5, 9], [1, 3, 100], 6) == pytest.approx((5 + 3) / 6)
    assert time_average([], [], 5) == 0 and time_average([0], [1], 0) == 0


def test_step_integral_equals_the_time_average_of_the_same_series_times_the_span():
    # 2 from t=1, 5 from t=4, 0 from t=6: integral over [0, 8] = 2 x 3 + 5 x 2 = 16
    steps = StepIntegral(0.0)
    for t, v in ((1, 2.0), (4, 5.0), (6, 0.0)):
        steps.set(t, v)
    assert steps.integral_to(8) == 16 == time_average([1, 4, 6], [2, 5, 0], 8) * 8
    steps.mark()  # at t=6
    steps.set(9, 7.0)  # a change past the marked time: the mark still answers
    assert steps.integral_to(6) == 16 and steps.integral_to(10) == 23
    with pytest.raises(ValueError, match="integral to 5"):
        steps.integral_to(5)


def test_step_integral_of_an_array_held_by_reference():
    import numpy as np

    values = np.zeros(2, dtype=np.int64)
    steps = StepIntegral(values)
    steps.advance(2.0)
    values += [3, 1]  # the caller advances before each change of the array it owns
    steps.advance(5.0)
    assert steps.integral_to(5.0).tolist() == [9.0, 3.0]
