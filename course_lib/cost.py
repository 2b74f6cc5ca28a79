"""What a computation costs as its input grows: time, memory, and the exponent of a power law.

:func:`seconds` times a callable (the best of a few runs after a warm-up), :func:`saved_bytes`
measures the memory a training step holds for it: the bytes of the tensors autograd saves in
the forward pass for the backward pass (each storage counted once), which is what grows with
the length of the input in a transformer and what runs out first. :func:`measure` does both for
several methods across input lengths; :func:`fit_exponent` fits ``cost = a * n ** k`` by least
squares on a log-log scale; :func:`plot_costs` draws the table on log-log axes with the fitted
lines. Nothing here knows about attention: the notebook passes its own methods.

A cost table (as :func:`measure` returns it)::

    {"lengths": [n, ...], "seconds": {method: [s, ...]}, "bytes": {method: [b, ...]}}
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import torch


def seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """The shortest wall time of ``fn()`` in ``repeats`` runs, after ``warmup`` untimed runs
    (the shortest: what other programs on the machine add to a run only ever lengthens it)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def saved_bytes(fn: Callable[[], Any]) -> int:
    """The bytes of the tensors autograd saves while ``fn()`` runs, to compute the gradients
    later: the activation memory of a training step. Tensors that share a storage count once;
    ``fn`` must use inputs or weights that require gradients, else nothing is saved."""
    storages: dict[tuple, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        storages[(t.device.type, storage.data_ptr())] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values())


def measure(
    methods: Mapping[str, Callable[[int], Callable[[], Any]]],
    lengths: Sequence[int],
    repeats: int = 5,
) -> dict[str, Any]:
    """The time and memory of each method at each input length.

    ``methods[name](n)`` prepares a run of that method at length ``n`` (inputs, weights) and
    returns a callable that runs it once; preparing is not timed. Returns a cost table (see
    the module's docstring): seconds from :func:`seconds`, bytes from :func:`saved_bytes`.
    """
    table: dict[str, Any] = {"lengths": list(lengths), "seconds": {}, "bytes": {}}
    for name, prepare in methods.items():
        table["seconds"][name], table["bytes"][name] = [], []
        for n in lengths:
            run = prepare(n)
            table["seconds"][name].append(seconds(run, repeats=repeats))
            table["bytes"][name].append(saved_bytes(run))
    return table


def fit_exponent(lengths: Sequence[float], costs: Sequence[float]) -> tuple[float, float]:
    """``(k, a)`` of the power law ``cost = a * n ** k`` that fits the points best on a log-log
    scale (least squares of ``log cost`` against ``log n``). Needs two lengths or more, all
    lengths and costs positive."""
    if len(lengths) != len(costs) or len(lengths) < 2:
        raise ValueError("need as many costs as lengths, and at least two of each")
    if min(lengths) <= 0 or min(costs) <= 0:
        raise ValueError("lengths and costs must be positive to take their logarithms")
    x = [math.log(n) for n in lengths]
    y = [math.log(c) for c in costs]
    mean_x, mean_y = statistics.fmean(x), statistics.fmean(y)
    spread = sum((xi - mean_x) ** 2 for xi in x)
    if spread == 0:
        raise ValueError("need at least two different lengths")
    k = sum((xi - mean_x) * (yi - mean_y) for xi, yi in zip(x, y, strict=True)) / spread
    return k, math.exp(mean_y - k * mean_x)


def exponents(table: Mapping[str, Any], key: str = "seconds", last: int | None = None) -> dict:
    """The fitted exponent of each method's ``key`` ("seconds" or "bytes") in a cost table,
    over its ``last`` lengths (all when None: the smallest lengths are the noisiest)."""
    lengths = table["lengths"][-last:] if last else table["lengths"]
    return {
        name: fit_exponent(lengths, values[-len(lengths) :])[0]
        for name, values in table[key].items()
    }


def plot_costs(
    table: Mapping[str, Any], key: str = "seconds", ax=None, last: int | None = None, title=None
):
    """Each method's ``key`` against the length on log-log axes, with its fitted power law
    (fitted over the ``last`` lengths, see :func:`exponents`) in the legend. Returns the axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    lengths = table["lengths"]
    fit_lengths = lengths[-last:] if last else lengths
    for name, values in table[key].items():
        k, a = fit_exponent(fit_lengths, values[-len(fit_lengths) :])
        (line,) = ax.plot(lengths, values, "o", label=f"{name}: n^{k:.2f}")
        ax.plot(fit_lengths, [a * n**k for n in fit_lengths], "-", color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    label = {"seconds": "seconds per call", "bytes": "bytes saved for backward"}.get(key, key)
    ax.set(xlabel="sequence length n (tokens)", ylabel=label, title=title or label)
    ax.legend()
    return ax
