"""Mini-batches of word pairs, in two modes.

``"bucket"`` (default, as in the original course): pairs are grouped by (source length, target
length), so every batch is rectangular and no padding is needed. Exact, but a batch can be small
(rare lengths), so an epoch has many batches.

``"padded"``: pairs are shuffled and cut into full batches; shorter sequences are padded with
``<EOS>`` and masks say which positions are real. Fewer, fuller batches (faster on a GPU). The
loss ignores padded target positions (``IGNORE_INDEX``), but the course's encoders do not take
a mask, so they read trailing ``<EOS>`` tokens on short source words. Use it for speed
experiments; the notebooks train in bucket mode.

Every batch follows teacher forcing: ``tgt_in`` is ``<SOS>`` + target, ``tgt_out`` is target +
``<EOS>``, so ``tgt_in[:, 1:] == tgt_out[:, :-1]``. Sources end with ``<EOS>``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from .vocab import EOS_ID, SOS_ID, encode

IGNORE_INDEX = -100  # target id that cross-entropy skips (padding)
MODES = ("bucket", "padded")


@dataclass
class Batch:
    """One mini-batch. N batch, S source length (with ``<EOS>``), T target length (+1 token).

    - ``src``: ``(N, S)`` source ids, ending in ``<EOS>``
    - ``tgt_in``: ``(N, T)`` decoder inputs, ``<SOS>`` + target
    - ``tgt_out``: ``(N, T)`` decoder targets, target + ``<EOS>`` (``IGNORE_INDEX`` where padded)
    - ``src_mask`` / ``tgt_mask``: ``(N, S)`` / ``(N, T)`` bool, True at real positions
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    src_mask: torch.Tensor
    tgt_mask: torch.Tensor
    sources: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)

    def to(self, device: torch.device | str) -> Batch:
        """This batch with every tensor moved to ``device``."""
        move = {k: v.to(device) for k, v in vars(self).items() if isinstance(v, torch.Tensor)}
        return Batch(**move, sources=self.sources, targets=self.targets)

    def __len__(self) -> int:
        return self.src.shape[0]


def _pad(rows: list[list[int]], value: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), value, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = True
    return ids, mask


def collate(pairs: Sequence[tuple[str, str]]) -> Batch:
    """Encode and pad ``pairs`` into one :class:`Batch` (no padding if lengths agree)."""
    if not pairs:
        raise ValueError("cannot make a batch of zero pairs")
    src_rows = [encode(s) for s, _ in pairs]
    tgt_rows = [encode(t) for _, t in pairs]
    src, src_mask = _pad(src_rows, EOS_ID)
    tgt_out, tgt_mask = _pad(tgt_rows, IGNORE_INDEX)
    tgt_in = torch.full_like(tgt_out, EOS_ID)
    tgt_in[:, 0] = SOS_ID
    tgt_in[:, 1:] = torch.where(tgt_mask[:, :-1], tgt_out[:, :-1], EOS_ID)
    return Batch(
        src=src,
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        src_mask=src_mask,
        tgt_mask=tgt_mask,
        sources=[s for s, _ in pairs],
        targets=[t for _, t in pairs],
    )


def make_batches(
    pairs: Sequence[tuple[str, str]],
    batch_size: int = 64,
    mode: str = "bucket",
    shuffle: bool = True,
    seed: int = 0,
) -> list[Batch]:
    """Cut ``pairs`` into batches of at most ``batch_size`` (see the module doc for ``mode``).

    Deterministic for a seed. :func:`course_lib.train.fit` reshuffles the batch order each epoch.
    """
    if mode not in MODES:
        raise ValueError(f"unknown batching mode {mode!r}; choose one of {MODES}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    pairs = list(pairs)
    if shuffle:
        random.Random(seed).shuffle(pairs)
    if mode == "padded":
        groups = [pairs]
    else:
        by_length: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
        for s, t in pairs:
            by_length[(len(s), len(t))].append((s, t))
        groups = [by_length[k] for k in sorted(by_length)]
    return [collate(g[i : i + batch_size]) for g in groups for i in range(0, len(g), batch_size)]
