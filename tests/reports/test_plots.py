"""Plots are PNGs of the expected size; the BER bound matches the chi-square formula."""

from __future__ import annotations

import math
import struct

import pytest

from labtest.reports import plots


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


@pytest.mark.parametrize(
    ("errors", "expected_bits_x_bound"),
    # chi2.ppf(0.95, 2(E+1)) / 2: 2.9957 (E=0, "3/BER"), 4.7439 (E=1), 10.513 (E=5)
    [(0, 2.995732), (1, 4.743865), (5, 10.513035)],
)
def test_ber_upper_bound(errors: int, expected_bits_x_bound: float) -> None:
    assert plots.ber_upper_bound(1e12, errors) * 1e12 == pytest.approx(expected_bits_x_bound,
                                                                          rel=1e-6)


def test_ber_upper_bound_large_counts_and_bad_input() -> None:
    # many errors: the bound approaches E + z*sqrt(E) (z = 1.645 at 95 %)
    assert plots.ber_upper_bound(1.0, 1_000_000) == pytest.approx(1_000_000 + 1645.5, rel=2e-5)
    assert plots.ber_upper_bound(1e9, 1001) > plots.ber_upper_bound(1e9, 1000)
    assert plots.ber_upper_bound(0, 0) == math.inf
    with pytest.raises(ValueError, match="confidence"):
        plots.ber_upper_bound(1e9, 0, confidence=1.0)


def test_every_plot_is_a_png() -> None:
    t = [i * 0.01 for i in range(50)]
    pngs = {
        "ber": plots.ber_accumulation([1e9, 1e10, 1e11, 1e12], [0, 0, 1, 2], target_ber=1e-12),
        "fec": plots.fec_histogram({0: 10**7, 1: 10**4, 2: 30, 16: 1}),
        "dom": plots.dom_lanes({"1": -2.0, "2": -7.5, "3": -math.inf}, unit="dBm",
                               low_alarm=-6.0, low_warn=-5.0, high_warn=3.0, high_alarm=4.0),
        "flows": plots.throughput_per_flow({"h1->h2": 390.0, "h3->h2": 180.0},
                                           expected_gbps=195.0),
        "failover": plots.failover_loss(t, [0.0 if 0.2 < x < 0.25 else 400.0 for x in t],
                                        event_s=0.2, loss_window_s=(0.2, 0.25)),
        "incast": plots.incast(t, {"h1": [100.0] * 50, "h2": [90.0] * 50}, [3] * 50),
    }
    sizes = {name: _png_size(png) for name, png in pngs.items()}
    assert {n: s for n, s in sizes.items() if n != "incast"} == dict.fromkeys(
        ["ber", "fec", "dom", "flows", "failover"], (700, 360))
    assert sizes["incast"] == (700, 504)
