"""Long inputs for Part 6b: chains of Part 4's verbal arithmetic, a few hundred words long.

A *chain* is ``A op B op C ...``: number words from ``zero`` to ``nineteen`` joined by ``plus``
or ``minus`` (:mod:`course_lib.arithmetic`'s words), evaluated left to right, e.g.
``"four minus ten plus three"`` (value -3). Its label is ``1`` when the value is positive,
else ``0``; with random terms the two classes are about equally frequent. To get the label
right a model must combine every term with the operator just before it, anywhere in the chain.

Each word is one token (:data:`VOCAB`, padding :data:`PAD` = 0). A batch lays a chain of up to
``S * M`` words out as S segments of M tokens (B batch)::

    {"ids": (B, S, M) long, "mask": (B, S, M) bool (True: a real token), "labels": (B,) long}

the chain filling the segments in order and padding the rest (so the last segments of a short
chain hold padding only). :func:`chain_loss` is the loss function for
:func:`course_lib.train.fit` of any model called as ``model(ids, mask) -> logits (B, 2)``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .arithmetic import NUMBER_WORDS, OPERATORS

PAD_WORD = "<pad>"
VOCAB: tuple[str, ...] = (PAD_WORD, *OPERATORS, *NUMBER_WORDS)  # 23 tokens
PAD = 0
WORD_TO_ID = {word: i for i, word in enumerate(VOCAB)}
_VALUE = {word: value for value, word in enumerate(NUMBER_WORDS)}


@dataclass(frozen=True)
class Chain:
    """One chain of terms: its words, its value and its label (1: the value is positive)."""

    words: tuple[str, ...]
    value: int
    label: int


def chain_value(words: Sequence[str]) -> int:
    """The value of a chain, left to right: ``chain_value("four minus ten plus three".split())``
    is -3. Raises ``ValueError`` unless the words alternate number, operator, ..., number."""
    if len(words) % 2 == 0:
        raise ValueError(f"a chain has an odd number of words (number op ...), got {len(words)}")
    total = 0
    for i, word in enumerate(words):
        if i % 2 == 0:
            if word not in _VALUE:
                raise ValueError(f"word {i} should be a number word (zero..nineteen), got {word!r}")
            sign = 1 if i == 0 or words[i - 1] == "plus" else -1
            total += sign * _VALUE[word]
        elif word not in OPERATORS:
            raise ValueError(f"word {i} should be an operator {OPERATORS}, got {word!r}")
    return total


def random_chain(rng: random.Random, num_terms: int) -> Chain:
    """A chain of ``num_terms`` uniform random number words joined by random operators
    (``2 * num_terms - 1`` words)."""
    if num_terms < 1:
        raise ValueError(f"a chain has at least one term, got {num_terms}")
    words = [rng.choice(NUMBER_WORDS)]
    for _ in range(num_terms - 1):
        words += [rng.choice(OPERATORS), rng.choice(NUMBER_WORDS)]
    value = chain_value(words)
    return Chain(tuple(words), value, int(value > 0))


def make_chains(count: int, min_terms: int, max_terms: int, seed: int = 0) -> list[Chain]:
    """``count`` random chains of ``min_terms`` to ``max_terms`` terms (uniform), the same for
    the same arguments."""
    if not 1 <= min_terms <= max_terms:
        raise ValueError(f"need 1 <= min_terms <= max_terms, got {min_terms} and {max_terms}")
    rng = random.Random(seed)
    return [random_chain(rng, rng.randint(min_terms, max_terms)) for _ in range(count)]


def encode(words: Iterable[str]) -> list[int]:
    """The token ids of ``words`` (:data:`VOCAB`)."""
    return [WORD_TO_ID[word] for word in words]


def to_segments(
    chains: Sequence[Chain], segments: int, segment_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``chains`` laid out as ``segments`` segments of ``segment_len`` tokens each:
    ``ids (B, S, M)`` long (:data:`PAD` after the chain) and ``mask (B, S, M)`` bool (True on
    the chain's tokens). Raises ``ValueError`` when a chain is longer than ``S * M`` words."""
    n = segments * segment_len
    ids = torch.full((len(chains), n), PAD, dtype=torch.long)
    for b, chain in enumerate(chains):
        if len(chain.words) > n:
            raise ValueError(f"a chain of {len(chain.words)} words does not fit in {n} tokens")
        ids[b, : len(chain.words)] = torch.tensor(encode(chain.words))
    ids = ids.reshape(len(chains), segments, segment_len)  # (B, S, M)
    return ids, ids != PAD


def make_batches(
    chains: Sequence[Chain], segments: int, segment_len: int, batch_size: int = 32
) -> list[dict[str, torch.Tensor]]:
    """``chains`` in batches of ``batch_size``, in order: dicts ``ids (B, S, M)``,
    ``mask (B, S, M)``, ``labels (B,)`` (see :func:`to_segments`)."""
    batches = []
    for start in range(0, len(chains), batch_size):
        chunk = chains[start : start + batch_size]
        ids, mask = to_segments(chunk, segments, segment_len)
        labels = torch.tensor([chain.label for chain in chunk], dtype=torch.long)
        batches.append({"ids": ids, "mask": mask, "labels": labels})
    return batches


def chain_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Loss function for :func:`course_lib.train.fit`: the cross-entropy of
    ``model(ids, mask)``'s logits ``(B, 2)`` against the labels, and ``B``."""
    logits = model(batch["ids"], batch["mask"])  # (B, 2)
    return F.cross_entropy(logits, batch["labels"]), len(batch["labels"])


def accuracy(model: nn.Module, batches: Iterable[dict[str, torch.Tensor]]) -> float:
    """The share of chains whose label ``model(ids, mask).argmax(-1)`` gets right (eval mode,
    on the model's device)."""
    device = next(model.parameters()).device
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in batches:
            logits = model(batch["ids"].to(device), batch["mask"].to(device))  # (B, 2)
            right += int((logits.argmax(-1).cpu() == batch["labels"]).sum())
            total += len(batch["labels"])
    if total == 0:
        raise ValueError("no chains to score")
    return right / total
