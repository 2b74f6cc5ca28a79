"""Tests of the BERT helpers (course_lib.bert): offline loading, training, evaluation."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_train import mean_loss
from torch import nn

from course_lib import bert
from course_lib.arithmetic import NUMBER_WORDS, all_examples, make_loader
from course_lib.bert import (
    BUNDLED,
    ClassifierReport,
    classification_loss,
    evaluate_classifier,
    load_bert,
    load_tokenizer,
    number_word_embeddings,
    predict,
    predict_loader,
    tiny_bert,
)
from course_lib.train import TrainConfig, fit


class TinyClassifier(nn.Module):
    """A linear head on the [CLS] hidden state, following the classifier interface."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.bert = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 3)

    def forward(self, input_ids, attention_mask, labels=None):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        logits = self.head(hidden[:, 0])  # (N, 3)
        if labels is None:
            return logits
        return F.cross_entropy(logits, labels), logits


class FixedPredictions(nn.Module):
    """Predicts a fixed class for each first number word (crafted predictions)."""

    def __init__(self, tokenizer, classes_by_word: dict[str, int]):
        super().__init__()
        table = torch.zeros(tokenizer.vocab_size, 3)
        for word, k in classes_by_word.items():
            table[tokenizer.convert_tokens_to_ids(word), k] = 1.0
        self.table = nn.Parameter(table)

    def forward(self, input_ids, attention_mask, labels=None):
        return self.table[input_ids[:, 1]]  # (N, 3): one-hot of the first number word's class


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a busy shared CPU (CI runners) two
    threads waiting on each other make training ~10x slower; use one, then restore."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _no_network(*args, **kwargs):
    raise OSError("network disabled by the test")


@pytest.fixture
def offline(monkeypatch):
    """Hugging Face offline flags set and every socket connection refused (not grading, where
    any name loads the bundled model)."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection", _no_network)
    monkeypatch.setattr(socket.socket, "connect", _no_network)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def examples():
    return all_examples()[::12][:64]  # 64 examples of both operators and all classes


@pytest.mark.slow
def test_bundled_bert_loads_offline(offline):
    """The bundled BERT loads without network and gives 384-wide hidden states."""
    model, tok = load_bert()
    assert load_bert.__defaults__ == (BUNDLED,)
    assert not model.training
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(22.7e6, rel=0.01)
    enc = tok(["four minus ten"], return_tensors="pt")
    assert tok.convert_ids_to_tokens(enc["input_ids"][0]) == [
        "[CLS]", "four", "minus", "ten", "[SEP]"
    ]  # fmt: skip
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    assert hidden.shape == (1, 5, 384)
    assert torch.isfinite(hidden).all()

    embeddings = number_word_embeddings(model, tok)
    assert embeddings.shape == (len(NUMBER_WORDS), 384) == (20, 384)
    table = model.get_input_embeddings().weight
    assert torch.equal(embeddings[4], table[tok.convert_tokens_to_ids("four")].detach())


def test_uncached_hub_name_fails_fast_when_offline(offline):
    """An uncached hub name with HF_HUB_OFFLINE=1 raises a RuntimeError naming the model."""
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="course-lib-tests/not-a-cached-bert") as info:
        load_bert("course-lib-tests/not-a-cached-bert")
    assert time.perf_counter() - start < 10
    assert "load_bert()" in str(info.value)


def test_uncached_hub_name_fails_fast_when_hub_unreachable(monkeypatch):
    """Without offline flags, an unreachable hub also gives a quick RuntimeError."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="cannot reach the Hugging Face hub"):
        load_tokenizer("course-lib-tests/not-a-cached-bert")
    assert time.perf_counter() - start < 2  # a refused connection does not wait for the timeout


def test_hub_reachable_gives_up_on_a_hanging_connection(monkeypatch):
    """A connection attempt that hangs counts as unreachable after the timeout."""

    def hang(*args, **kwargs):
        time.sleep(3)
        raise OSError("timed out")

    monkeypatch.setattr(socket, "create_connection", hang)
    start = time.perf_counter()
    assert not bert._hub_reachable(timeout=0.2)
    assert time.perf_counter() - start < 2


@pytest.fixture
def recorded_loads(monkeypatch):
    """Loading records the names asked for instead of reading any weights."""
    names = []

    def fake_load(auto_class, name):
        names.append(name)
        return nn.Linear(1, 1)  # stands in for the model and the tokenizer

    monkeypatch.setattr(bert, "_load", fake_load)
    return names


def test_grading_always_loads_the_bundled_bert(monkeypatch, capsys, recorded_loads):
    """Under nbgrader (NBGRADER_EXECUTION set) load_bert ignores the name it is given, loads the
    bundled model (model and tokenizer) and says so in one line."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    load_bert("bert-base-uncased")
    assert recorded_loads == [BUNDLED, BUNDLED]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "bundled" in out and "'bert-base-uncased'" in out

    load_bert()  # the bundled model already: no note
    assert recorded_loads[2:] == [BUNDLED, BUNDLED]
    assert capsys.readouterr().out == ""


def test_outside_grading_load_bert_uses_the_name(monkeypatch, capsys, recorded_loads):
    """Without NBGRADER_EXECUTION the name given is the model loaded, silently."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    load_bert("bert-base-uncased")
    assert recorded_loads == ["bert-base-uncased", "bert-base-uncased"]
    assert capsys.readouterr().out == ""


def test_no_ready_made_weighted_loss():
    """Weighting the rare class is a direction of notebook 4's open question: not given."""
    assert not hasattr(bert, "weighted_classification_loss")


def test_tiny_bert_config():
    """tiny_bert builds a small BERT with the requested sizes."""
    torch.manual_seed(0)
    model = tiny_bert(vocab_size=100, hidden_size=24, num_layers=3, num_heads=4)
    assert model.config.num_hidden_layers == 3
    ids = torch.tensor([[1, 5, 7, 2]])
    hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
    assert hidden.shape == (1, 4, 24)
    with pytest.raises(ValueError, match="divisible"):
        tiny_bert(hidden_size=30, num_heads=4)


def test_fit_lowers_classification_loss(monkeypatch, tokenizer, examples):
    """fit() with classification_loss on a tiny BERT lowers the training loss."""
    monkeypatch.setenv("COURSE_QUICK", "0")
    assert {ex.label for ex in examples} == {0, 1, 2}
    torch.manual_seed(0)
    model = TinyClassifier(tiny_bert())
    loader = make_loader(examples, tokenizer, batch_size=16)
    before = mean_loss(model, loader, classification_loss)
    config = TrainConfig(epochs=8, lr=1e-3, lr_decay=1.0, progress=False, device="cpu")
    history = fit(model, loader, loader, config, loss_fn=classification_loss)
    assert len(history.train_loss) == 8
    assert history.train_loss[-1] < 0.8 * history.train_loss[0]
    assert mean_loss(model, loader, classification_loss) < 0.8 * before


def test_predict_matches_predict_loader(tokenizer, examples):
    """predict on texts and predict_loader on a loader agree, in the loader's order."""
    torch.manual_seed(1)
    model = TinyClassifier(tiny_bert())
    loader = make_loader(examples, tokenizer, batch_size=10, shuffle=False)
    y_true, y_pred = predict_loader(model, loader)
    assert y_true == [ex.label for ex in examples]
    assert predict(model, tokenizer, [ex.text for ex in examples], batch_size=7) == y_pred
    assert set(y_pred) <= {0, 1, 2}


def test_evaluate_classifier_on_crafted_predictions(tokenizer):
    """Accuracy, per-class accuracy and confusion of crafted predictions are right; the report
    holds no Matthews correlation (notebook 4's exercise) and does not print one."""
    examples = all_examples()[::7]
    # Predict from the first number only: small -> negative, 0 -> zero, large -> positive.
    classes = {w: 0 if i < 5 else 1 if i == 5 else 2 for i, w in enumerate(NUMBER_WORDS)}
    model = FixedPredictions(tokenizer, classes)
    loader = make_loader(examples, tokenizer, batch_size=32)
    report = evaluate_classifier(model, loader)

    y_true = [ex.label for ex in examples]
    y_pred = [classes[ex.text.split()[0]] for ex in examples]
    expected = np.zeros((3, 3), dtype=int)
    for t, p in zip(y_true, y_pred, strict=True):
        expected[t, p] += 1
    np.testing.assert_array_equal(report.confusion, expected)
    assert report.accuracy == pytest.approx(np.mean(np.array(y_true) == np.array(y_pred)))
    assert report.per_class_accuracy == pytest.approx(list(expected.diagonal() / expected.sum(1)))

    text = str(report)
    for label in ("negative", "zero", "positive", f"accuracy {report.accuracy:.3f}"):
        assert label in text
    assert "mcc" not in text.lower() and "matthews" not in text.lower()
    assert not hasattr(report, "mcc")


def test_report_of_perfect_predictions():
    """Perfect predictions: accuracy 1, every class right, a diagonal confusion matrix."""
    report = ClassifierReport.from_predictions([0, 1, 2, 2], [0, 1, 2, 2])
    assert report.accuracy == 1.0
    assert report.per_class_accuracy == [1.0, 1.0, 1.0]
    np.testing.assert_array_equal(report.confusion, np.diag([1, 1, 2]))


def test_number_word_embeddings_averages_word_pieces(tokenizer):
    """Embeddings come from the input table; a split word gets the mean of its pieces."""
    torch.manual_seed(0)
    model = tiny_bert(hidden_size=16)
    table = model.get_input_embeddings().weight.detach()
    word = "eleventy"  # not in the vocabulary: split into several pieces
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    assert len(ids) > 1
    out = number_word_embeddings(model, tokenizer, words=("four", word))
    assert out.shape == (2, 16)
    assert torch.equal(out[0], table[tokenizer.convert_tokens_to_ids("four")])
    assert torch.allclose(out[1], table[ids].mean(dim=0))
    assert number_word_embeddings(model, tokenizer).shape == (20, 16)
    with pytest.raises(ValueError, match="BERT inside"):
        number_word_embeddings(TinyClassifier(model), tokenizer)
