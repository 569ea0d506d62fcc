"""GPU metrics: cost and time averages, by hand."""

from __future__ import annotations

import pytest

from hdrm.results.gpu_metrics import gpu_cost_usd, time_average


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
