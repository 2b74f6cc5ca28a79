"""Greedy decoding: translate words and sentences with a trained seq2seq model.

Words are grouped by length and decoded a batch at a time (one word at a time is 20-40x
slower). The decoder is re-run on the whole prefix at every step, which works for every decoder
of the course (RNN, attention, transformer) through the interface of :mod:`course_lib.train`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .train import History
from .vocab import EOS_ID, SOS_ID, TOKENS, decode, encode_batch


@dataclass
class Translation:
    """A translated word. ``attention`` is ``(S, T)``: source positions (the letters and
    ``<EOS>``) by output steps (the letters and ``<EOS>`` if produced), or None."""

    source: str
    output: str
    attention: torch.Tensor | None = None

    @property
    def source_tokens(self) -> list[str]:
        """Row labels for an attention plot."""
        return [*self.source, TOKENS[EOS_ID]]

    @property
    def output_tokens(self) -> list[str]:
        """Column labels for an attention plot."""
        steps = self.attention.shape[1] if self.attention is not None else len(self.output) + 1
        return [*self.output, TOKENS[EOS_ID]][:steps]


def _last_map(attention) -> torch.Tensor | None:
    """The decoder's attention as ``(N, S, T)``: multi-layer decoders may return one map per
    layer (a list or tuple); the last layer's is used."""
    if isinstance(attention, (list, tuple)):
        attention = attention[-1] if attention else None
    return attention


@torch.no_grad()
def greedy_decode(
    model: nn.Module, src: torch.Tensor, max_len: int
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Greedy output ids ``(N, T)`` (T <= max_len) and attention ``(N, S, T)`` or None.

    ``model`` has ``.encoder`` and ``.decoder`` (a :class:`~course_lib.train.Seq2Seq`);
    ``src`` is ``(N, S)`` source ids ending in ``<EOS>``. Stops when every row has ``<EOS>``.
    """
    annotations, hidden = model.encoder(src)  # (N, S, H), (N, H)
    tgt = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    attention = None
    for _ in range(max_len):
        logits, attention = model.decoder(tgt, annotations, hidden)  # (N, t, V)
        next_ids = logits[:, -1].argmax(dim=-1)  # (N,)
        tgt = torch.cat([tgt, next_ids[:, None]], dim=1)  # (N, t + 1)
        finished |= next_ids == EOS_ID
        if bool(finished.all()):
            break
    return tgt[:, 1:], _last_map(attention)


def translate_words(
    model: nn.Module, words: Sequence[str], batch_size: int = 512
) -> list[Translation]:
    """Translate ``words`` (in order), batching words of equal length together."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, w in enumerate(words):
        by_length[len(w)].append(i)
    results: list[Translation | None] = [None] * len(words)
    try:
        for length, idx in by_length.items():
            for start in range(0, len(idx), batch_size):
                chunk = idx[start : start + batch_size]
                src = encode_batch([words[i] for i in chunk]).to(device)  # (n, S)
                ids, attention = greedy_decode(model, src, max_len=2 * length + 6)
                for row, i in enumerate(chunk):
                    out = decode(ids[row])
                    att = None
                    if attention is not None:
                        steps = min(len(out) + 1, attention.shape[2])
                        att = attention[row, :, :steps].detach().cpu()  # (S, steps)
                    results[i] = Translation(words[i], out, att)
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]


def translate_word(model: nn.Module, word: str) -> str:
    """Pig-Latin of one word according to ``model``."""
    return translate_words(model, [word])[0].output


def translate_sentence(model: nn.Module, sentence: str) -> str:
    """Translate each word of ``sentence`` (lowercase, spaces between words)."""
    words = sentence.lower().split()
    if not words:
        raise ValueError("expected a sentence with at least one word")
    return " ".join(t.output for t in translate_words(model, words))


def sentence_logger(
    model: nn.Module, sentence: str, every: int = 10
) -> Callable[[int, History], None]:
    """An ``on_epoch_end`` callback for :func:`~course_lib.train.fit` that prints the losses
    and the translation of ``sentence`` after epochs ``every``, ``2 * every``, ... (epochs are
    counted from 1, as the progress bar and the loss plots count them)."""

    def log(epoch: int, history: History) -> None:
        number = epoch + 1  # fit passes the 0-based index
        if number % every == 0:
            print(
                f"epoch {number:3d} | train {history.train_loss[-1]:.3f} | "
                f"val {history.val_loss[-1]:.3f} | {translate_sentence(model, sentence)}"
            )

    return log


@dataclass
class TranslationScores:
    """Greedy translation quality on word pairs."""

    exact_match: float  # fraction of words translated exactly right
    char_error_rate: float  # edit distance per target character
    examples: list[Translation]

    def errors(self, targets: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(source, output, target)`` for every word translated wrongly."""
        return [
            (t.source, t.output, target)
            for t, target in zip(self.examples, targets, strict=True)
            if t.output != target
        ]


def evaluate_translation(model: nn.Module, pairs: Sequence[tuple[str, str]]) -> TranslationScores:
    """Translate the sources of ``pairs`` greedily and score them against the targets."""
    from .metrics import character_error_rate, word_accuracy

    examples = translate_words(model, [s for s, _ in pairs])
    outputs, targets = [t.output for t in examples], [t for _, t in pairs]
    return TranslationScores(
        word_accuracy(outputs, targets), character_error_rate(outputs, targets), examples
    )
