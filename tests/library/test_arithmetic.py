"""Tests of the verbal arithmetic dataset (course_lib.arithmetic)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from course_lib.arithmetic import (
    LABELS,
    NUMBER_WORDS,
    OPERATORS,
    Example,
    all_examples,
    label_of,
    make_loader,
    tokenize,
    train_test_split,
    value_of,
)
from course_lib.bert import load_tokenizer

# Written out independently of the module under test.
VALUES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip


def expected_label(text: str) -> int:
    a, op, b = text.split()
    value = VALUES[a] + VALUES[b] if op == "plus" else VALUES[a] - VALUES[b]
    return LABELS.index("negative" if value < 0 else "zero" if value == 0 else "positive")


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_vocabulary():
    """Twenty number words in numeric order, two operators, three labels."""
    assert list(NUMBER_WORDS) == list(VALUES)
    assert OPERATORS == ("plus", "minus")
    assert LABELS == ("negative", "zero", "positive")


def test_value_of_examples():
    """value_of computes plus and minus, including negative results."""
    assert value_of("four minus ten") == -6
    assert value_of("nineteen plus nineteen") == 38
    assert value_of("seven minus seven") == 0
    assert value_of("  zero   plus one ") == 1  # any whitespace between words


def test_label_of():
    """label_of maps negative, zero and positive values to 0, 1, 2."""
    assert [label_of(v) for v in (-19, -1, 0, 1, 38)] == [0, 0, 1, 2, 2]


def test_all_800_labels_are_correct():
    """Every expression appears once, with the label recomputed from an independent table."""
    examples = all_examples()
    assert len(examples) == 800
    assert len({ex.text for ex in examples}) == 800
    expected = {f"{a} {op} {b}" for a in VALUES for op in ("plus", "minus") for b in VALUES}
    assert {ex.text for ex in examples} == expected
    wrong = [ex for ex in examples if ex.label != expected_label(ex.text)]
    assert wrong == []


def test_all_examples_order_is_fixed():
    """Order: operator, then first number, then second number."""
    examples = all_examples()
    assert examples[0] == Example("zero plus zero", 1)
    assert examples[1].text == "zero plus one"
    assert examples[20].text == "one plus zero"
    assert examples[401].text == "zero minus one"
    assert examples[-1].text == "nineteen minus nineteen"
    assert all_examples() == examples


def test_class_counts_zero_is_rare():
    """Class counts match a count by brute force; zero is by far the rarest class."""
    counts = Counter(ex.label for ex in all_examples())
    n_zero = sum(
        (VALUES[a] + VALUES[b] if op == "plus" else VALUES[a] - VALUES[b]) == 0
        for a in VALUES
        for op in ("plus", "minus")
        for b in VALUES
    )
    n_negative = sum(VALUES[a] < VALUES[b] for a in VALUES for b in VALUES)  # only minus
    assert n_zero == 1 + 20  # zero plus zero, and A minus A
    assert counts[1] == n_zero
    assert counts[0] == n_negative == 190
    assert counts[2] == 800 - n_zero - n_negative == 589
    assert counts[1] < counts[0] < counts[2]


@pytest.mark.parametrize(
    "text, message",
    [
        ("four minus eleventy", "eleventy"),
        ("twenty plus one", "twenty"),
        ("four times ten", "times"),
        ("four minus", "three words"),
        ("four minus ten plus one", "three words"),
        ("", "three words"),
    ],
)
def test_value_of_rejects_bad_expressions(text, message):
    """Unknown number words, unknown operators and wrong word counts raise ValueError."""
    with pytest.raises(ValueError, match=message):
        value_of(text)


def test_split_sizes_and_disjoint():
    """The default split is 640 train / 160 test, disjoint, covering all 800."""
    train, test = train_test_split()
    assert (len(train), len(test)) == (640, 160)
    train_texts, test_texts = {ex.text for ex in train}, {ex.text for ex in test}
    assert not train_texts & test_texts
    assert train_texts | test_texts == {ex.text for ex in all_examples()}


def test_split_deterministic_for_a_seed():
    """The same seed gives the same split; another seed gives another one."""
    assert train_test_split(seed=3) == train_test_split(seed=3)
    assert train_test_split(seed=3)[1] != train_test_split(seed=4)[1]
    train, test = train_test_split(seed=1, n_train=700)
    assert (len(train), len(test)) == (700, 100)


def test_split_rejects_bad_sizes():
    """n_train must leave both parts non-empty."""
    with pytest.raises(ValueError, match="n_train"):
        train_test_split(n_train=800)


def test_no_ready_made_answer_to_the_imbalance():
    """The open question of notebook 4 asks students to handle the rare class themselves."""
    from course_lib import arithmetic

    assert not hasattr(arithmetic, "augment_zero")
    assert not hasattr(arithmetic, "class_weights")


def test_tokenize_shapes_and_mask(tokenizer):
    """tokenize gives (N, L) ids and mask, (N,) labels; mask is 1 on [CLS] a op b [SEP]."""
    examples = [Example("four minus ten", 0), Example("zero plus zero", 1)]
    out = tokenize(examples, tokenizer, max_length=7)
    assert set(out) == {"input_ids", "attention_mask", "labels"}
    assert out["input_ids"].shape == (2, 7)
    assert out["attention_mask"].shape == (2, 7)
    assert out["labels"].tolist() == [0, 1]
    assert all(t.dtype == torch.long for t in out.values())
    assert out["attention_mask"].tolist() == [[1, 1, 1, 1, 1, 0, 0]] * 2
    ids = out["input_ids"][0]
    assert ids[0] == tokenizer.cls_token_id and ids[4] == tokenizer.sep_token_id
    assert (ids[5:] == tokenizer.pad_token_id).all()
    assert tokenizer.convert_ids_to_tokens(ids[1:4].tolist()) == ["four", "minus", "ten"]


def test_tokenize_truncates(tokenizer):
    """Inputs longer than max_length are cut to max_length."""
    out = tokenize([Example("four minus ten", 0)], tokenizer, max_length=3)
    assert out["input_ids"].shape == (1, 3)
    assert out["attention_mask"].tolist() == [[1, 1, 1]]


def test_make_loader_batches_and_seeded_shuffle(tokenizer):
    """The loader yields dicts of batches; shuffling repeats for a seed, not across seeds."""
    examples = all_examples()[:50]
    loader = make_loader(examples, tokenizer, batch_size=16, seed=0)
    batches = list(loader)
    assert [len(b["labels"]) for b in batches] == [16, 16, 16, 2]
    assert batches[0]["input_ids"].shape == (16, 8)
    assert batches[0]["attention_mask"].shape == (16, 8)
    all_labels = torch.cat([b["labels"] for b in batches])
    assert sorted(all_labels.tolist()) == sorted(ex.label for ex in examples)

    def order(seed):
        ids = torch.cat([b["input_ids"] for b in make_loader(examples, tokenizer, seed=seed)])
        return ids.tolist()

    assert order(0) == order(0)
    assert order(0) != order(1)
    unshuffled = torch.cat([b["labels"] for b in make_loader(examples, tokenizer, shuffle=False)])
    assert unshuffled.tolist() == [ex.label for ex in examples]
