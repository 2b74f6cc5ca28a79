"""Training callbacks: what :func:`course_lib.train.fit` calls after every epoch
(``on_epoch_end(epoch, history)``) to follow a model while it trains.

- :class:`AttentionSnapshots` records how a seq2seq model's attention changes as it trains
  (Part 5): the attention map of one word's translation at chosen epochs, and the mean
  attention entropy after every epoch; it plots both.

(:func:`course_lib.decode.sentence_logger`, which prints a sample translation, is one too.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
import torch

from .decode import translate_words
from .metrics import attention_entropy
from .viz import plot_attention


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
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        ax.plot(range(len(self.entropy)), self.entropy, marker="o", label=label)
        ax.set(xlabel="epoch (0: before training)", ylabel="mean attention entropy (nats)")
        if label:
            ax.legend()
        return ax
