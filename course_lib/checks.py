"""Checks used by the notebooks' visible checks and graded tests.

Each check raises ``AssertionError`` with a message that says what was expected, so a student
reading a failed check knows what to fix. The checks compare plain tensors, never the objects a
student returns: a result is first converted with :func:`plain`, which refuses tensor
subclasses and other look-alikes. The torch functions they rely on are bound when this module
is imported (in the setup cell, before any student code), so reassigning ``torch.allclose`` or
``torch.softmax`` later in a notebook does not change what the checks compute.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

_Tensor = torch.Tensor
_allclose = torch.allclose
_abs = torch.abs
_ones = torch.ones
_tril = torch.tril
_isfinite = torch.isfinite
_clone = torch.Tensor.clone
_detach = torch.Tensor.detach
_size = torch.Tensor.size
_sum = torch.Tensor.sum
_max = torch.Tensor.max
_all = torch.Tensor.all
_type = type
_isinstance = isinstance
_tuple = tuple
_float = float


def _fail(message: str) -> None:
    raise AssertionError(message)


def plain(value, what: str = "the result") -> torch.Tensor:
    """A detached copy of ``value`` as a plain ``torch.Tensor``; fails on anything else."""
    if _type(value) is not _Tensor and _type(value) is not torch.nn.Parameter:
        _fail(f"{what} must be a torch.Tensor, got {_type(value).__name__}")
    return _clone(_detach(value)).as_subclass(_Tensor)


def check_shape(value, expected: Sequence[int], what: str = "the result") -> torch.Tensor:
    """Fail unless ``value`` is a tensor of shape ``expected``; return it as a plain tensor."""
    t = plain(value, what)
    shape = _tuple(_size(t))
    if shape != _tuple(expected):
        _fail(f"{what} should have shape {_tuple(expected)}, got {shape}")
    return t


def check_close(
    actual, expected, what: str = "the result", atol: float = 1e-5, rtol: float = 1e-4
) -> None:
    """Fail unless ``actual`` has ``expected``'s shape and values (within tolerance)."""
    expected = plain(expected, "the expected value")
    a = check_shape(actual, _tuple(_size(expected)), what)
    if not _all(_isfinite(a)):
        _fail(f"{what} contains NaN or infinite values")
    if not _allclose(a.to(expected.dtype), expected, atol=atol, rtol=rtol):
        worst = _float(_max(_abs(a.to(expected.dtype) - expected)))
        _fail(f"{what} differs from the expected values (largest difference {worst:.3g})")


def check_distribution(weights, dim: int, what: str = "the attention weights") -> None:
    """Fail unless ``weights`` are non-negative and sum to 1 along ``dim``."""
    w = plain(weights, what)
    if not _all(w >= 0):
        _fail(f"{what} should be non-negative (a softmax output)")
    ones = _ones(_size(_sum(w, dim)), dtype=w.dtype)
    if not _allclose(_sum(w, dim), ones, atol=1e-5):
        _fail(f"{what} should sum to 1 over dimension {dim} (softmax over that axis)")


def check_causal(weights, what: str = "the causal attention weights") -> None:
    """Fail unless ``weights (N, S, k)`` (keys by queries) give zero weight to every key after
    its query (``weights[:, i, j] == 0`` for ``i > j``) and some weight to every key at or
    before it; the message says which way the mask is wrong."""
    w = plain(weights, what)
    rows, cols = w.shape[-2], w.shape[-1]
    future = _tril(_ones(rows, cols, dtype=torch.bool), diagonal=-1)  # (S, k): key i > query j
    diagonal = torch.eye(rows, cols, dtype=torch.bool)
    allowed = ~future
    if not _all(w[:, diagonal] > 0):
        _fail(
            f"{what} give zero weight to a query's own position (the diagonal, key j of query j): "
            "the mask hides too much; mask only the keys after the query, i > j "
            "(torch.tril(..., diagonal=-1) in the (N, S, k) layout)"
        )
    if not _all(w[:, allowed] > 0):
        _fail(f"{what} give zero weight to a key before its query: mask only the keys after it")
    if not _all(w[:, future] == 0):
        _fail(f"{what} let a position attend to later positions (keys after the query)")
