"""Tests of the long-input dataset of Part 6b (course_lib.longtext)."""

from __future__ import annotations

import random

import pytest
import torch
from torch import nn

from course_lib import longtext

# Written out independently of the module under test.
VALUES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip


def test_chain_value_reads_left_to_right():
    assert longtext.chain_value("four minus ten plus three".split()) == -3
    assert longtext.chain_value(["nineteen"]) == 19
    assert longtext.chain_value("zero minus one minus two".split()) == -3


@pytest.mark.parametrize(
    "words",
    [[], ["four", "minus"], ["four", "times", "two"], ["plus", "four", "two"], ["twenty"]],
)
def test_chain_value_refuses_what_is_not_a_chain(words):
    with pytest.raises(ValueError):
        longtext.chain_value(words)


def test_random_chains_are_well_formed_and_labelled():
    chains = longtext.make_chains(300, 3, 40, seed=5)
    assert {len(c.words) for c in chains} <= set(range(5, 80, 2))
    for chain in chains:
        total, sign = 0, 1
        for i, word in enumerate(chain.words):
            if i % 2:
                sign = 1 if word == "plus" else -1
            else:
                total += sign * VALUES[word]
        assert chain.value == total
        assert chain.label == int(total > 0)
    positive = sum(c.label for c in chains) / len(chains)
    assert 0.35 < positive < 0.65  # the two classes about as frequent


def test_make_chains_is_deterministic_and_checks_its_arguments():
    assert longtext.make_chains(20, 2, 9, seed=3) == longtext.make_chains(20, 2, 9, seed=3)
    assert longtext.make_chains(20, 2, 9, seed=3) != longtext.make_chains(20, 2, 9, seed=4)
    for low, high in [(0, 3), (5, 4)]:
        with pytest.raises(ValueError):
            longtext.make_chains(3, low, high)
    with pytest.raises(ValueError):
        longtext.random_chain(random.Random(0), 0)


def test_vocabulary_has_padding_first_and_every_word_once():
    assert longtext.VOCAB[longtext.PAD] == "<pad>" and longtext.PAD == 0
    assert len(set(longtext.VOCAB)) == len(longtext.VOCAB) == 23
    assert longtext.encode(["plus", "zero"]) == [1, 3]


def test_to_segments_fills_segments_in_order_and_pads_the_rest():
    chain = longtext.Chain(("one", "plus", "two", "minus", "three"), 0, 0)
    ids, mask = longtext.to_segments([chain], segments=3, segment_len=2)
    assert ids.shape == mask.shape == (1, 3, 2) and ids.dtype == torch.long
    assert ids.tolist() == [[longtext.encode(["one", "plus"]), longtext.encode(["two", "minus"]),
                             [longtext.WORD_TO_ID["three"], 0]]]  # fmt: skip
    assert mask.tolist() == [[[True, True], [True, True], [True, False]]]
    with pytest.raises(ValueError):
        longtext.to_segments([chain], segments=2, segment_len=2)


def test_make_batches_splits_in_order_with_labels():
    chains = longtext.make_chains(10, 1, 4, seed=0)
    batches = longtext.make_batches(chains, 2, 4, batch_size=4)
    assert [len(b["labels"]) for b in batches] == [4, 4, 2]
    assert batches[0]["ids"].shape == (4, 2, 4) and batches[0]["mask"].dtype == torch.bool
    assert torch.cat([b["labels"] for b in batches]).tolist() == [c.label for c in chains]


class _Oracle(nn.Module):
    """Reads the value off the ids: logits that always pick the right label."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(1.0))

    def forward(self, ids, mask):
        values, sign, total = torch.zeros(len(ids)), torch.ones(len(ids)), torch.zeros(len(ids))
        flat = ids.reshape(len(ids), -1)
        for i in range(flat.shape[1]):
            word = flat[:, i]
            values = word - 3  # number words start at id 3
            is_op = (word == 1) | (word == 2)
            sign = torch.where(word == 1, 1.0, torch.where(word == 2, -1.0, sign))
            total = total + torch.where((word >= 3), sign * values, 0.0) * ~is_op
        positive = (total > 0).float()
        return self.scale * torch.stack([1 - positive, positive], dim=1) * 10


def test_chain_loss_and_accuracy():
    chains = longtext.make_chains(40, 2, 6, seed=1)
    batches = longtext.make_batches(chains, 3, 4, batch_size=16)
    oracle = _Oracle()
    assert longtext.accuracy(oracle, batches) == 1.0
    loss, n = longtext.chain_loss(oracle, batches[0])
    assert n == 16 and float(loss.detach()) < 1e-3
    with pytest.raises(ValueError):
        longtext.accuracy(oracle, [])
