import pytest
import torch

from course_lib.batching import make_batches
from course_lib.decode import greedy_decode, translate_sentence, translate_word, translate_words
from course_lib.piglatin import load_pairs
from course_lib.train import TrainConfig, fit
from course_lib.vocab import encode_batch

WORDS = ["the", "air", "conditioning", "is", "working", "cat", "dog", "shopping", "a"]


@pytest.fixture(scope="module")
def trained():
    """A tiny attention model trained briefly, so translations are not all identical."""
    from conftest import TinyAttentionDecoder, TinyEncoder

    from course_lib.train import Seq2Seq

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_QUICK", "0")
        torch.manual_seed(0)
        model = Seq2Seq(TinyEncoder(24), TinyAttentionDecoder(24))
        pairs = load_pairs()[:800]
        config = TrainConfig(epochs=3, progress=False)
        fit(model, make_batches(pairs), make_batches(pairs[:100]), config)
    return model


def test_batched_and_one_by_one_agree(trained):
    batched = translate_words(trained, WORDS)
    assert [t.source for t in batched] == WORDS
    for word, t in zip(WORDS, batched, strict=True):
        single = translate_words(trained, [word])[0]
        assert single.output == t.output == translate_word(trained, word)
        assert torch.allclose(single.attention, t.attention, atol=1e-5)


def test_attention_shape_matches_tokens(trained):
    for t in translate_words(trained, WORDS):
        assert t.attention.shape == (len(t.source) + 1, len(t.output_tokens))
        assert len(t.output_tokens) in (len(t.output), len(t.output) + 1)
        assert torch.allclose(t.attention.sum(0), torch.ones(t.attention.shape[1]), atol=1e-5)


def test_greedy_stops_at_max_len(tiny_model):
    ids, attention = greedy_decode(tiny_model, encode_batch(["cat", "dog"]), max_len=5)
    assert ids.shape[0] == 2 and ids.shape[1] <= 5
    assert attention.shape == (2, 4, ids.shape[1])


def test_sentence_is_word_by_word(trained):
    sentence = "the air conditioning is working"
    expected = " ".join(translate_word(trained, w) for w in sentence.split())
    assert translate_sentence(trained, sentence) == expected
    with pytest.raises(ValueError, match="at least one word"):
        translate_sentence(trained, "  ")


def test_decoder_without_attention(tiny_model):
    tiny_model.decoder.attention = False
    t = translate_words(tiny_model, ["cat"])[0]
    assert t.attention is None and isinstance(t.output, str)


def test_evaluate_translation(trained):
    from course_lib.decode import evaluate_translation

    pairs = [("cat", "atcay"), ("the", "ethay"), ("air", "airway")]
    scores = evaluate_translation(trained, pairs)
    outputs = [translate_word(trained, s) for s, _ in pairs]
    assert scores.exact_match == sum(o == t for o, (_, t) in zip(outputs, pairs, strict=True)) / 3
    assert [e[1] for e in scores.errors([t for _, t in pairs])] == [
        o for o, (_, t) in zip(outputs, pairs, strict=True) if o != t
    ]
    assert 0 <= scores.char_error_rate


def test_mode_is_restored(trained):
    trained.train()
    translate_words(trained, ["cat"])
    assert trained.training
    trained.eval()


def test_bad_characters_raise(trained):
    with pytest.raises(ValueError, match="cannot encode"):
        translate_word(trained, "Cat")


def test_sentence_logger_counts_epochs_from_one(trained, capsys):
    from course_lib.decode import sentence_logger
    from course_lib.train import History

    log = sentence_logger(trained, "cat", every=10)
    history = History(train_loss=[1.0], val_loss=[2.0])
    for epoch in range(21):  # fit passes the 0-based index of each epoch
        log(epoch, history)
    printed = [line.split("|")[0].split() for line in capsys.readouterr().out.splitlines()]
    assert printed == [["epoch", "10"], ["epoch", "20"]]
