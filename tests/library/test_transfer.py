"""Tests of the data and bookkeeping of Part 6a (course_lib.transfer)."""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from torch import nn

from course_lib import transfer
from course_lib.arithmetic import NUMBER_WORDS, Example, all_examples
from course_lib.batching import IGNORE_INDEX
from course_lib.models import AdditiveAttention, GRUEncoder, LuongAttentionDecoder
from course_lib.train import Seq2Seq, seq2seq_loss


def test_digits_of_writes_numbers_and_operators():
    assert transfer.digits_of("four minus ten plus two") == "4-10+2"
    assert transfer.digits_of("nineteen") == "19"
    assert transfer.digits_of("zero plus zero") == "0+0"
    for bad in ["", "four minus", "plus four", "four times two", "four ten"]:
        with pytest.raises(ValueError):
            transfer.digits_of(bad)


def test_expression_pairs_are_distinct_deterministic_and_varied():
    pairs = transfer.expression_pairs(500, max_terms=4, seed=3)
    assert len(pairs) == 500 and len({text for text, _ in pairs}) == 500
    assert pairs == transfer.expression_pairs(500, max_terms=4, seed=3)
    assert pairs != transfer.expression_pairs(500, max_terms=4, seed=4)
    assert all(digits == transfer.digits_of(text) for text, digits in pairs)
    terms = {(len(text.split()) + 1) // 2 for text, _ in pairs}
    assert terms == {1, 2, 3, 4}
    assert len(transfer.expression_pairs(20, max_terms=1)) == 20  # every single number
    with pytest.raises(ValueError):
        transfer.expression_pairs(21, max_terms=1)


def test_word_ids_pad_with_zero_and_mask_the_padding():
    words, mask = transfer.word_ids(["four minus ten", "seven"])
    assert words.shape == mask.shape == (2, 3) and mask.dtype == torch.bool
    assert words[0].tolist() == [transfer.WORD_TO_ID[w] for w in ["four", "minus", "ten"]]
    assert words[1].tolist() == [transfer.WORD_TO_ID["seven"], transfer.PAD_ID, transfer.PAD_ID]
    assert mask.tolist() == [[True, True, True], [True, False, False]]
    assert transfer.WORDS[transfer.PAD_ID] == "<pad>" and len(transfer.WORDS) == 23
    for bad in [["four times two"], ["<pad>"], [""]]:
        with pytest.raises(ValueError):
            transfer.word_ids(bad)


def test_translation_batches_follow_teacher_forcing():
    pairs = transfer.expression_pairs(300, seed=0)
    batches = transfer.translation_batches(pairs, batch_size=16)
    assert sum(len(b) for b in batches) == 300
    for batch in batches:
        assert len(batch) <= 16
        assert (batch.tgt_in[:, 0] == transfer.DIGIT_SOS_ID).all()
        assert (batch.tgt_out[:, -1] == transfer.DIGIT_EOS_ID).all()
        assert torch.equal(batch.tgt_in[:, 1:], batch.tgt_out[:, :-1])
        assert (batch.src != transfer.PAD_ID).all() and (batch.tgt_out != IGNORE_INDEX).all()
        for row, text, digits in zip(batch.tgt_out, batch.sources, batch.targets, strict=True):
            assert "".join(transfer.DIGIT_TOKENS[i] for i in row[:-1]) == digits
            assert transfer.digits_of(text) == digits


def _translator(hidden=8):
    torch.manual_seed(0)
    return Seq2Seq(
        GRUEncoder(len(transfer.WORDS), hidden),
        LuongAttentionDecoder(len(transfer.DIGIT_TOKENS), hidden, AdditiveAttention(hidden)),
    )


def test_the_course_seq2seq_trains_on_translation_batches_and_translates():
    model = _translator()
    batches = transfer.translation_batches(transfer.expression_pairs(64, seed=1), batch_size=64)
    loss, count = seq2seq_loss(model, batches[0])
    assert loss.ndim == 0 and count == batches[0].tgt_out.numel()
    texts = ["four minus ten", "seven", "one plus two minus three"]
    out = transfer.translate(model, texts, max_len=5)
    assert len(out) == 3 and all(isinstance(o, str) and len(o) <= 5 for o in out)
    assert set("".join(out)) <= set("0123456789+-?")


def test_translate_stops_at_eos_and_keeps_the_order():
    class Spell(nn.Module):
        """Writes the digits of the first word's value, then <EOS> (a hand-made decoder)."""

        def forward(self, tgt, annotations, hidden):
            first = hidden.long()  # (N,) the first word's id
            out = torch.full((*tgt.shape, len(transfer.DIGIT_TOKENS)), -10.0)
            for n, word in enumerate(first.tolist()):
                digits = transfer.digits_of(transfer.WORDS[word])
                for t in range(tgt.shape[1]):
                    token = (
                        transfer.DIGIT_TOKENS.index(digits[t])
                        if t < len(digits)
                        else transfer.DIGIT_EOS_ID
                    )
                    out[n, t, token] = 10.0
            return out, None

    class First(nn.Module):
        def __init__(self):
            super().__init__()
            self.unused = nn.Linear(1, 1)

        def forward(self, src):
            return src.float().unsqueeze(-1), src[:, 0].float()

    model = Seq2Seq(First(), Spell())
    assert transfer.translate(model, ["twelve plus one", "three", "nineteen minus two"]) == [
        "12",
        "3",
        "19",
    ]


def test_order_decides_only_for_minus_with_different_numbers():
    assert transfer.order_decides("four minus ten")
    assert not transfer.order_decides("four minus four")
    assert not transfer.order_decides("four plus ten")
    decided = [ex for ex in all_examples() if transfer.order_decides(ex.text)]
    assert len(decided) == 380  # 20 x 19 ordered pairs of different numbers


def test_sign_batches_hold_words_masks_and_labels():
    examples = all_examples()[:70]
    batches = transfer.sign_batches(examples, batch_size=32, shuffle=True, seed=0)
    assert [len(b["labels"]) for b in batches] == [32, 32, 6]
    again = transfer.sign_batches(examples, batch_size=32, shuffle=True, seed=0)
    assert all(torch.equal(a[k], b[k]) for a, b in zip(batches, again, strict=True) for k in a)
    seen = []
    for batch in batches:
        assert batch["words"].shape == batch["mask"].shape == (len(batch["labels"]), 3)
        assert batch["mask"].all()
        seen += [" ".join(transfer.WORDS[i] for i in row) for row in batch["words"].tolist()]
    assert sorted(seen) == sorted(ex.text for ex in examples)
    fixed = transfer.sign_batches(examples, batch_size=70, shuffle=False)[0]
    assert fixed["labels"].tolist() == [ex.label for ex in examples]


class _Oracle(nn.Module):
    """Answers the true sign, except that it always says 'positive' for ``A minus B`` with
    A > 10 (a hand-made classifier with known scores)."""

    def __init__(self):
        super().__init__()
        self.unused = nn.Linear(1, 1)

    def forward(self, words, mask, labels=None):
        out = []
        for row in words.tolist():
            a, op, b = (transfer.WORDS[i] for i in row)
            va, vb = NUMBER_WORDS.index(a), NUMBER_WORDS.index(b)
            value = va + vb if op == "plus" else va - vb
            label = (
                2 if (op == "minus" and va > 10) else (0 if value < 0 else 1 if value == 0 else 2)
            )
            out.append(torch.nn.functional.one_hot(torch.tensor(label), 3).float())
        logits = torch.stack(out)
        if labels is None:
            return logits
        return torch.nn.functional.cross_entropy(logits, labels), logits


def test_sign_scores_and_sign_loss():
    examples = [
        Example("four minus ten", 0),  # right
        Example("twelve minus fifteen", 0),  # wrong: A > 10, says positive
        Example("three plus one", 2),  # right, order does not decide
        Example("seven minus seven", 1),  # right, order does not decide
    ]
    scores = transfer.sign_scores(_Oracle(), examples)
    assert scores["accuracy"] == pytest.approx(0.75)
    assert scores["order_accuracy"] == pytest.approx(0.5)  # one of the two order-decided ones
    plus_only = transfer.sign_scores(_Oracle(), [Example("three plus one", 2)])
    assert plus_only["accuracy"] == 1.0 and math.isnan(plus_only["order_accuracy"])
    batch = transfer.sign_batches(examples, shuffle=False)[0]
    loss, n = transfer.sign_loss(_Oracle(), batch)
    assert n == 4 and loss.ndim == 0


def test_seed_spread_gathers_mean_and_sample_std():
    spread = transfer.seed_spread(lambda seed: {"a": seed, "b": 2.0}, seeds=[1, 2, 3])
    assert spread["a"].values == (1.0, 2.0, 3.0)
    assert spread["a"].mean == pytest.approx(2.0) and spread["a"].std == pytest.approx(1.0)
    assert spread["b"].std == 0.0 and str(spread["a"]) == "2.000 ± 1.000"
    assert transfer.seed_spread(lambda seed: {"a": 5.0}, seeds=[0])["a"].std == 0.0
    with pytest.raises(ValueError):
        transfer.seed_spread(lambda seed: {"a": 1.0}, seeds=[])
    with pytest.raises(ValueError):
        transfer.seed_spread(lambda seed: {"a": 1.0} if seed else {"b": 1.0}, seeds=[0, 1])


def test_paired_difference_pairs_seeds_and_gives_the_standard_error():
    first = transfer.Spread((0.90, 0.93, 0.92))
    second = transfer.Spread((0.88, 0.93, 0.89))
    found = transfer.paired_difference(first, second)
    assert found.values == pytest.approx((0.02, 0.0, 0.03))
    assert found.mean == pytest.approx(0.05 / 3)
    # the standard deviation of the differences over sqrt(3), not the rows' own spreads
    assert found.stderr == pytest.approx(statistics.stdev([0.02, 0.0, 0.03]) / math.sqrt(3))
    assert str(found) == f"+0.017 ± {found.stderr:.3f}"
    assert math.isnan(
        transfer.paired_difference(transfer.Spread((1.0,)), transfer.Spread((0.5,))).stderr
    )
    with pytest.raises(ValueError, match="same seeds"):
        transfer.paired_difference(first, transfer.Spread((0.9, 0.9)))


def test_markdown_table():
    table = transfer.markdown_table([{"name": "x", "value": 0.12345}, {"name": "y", "value": 2}])
    assert table.splitlines() == ["| name | value |", "|---|---|", "| x | 0.123 |", "| y | 2 |"]
    assert transfer.markdown_table([], columns=["a", "b"]).splitlines() == [
        "| a | b |",
        "|---|---|",
    ]
    with pytest.raises(ValueError):
        transfer.markdown_table([])


def test_bert_word_states_reads_each_word_in_context_and_keeps_rows():
    from course_lib.bert import load_tokenizer, tiny_bert

    tokenizer = load_tokenizer()
    torch.manual_seed(0)
    bert = tiny_bert(hidden_size=8, num_heads=2)
    states_of = transfer.BertWordStates(bert, tokenizer)
    words, mask = transfer.word_ids(["four minus ten", "seven"])
    states, cls = states_of(words)
    assert states.shape == (2, 3, 8) and cls.shape == (2, 8)
    assert not any(p.requires_grad for p in states_of.parameters())
    assert (states[1, 1:] == 0).all()  # padding
    # the same as BERT on [CLS] w ... [SEP] without padding
    ids = tokenizer(["four minus ten", "seven"], padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = bert(**ids).last_hidden_state
    torch.testing.assert_close(states[0], expected[0, 1:4])
    torch.testing.assert_close(states[1, 0], expected[1, 1])
    torch.testing.assert_close(cls, expected[:, 0])
    # contextual: "ten" after "four minus" differs from "ten" alone
    alone, _ = states_of(transfer.word_ids(["ten"])[0])
    assert not torch.allclose(alone[0, 0], states[0, 2])
    # kept: a second call gives the same tensors without running BERT again
    states_of.bert = None
    again, _ = states_of(words)
    torch.testing.assert_close(again, states)
