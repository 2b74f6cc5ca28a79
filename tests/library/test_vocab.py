import pytest
import torch

from course_lib import vocab


def test_29_tokens_in_course_order():
    assert vocab.VOCAB_SIZE == 29 == len(set(vocab.TOKENS))
    assert vocab.CHAR_TO_INDEX["-"] == 0 and vocab.CHAR_TO_INDEX["a"] == 1
    assert vocab.CHAR_TO_INDEX["z"] == 26
    assert (vocab.SOS_ID, vocab.EOS_ID) == (27, 28)


@pytest.mark.parametrize("word", ["a", "shopping", "mother-in-law", "zyx"])
def test_round_trip(word):
    ids = vocab.encode(word, sos=True, eos=True)
    assert ids[0] == vocab.SOS_ID and ids[-1] == vocab.EOS_ID and len(ids) == len(word) + 2
    assert vocab.decode(ids) == word
    assert vocab.decode(torch.tensor(ids)) == word


def test_decode_stops_at_eos():
    ids = vocab.encode("ab") + vocab.encode("cd")
    assert vocab.decode(ids) == "ab"


@pytest.mark.parametrize("bad", ["", "Ab", "a b", "é", "<SOS>"])
def test_encode_rejects_outside_vocabulary(bad):
    with pytest.raises(ValueError, match="cannot encode"):
        vocab.encode(bad)


def test_decode_rejects_bad_ids():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        vocab.decode([1, 29])


def test_encode_batch_shape_and_length_check():
    batch = vocab.encode_batch(["cat", "dog"])
    assert batch.shape == (2, 4) and batch.dtype == torch.long
    assert batch[:, -1].tolist() == [vocab.EOS_ID] * 2
    with pytest.raises(ValueError, match="one length"):
        vocab.encode_batch(["cat", "horse"])
