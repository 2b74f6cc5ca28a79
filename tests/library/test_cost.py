"""Tests of the cost measurements of Part 6b (course_lib.cost)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib import cost  # noqa: E402


def test_fit_exponent_recovers_a_power_law():
    lengths = [10, 20, 40, 80, 160]
    k, a = cost.fit_exponent(lengths, [3.0 * n**2 for n in lengths])
    assert k == pytest.approx(2.0) and a == pytest.approx(3.0)
    noisy = [n**1.5 * (1.1 if i % 2 else 0.9) for i, n in enumerate(lengths)]
    k, _ = cost.fit_exponent(lengths, noisy)
    assert 1.4 < k < 1.6


@pytest.mark.parametrize(
    "lengths, costs", [([10], [1.0]), ([10, 20], [1.0]), ([0, 10], [1.0, 2.0]), ([5, 5], [1, 2])]
)
def test_fit_exponent_refuses_what_it_cannot_fit(lengths, costs):
    with pytest.raises(ValueError):
        cost.fit_exponent(lengths, costs)


def test_seconds_is_the_shortest_run_after_warmup(monkeypatch):
    calls = []
    assert cost.seconds(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5
    clock = iter([10.0, 13.0, 20.0, 21.0, 30.0, 32.0])  # three timed runs: 3, 1 and 2 s
    monkeypatch.setattr(cost.time, "perf_counter", lambda: next(clock))
    assert cost.seconds(lambda: None, repeats=3) == 1.0
    with pytest.raises(ValueError):
        cost.seconds(lambda: None, repeats=0)


def test_saved_bytes_counts_what_backward_keeps():
    x = torch.randn(64, 32, requires_grad=True)
    w = torch.randn(32, 32, requires_grad=True)
    # x @ w keeps both operands: 64 * 32 and 32 * 32 floats
    assert cost.saved_bytes(lambda: x @ w) == (64 * 32 + 32 * 32) * 4
    # exp keeps its result (a new storage of 64 * 32 floats); no gradient, nothing saved
    assert cost.saved_bytes(lambda: x.exp()) == 64 * 32 * 4
    with torch.no_grad():
        assert cost.saved_bytes(lambda: (x @ w).exp()) == 0
    # a square n x n intermediate: the memory grows as n ** 2
    small = cost.saved_bytes(lambda: torch.softmax(x @ x.T, dim=1))
    big = torch.randn(128, 32, requires_grad=True)
    large = cost.saved_bytes(lambda: torch.softmax(big @ big.T, dim=1))
    assert large > 3 * small


def test_measure_and_exponents_on_a_quadratic_and_a_linear_method():
    def quadratic(n):
        x = torch.randn(n, 8, requires_grad=True)
        return lambda: torch.softmax(x @ x.T, dim=1)

    def linear(n):
        x = torch.randn(n, 8, requires_grad=True)
        return lambda: x.exp()

    lengths = [64, 128, 256, 512]
    table = cost.measure({"quadratic": quadratic, "linear": linear}, lengths, repeats=1)
    assert table["lengths"] == lengths
    assert set(table["seconds"]) == set(table["bytes"]) == {"quadratic", "linear"}
    memory = cost.exponents(table, "bytes")
    assert memory["linear"] == pytest.approx(1.0, abs=0.01)
    assert 1.8 < memory["quadratic"] < 2.05
    assert set(cost.exponents(table, "seconds", last=2)) == {"quadratic", "linear"}


def test_plot_costs_draws_points_and_fits_on_log_axes():
    table = {
        "lengths": [10, 100, 1000],
        "seconds": {"a": [1e-3, 1e-1, 10.0], "b": [1e-3, 1e-2, 1e-1]},
        "bytes": {"a": [1, 2, 3], "b": [1, 2, 3]},
    }
    ax = cost.plot_costs(table, "seconds")
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 4
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a: n^2.00", "b: n^1.00"]
    assert math.isclose(ax.get_lines()[1].get_ydata()[-1], 10.0, rel_tol=1e-6)
