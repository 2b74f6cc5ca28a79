"""Plots: loss curves, attention heatmaps, confusion matrices (matplotlib), and
:class:`AttentionSnapshots`, a training callback that records how attention changes while a
model trains.

Every function draws on ``ax`` when given (so plots can share a figure) and returns the axes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

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


class AttentionSnapshots:
    """An ``on_epoch_end`` callback for :func:`course_lib.train.fit` that records attention as
    the model trains (its decoder must return attention ``(N, S, T)``).

    - ``maps[e]``: the greedy translation of ``word`` after epoch ``e`` (a
      :class:`~course_lib.decode.Translation`, whose ``attention`` is ``(S, T)``), for each
      ``e`` in ``epochs``; epoch 0 is before training, recorded when the object is made;
    - ``entropy[e]``: after every epoch (index 0: before training), the mean entropy in nats
      (:func:`course_lib.metrics.attention_entropy`) of the teacher-forced attention of every
      target step of ``batches`` (padded steps left out). It falls as attention sharpens.

    ``also``: another ``on_epoch_end`` callback, called after this one (e.g.
    :func:`course_lib.decode.sentence_logger`).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        word: str,
        batches: Iterable,
        epochs: Sequence[int] = (0, 1, 2, 6, 10),
        also: Callable | None = None,
    ):
        self.model, self.word, self.batches = model, word, list(batches)
        self.epochs, self.also = tuple(epochs), also
        self.maps: dict = {}
        self.entropy: list[float] = []
        self._record(0)

    def __call__(self, epoch: int, history) -> None:
        self._record(epoch + 1)  # fit passes the 0-based index: epochs are counted from 1
        if self.also is not None:
            self.also(epoch, history)

    def _record(self, number: int) -> None:
        from .decode import translate_words
        from .metrics import attention_entropy

        if number in self.epochs:
            self.maps[number] = translate_words(self.model, [self.word])[0]
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        total, count = 0.0, 0  # entropy summed over the real target steps, and their number
        with torch.no_grad():
            for batch in self.batches:
                batch = batch.to(device)
                _, weights = self.model(batch.src, batch.tgt_in)  # (N, S, T)
                if isinstance(weights, (list, tuple)):  # one map per layer: the last one
                    weights = weights[-1]
                if weights is None:
                    raise ValueError("AttentionSnapshots: the decoder returns no attention")
                steps = weights.transpose(1, 2)[batch.tgt_mask].cpu()  # (real steps, S)
                total += attention_entropy(steps, axis=1) * len(steps)
                count += len(steps)
        self.model.train(was_training)
        self.entropy.append(total / count)

    def plot_maps(self, ncols: int | None = None):
        """One heatmap of ``word``'s attention per recorded epoch, in order."""
        if not self.maps:
            raise ValueError("no attention map recorded yet")
        epochs = sorted(self.maps)
        ncols = ncols or len(epochs)
        nrows = -(-len(epochs) // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.8 * nrows), squeeze=False)
        for ax, epoch in zip(axes.flat, epochs, strict=False):
            t = self.maps[epoch]
            title = f"epoch {epoch}: {t.output[:14]}" + ("..." if len(t.output) > 14 else "")
            plot_attention(t.attention, t.source_tokens, t.output_tokens, ax=ax, title=title)
        for ax in axes.flat[len(epochs) :]:
            ax.axis("off")
        fig.tight_layout()
        return fig

    def plot_entropy(self, ax=None, label: str | None = None):
        """The mean attention entropy per epoch (0: before training)."""
        ax = _axes(ax)
        ax.plot(range(len(self.entropy)), self.entropy, marker="o", label=label)
        ax.set(xlabel="epoch (0: before training)", ylabel="mean attention entropy (nats)")
        if label:
            ax.legend()
        return ax
