"""The attention helpers of Part 5: the entropy metric and the per-epoch snapshot callback."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib import batching, callbacks, metrics, train  # noqa: E402


def test_attention_entropy_of_sharp_and_uniform_maps():
    assert metrics.attention_entropy(np.eye(4)) == 0.0  # (S, T): each step on one position
    assert metrics.attention_entropy(np.full((5, 3), 0.2)) == pytest.approx(math.log(5))
    batch = torch.tensor([[[1.0, 0.5], [0.0, 0.5]]])  # (N=1, S=2, T=2): entropies 0 and ln 2
    assert metrics.attention_entropy(batch, axis=1) == pytest.approx(math.log(2) / 2)
    with pytest.raises(ValueError):
        metrics.attention_entropy(np.zeros((0, 3)))


PAIRS = [("cat", "atcay"), ("dog", "ogday"), ("shopping", "oppingshay"), ("apple", "appleway")]


def test_snapshots_record_maps_and_entropy_per_epoch(tiny_model, no_quick):
    calls = []
    snapshots = callbacks.AttentionSnapshots(
        tiny_model,
        "cat",
        batching.make_batches(PAIRS),
        epochs=(0, 2),
        also=lambda e, h: calls.append(e),
    )
    assert list(snapshots.maps) == [0] and len(snapshots.entropy) == 1  # before training
    config = train.TrainConfig(epochs=3, progress=False, lr=0.01)
    train.fit(
        tiny_model,
        batching.make_batches(PAIRS),
        batching.make_batches(PAIRS),
        config,
        on_epoch_end=snapshots,
    )
    assert sorted(snapshots.maps) == [0, 2] and len(snapshots.entropy) == 4 and calls == [0, 1, 2]
    assert snapshots.maps[2].source == "cat" and snapshots.maps[2].attention.shape[0] == 4
    assert all(0 <= e <= math.log(11) for e in snapshots.entropy)  # S is at most 9 + <EOS>
    assert len(snapshots.plot_maps().axes) >= 2
    assert len(snapshots.plot_entropy(label="dot").get_lines()[0].get_xdata()) == 4


def test_snapshots_need_a_decoder_with_attention(no_quick):
    from conftest import TinyAttentionDecoder, TinyEncoder

    model = train.Seq2Seq(TinyEncoder(), TinyAttentionDecoder(attention=False))
    with pytest.raises(ValueError, match="no attention"):
        callbacks.AttentionSnapshots(model, "cat", batching.make_batches(PAIRS), epochs=())
