import pytest
import torch

from course_lib.batching import IGNORE_INDEX, collate, make_batches
from course_lib.piglatin import load_pairs
from course_lib.vocab import EOS_ID, SOS_ID, decode


@pytest.fixture(scope="module")
def pairs():
    return load_pairs()[:500]


def test_bucket_batches_need_no_padding(pairs):
    batches = make_batches(pairs, batch_size=16, mode="bucket")
    assert sum(len(b) for b in batches) == len(pairs)
    assert sorted((b.sources[i], b.targets[i]) for b in batches for i in range(len(b))) == sorted(
        pairs
    )
    for b in batches:
        assert len(b) <= 16
        assert b.src_mask.all() and b.tgt_mask.all()
        assert {len(s) for s in b.sources} == {b.src.shape[1] - 1}
        assert {len(t) for t in b.targets} == {b.tgt_out.shape[1] - 1}


def test_teacher_forcing_layout(pairs):
    b = make_batches(pairs, batch_size=8)[0]
    n, t = b.tgt_in.shape
    assert b.tgt_out.shape == (n, t)
    assert (b.tgt_in[:, 0] == SOS_ID).all()
    assert (b.tgt_out[:, -1] == EOS_ID).all()
    assert torch.equal(b.tgt_in[:, 1:], b.tgt_out[:, :-1])
    assert (b.src[:, -1] == EOS_ID).all()
    assert [decode(row) for row in b.tgt_out] == b.targets
    assert [decode(row) for row in b.src] == b.sources


def test_padded_mode_shapes_and_masks():
    pairs = [("a", "away"), ("shopping", "oppingshay"), ("team", "eamtay")]
    b = collate(pairs)
    assert b.src.shape == (3, 9) and b.tgt_out.shape == (3, 11) and b.tgt_in.shape == (3, 11)
    assert b.src_mask.sum(1).tolist() == [2, 9, 5]
    assert b.tgt_mask.sum(1).tolist() == [5, 11, 7]
    assert (b.tgt_out[~b.tgt_mask] == IGNORE_INDEX).all()
    assert (b.src[~b.src_mask] == EOS_ID).all()
    assert b.tgt_in[0].tolist()[:5] == [SOS_ID, 1, 23, 1, 25]  # <SOS> a w a y
    assert [decode(r) for r in b.tgt_out.clamp(min=0)] == [t for _, t in pairs]


def test_padded_batches_are_full(pairs):
    batches = make_batches(pairs, batch_size=64, mode="padded")
    assert [len(b) for b in batches] == [64] * 7 + [500 - 7 * 64]


def test_deterministic_for_a_seed(pairs):
    a = make_batches(pairs, batch_size=16, seed=1)
    b = make_batches(pairs, batch_size=16, seed=1)
    c = make_batches(pairs, batch_size=16, seed=2)
    assert [x.sources for x in a] == [x.sources for x in b]
    assert [x.sources for x in a] != [x.sources for x in c]


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        make_batches([("a", "away")], mode="ragged")
    with pytest.raises(ValueError, match="batch_size"):
        make_batches([("a", "away")], batch_size=0)
    with pytest.raises(ValueError, match="zero pairs"):
        collate([])


def test_batch_to_device_keeps_words(pairs):
    b = make_batches(pairs, batch_size=4)[0].to("cpu")
    assert b.sources and b.src.device.type == "cpu"
