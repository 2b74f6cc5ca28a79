"""The verbal arithmetic dataset: is ``"four minus ten"`` negative, zero or positive?

Every expression is three words, ``A op B``, with ``A`` and ``B`` number words from ``zero`` to
``nineteen`` and ``op`` one of ``plus`` / ``minus``: 2 x 20 x 20 = 800 expressions. The label
is the sign of the value (``0`` negative, ``1`` zero, ``2`` positive). The classes are very
unbalanced: 190 negative, 21 zero (``zero plus zero`` and the 20 ``A minus A``), 589 positive.
What to do about that imbalance is one of the directions of notebook 4's open question, so no
ready-made answer (oversampling, class weights) lives here.

For BERT, :func:`tokenize` turns examples into padded tensors and :func:`make_loader` into a
``DataLoader`` of dicts (N batch, L sequence length, ``max_length``)::

    {"input_ids": (N, L), "attention_mask": (N, L), "labels": (N,)}
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader, Dataset

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

NUMBER_WORDS: tuple[str, ...] = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)  # fmt: skip
OPERATORS: tuple[str, ...] = ("plus", "minus")
LABELS: tuple[str, ...] = ("negative", "zero", "positive")

_VALUE = {word: value for value, word in enumerate(NUMBER_WORDS)}


@dataclass(frozen=True)
class Example:
    """One expression and its label (an index into :data:`LABELS`)."""

    text: str
    label: int


def value_of(text: str) -> int:
    """The value of an expression: ``value_of("four minus ten") == -6``.

    Raises ``ValueError`` unless ``text`` is exactly three words ``A op B`` with ``A`` and ``B``
    in :data:`NUMBER_WORDS` and ``op`` in :data:`OPERATORS` (lowercase).
    """
    words = text.split()
    if len(words) != 3:
        raise ValueError(
            f"expected three words 'A plus B' or 'A minus B', got {len(words)} in {text!r}"
        )
    a, op, b = words
    for word in (a, b):
        if word not in _VALUE:
            raise ValueError(
                f"unknown number word {word!r} in {text!r}; expected one of zero..nineteen"
            )
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r} in {text!r}; expected one of {OPERATORS}")
    return _VALUE[a] + _VALUE[b] if op == "plus" else _VALUE[a] - _VALUE[b]


def label_of(value: int) -> int:
    """The class of a value: ``0`` negative, ``1`` zero, ``2`` positive (see :data:`LABELS`)."""
    return 0 if value < 0 else 1 if value == 0 else 2


def all_examples() -> list[Example]:
    """All 800 expressions, in a fixed order: operator (plus, minus), then ``A``, then ``B``.

    So ``all_examples()[0]`` is ``zero plus zero`` and ``all_examples()[401]`` is
    ``zero minus one``.
    """
    return [
        Example(text, label_of(value_of(text)))
        for op in OPERATORS
        for a in NUMBER_WORDS
        for b in NUMBER_WORDS
        for text in [f"{a} {op} {b}"]
    ]


def train_test_split(seed: int = 0, n_train: int = 640) -> tuple[list[Example], list[Example]]:
    """Shuffle :func:`all_examples` with ``random.Random(seed)``; first ``n_train`` are train.

    The same seed always gives the same split; the default is 640 train and 160 test.
    """
    examples = all_examples()
    if not 0 < n_train < len(examples):
        raise ValueError(f"n_train must be between 1 and {len(examples) - 1}, got {n_train}")
    random.Random(seed).shuffle(examples)
    return examples[:n_train], examples[n_train:]


def tokenize(
    examples: list[Example], tokenizer: PreTrainedTokenizerBase, max_length: int = 8
) -> dict[str, torch.Tensor]:
    """Tokenise ``examples`` (N of them) with a Hugging Face ``tokenizer``.

    Returns ``input_ids (N, L)``, ``attention_mask (N, L)`` and ``labels (N,)``, all long, with
    ``L = max_length``: ``[CLS] a op b [SEP]`` then padding (longer inputs are truncated).
    """
    if not examples:
        raise ValueError("expected at least one example to tokenise")
    encoded = tokenizer(
        [ex.text for ex in examples],
        padding="max_length",
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )
    return {
        "input_ids": encoded["input_ids"].long(),  # (N, L)
        "attention_mask": encoded["attention_mask"].long(),  # (N, L)
        "labels": torch.tensor([ex.label for ex in examples], dtype=torch.long),  # (N,)
    }


class _TensorDictDataset(Dataset):
    """Row ``i`` of every tensor in a dict; the default collate stacks rows back into a dict."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        self.tensors = tensors

    def __len__(self) -> int:
        return len(next(iter(self.tensors.values())))

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {key: value[i] for key, value in self.tensors.items()}


def make_loader(
    examples: list[Example],
    tokenizer: PreTrainedTokenizerBase,
    batch_size: int = 32,
    shuffle: bool = True,
    seed: int = 0,
    max_length: int = 8,
) -> DataLoader:
    """A ``DataLoader`` over the tokenised ``examples`` (:func:`tokenize`), for ``fit``.

    Each batch is a dict ``input_ids (N, L)``, ``attention_mask (N, L)``, ``labels (N,)``.
    Shuffling uses a ``torch.Generator`` seeded with ``seed``, so the order of batches repeats
    from run to run (and changes from epoch to epoch).
    """
    generator = torch.Generator().manual_seed(seed)
    dataset = _TensorDictDataset(tokenize(examples, tokenizer, max_length))
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)
