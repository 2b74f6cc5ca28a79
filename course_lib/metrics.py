"""Metrics for translation (exact match, character error rate, perplexity), for attention
(the entropy of its distributions) and for classification (per-class accuracy, confusion
matrix).

The multi-class Matthews correlation is not here on purpose: students write it in notebook 4
(``multiclass_mcc``), from the confusion matrix this module computes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _check_same_length(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise ValueError(f"predictions and targets differ in length: {len(a)} vs {len(b)}")
    if len(a) == 0:
        raise ValueError("expected at least one prediction")


def word_accuracy(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """Fraction of words translated exactly right."""
    _check_same_length(predictions, targets)
    return sum(p == t for p, t in zip(predictions, targets, strict=True)) / len(targets)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions turning ``a`` into ``b``."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def character_error_rate(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """Total edit distance divided by the total number of target characters."""
    _check_same_length(predictions, targets)
    total = sum(len(t) for t in targets)
    if total == 0:
        raise ValueError("targets hold no characters")
    return sum(edit_distance(p, t) for p, t in zip(predictions, targets, strict=True)) / total


def perplexity(mean_cross_entropy: float) -> float:
    """``exp`` of a mean per-token cross-entropy in nats (29 for a uniform guess over 29)."""
    return math.exp(mean_cross_entropy)


def attention_entropy(weights, axis: int = 0) -> float:
    """Mean entropy, in nats, of the attention distributions held in ``weights``.

    Each slice along ``axis`` is one distribution over the source positions: ``axis=0`` for
    one word's map ``(S, T)``, ``axis=1`` for a batch's ``(N, S, T)``. The mean is over every
    other index (the steps, and the words). 0 when every step puts all its weight on one
    position, ``ln S`` when every step spreads it evenly over S positions. ``weights``: a NumPy
    array or a tensor (detached, moved to the CPU here)."""
    if hasattr(weights, "detach"):
        weights = weights.detach().cpu().numpy()
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        raise ValueError("expected at least one attention distribution")
    safe = np.where(w > 0, w, 1.0)  # 0 log 0 = 0
    return float((-w * np.log(safe)).sum(axis=axis).mean())


def confusion_matrix(y_true: Sequence[int], y_pred: Sequence[int], num_classes: int) -> np.ndarray:
    """``(num_classes, num_classes)`` counts; row = true class, column = predicted class."""
    _check_same_length(y_true, y_pred)
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    for t, p in zip(y_true, y_pred, strict=True):
        if not (0 <= t < num_classes and 0 <= p < num_classes):
            raise ValueError(f"label out of range 0..{num_classes - 1}: true={t}, pred={p}")
        cm[t, p] += 1
    return cm


def per_class_accuracy(
    y_true: Sequence[int], y_pred: Sequence[int], num_classes: int
) -> list[float]:
    """Recall of each class (NaN for a class absent from ``y_true``)."""
    cm = confusion_matrix(y_true, y_pred, num_classes)
    support = cm.sum(axis=1)
    return [float(cm[k, k] / support[k]) if support[k] else float("nan") for k in range(len(cm))]
