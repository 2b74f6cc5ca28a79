"""The character vocabulary shared by English and Pig-Latin: 29 tokens.

Indices: ``-`` is 0, ``a``..``z`` are 1..26, ``<SOS>`` is 27 and ``<EOS>`` is 28 (the order of
the original course). There is no padding token: padded batches pad with ``<EOS>`` and mask.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence

import torch

SOS = "<SOS>"
EOS = "<EOS>"
CHARS = ["-", *string.ascii_lowercase]
TOKENS = [*CHARS, SOS, EOS]
CHAR_TO_INDEX = {t: i for i, t in enumerate(TOKENS)}
SOS_ID = CHAR_TO_INDEX[SOS]
EOS_ID = CHAR_TO_INDEX[EOS]
VOCAB_SIZE = len(TOKENS)  # 29


def encode(word: str, sos: bool = False, eos: bool = True) -> list[int]:
    """Token ids of ``word``, optionally framed by ``<SOS>`` and ``<EOS>``.

    Raises ``ValueError`` naming any character outside the vocabulary.
    """
    bad = sorted({c for c in word if c not in CHAR_TO_INDEX or len(c) != 1})
    if bad or not word:
        why = f"characters {bad} are not in the vocabulary (a-z and '-')" if bad else "empty word"
        raise ValueError(f"cannot encode {word!r}: {why}")
    ids = [CHAR_TO_INDEX[c] for c in word]
    return ([SOS_ID] if sos else []) + ids + ([EOS_ID] if eos else [])


def decode(ids: Iterable[int] | torch.Tensor) -> str:
    """The word spelled by ``ids``: stops at the first ``<EOS>``, skips ``<SOS>``."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < VOCAB_SIZE:
            raise ValueError(f"token id {i} is outside the vocabulary (0..{VOCAB_SIZE - 1})")
        if i == EOS_ID:
            break
        if i != SOS_ID:
            out.append(TOKENS[i])
    return "".join(out)


def encode_batch(words: Sequence[str]) -> torch.Tensor:
    """Encode words of equal length (each followed by ``<EOS>``): ``(batch, len + 1)`` long."""
    lengths = {len(w) for w in words}
    if len(lengths) != 1:
        raise ValueError(f"encode_batch needs words of one length, got lengths {sorted(lengths)}")
    return torch.tensor([encode(w) for w in words], dtype=torch.long)
