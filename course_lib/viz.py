"""Plots: loss curves, attention heatmaps, confusion matrices (matplotlib). What records
attention while a model trains is a training callback: :mod:`course_lib.callbacks`.

Every function draws on ``ax`` when given (so plots can share a figure) and returns the axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch


def _axes(ax, figsize=(6, 4)):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_losses(history, ax=None, title: str = "Loss"):
    """Train and validation loss per epoch. ``history``: a ``History`` or a mapping with
    ``train_loss`` and ``val_loss`` lists; the best epoch is marked when known."""
    get = history.get if isinstance(history, Mapping) else lambda k, d=None: getattr(history, k, d)
    ax = _axes(ax)
    epochs = np.arange(1, len(get("train_loss")) + 1)
    ax.plot(epochs, get("train_loss"), label="train")
    if get("val_loss"):
        ax.plot(epochs, get("val_loss"), label="validation")
    best = get("best_epoch", -1)
    if best is not None and best >= 0:
        ax.axvline(best + 1, color="grey", linestyle=":", label=f"best (epoch {best + 1})")
    ax.set(xlabel="epoch", ylabel="cross-entropy", title=title)
    ax.legend()
    return ax


def plot_attention(
    weights: torch.Tensor | np.ndarray,
    source_tokens: Sequence[str],
    output_tokens: Sequence[str],
    ax=None,
    title: str | None = None,
):
    """Heatmap of attention ``weights (S, T)``: source tokens down, output tokens across."""
    weights = np.asarray(weights.detach().cpu() if isinstance(weights, torch.Tensor) else weights)
    if weights.shape != (len(source_tokens), len(output_tokens)):
        raise ValueError(
            f"weights have shape {weights.shape}, expected "
            f"(len(source_tokens), len(output_tokens)) = {(len(source_tokens), len(output_tokens))}"
        )
    ax = _axes(ax, figsize=(0.4 * len(output_tokens) + 2, 0.4 * len(source_tokens) + 1.5))
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(output_tokens)), output_tokens, rotation=90)
    ax.set_yticks(range(len(source_tokens)), source_tokens)
    ax.set(xlabel="output", ylabel="source")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    return ax


def plot_translation_attention(translations, ncols: int = 3):
    """One attention heatmap per :class:`~course_lib.decode.Translation` (with attention)."""
    translations = [t for t in translations if t.attention is not None]
    if not translations:
        raise ValueError("none of the translations carries attention weights")
    nrows = -(-len(translations) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.5 * ncols, 4 * nrows), squeeze=False)
    for ax, t in zip(axes.flat, translations, strict=False):
        plot_attention(t.attention, t.source_tokens, t.output_tokens, ax=ax, title=t.output)
    for ax in axes.flat[len(translations) :]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def plot_confusion_matrix(cm: np.ndarray, class_names: Sequence[str], ax=None, title=None):
    """Confusion matrix ``(K, K)`` (rows true, columns predicted) with counts written in."""
    cm = np.asarray(cm)
    if cm.shape != (len(class_names), len(class_names)):
        raise ValueError(f"matrix of shape {cm.shape} does not match {len(class_names)} classes")
    ax = _axes(ax, figsize=(4.5, 4))
    ax.imshow(cm, cmap="Blues")
    for (i, j), n in np.ndenumerate(cm):
        color = "white" if n > cm.max() / 2 else "black"
        ax.text(j, i, str(n), ha="center", va="center", color=color)
    ax.set_xticks(range(len(class_names)), class_names)
    ax.set_yticks(range(len(class_names)), class_names)
    ax.set(xlabel="predicted", ylabel="true", title=title or "Confusion matrix")
    return ax
