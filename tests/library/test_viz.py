import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib import viz  # noqa: E402
from course_lib.decode import Translation  # noqa: E402
from course_lib.train import History  # noqa: E402


def test_plot_losses_draws_both_curves_and_best():
    h = History(train_loss=[3.0, 2.0, 1.5], val_loss=[3.1, 2.5, 2.7], best_epoch=1)
    ax = viz.plot_losses(h)
    assert [line.get_label() for line in ax.get_lines()] == [
        "train",
        "validation",
        "best (epoch 2)",
    ]
    assert list(ax.get_lines()[1].get_ydata()) == [3.1, 2.5, 2.7]
    ax2 = viz.plot_losses({"train_loss": [1.0, 0.5], "val_loss": []})
    assert len(ax2.get_lines()) == 1


def test_plot_attention_labels_and_shape_check():
    w = torch.rand(4, 5)
    ax = viz.plot_attention(w, list("cat") + ["<EOS>"], list("atca") + ["<EOS>"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "a", "t", "<EOS>"]
    assert np.allclose(ax.images[0].get_array(), w.numpy())
    with pytest.raises(ValueError, match="expected"):
        viz.plot_attention(w.T, list("cat") + ["<EOS>"], list("atca") + ["<EOS>"])


def test_translation_grid_skips_missing_attention():
    t1 = Translation("cat", "atcay", torch.rand(4, 6))
    fig = viz.plot_translation_attention([t1, Translation("dog", "ogday", None)], ncols=2)
    assert sum(len(ax.images) for ax in fig.axes) == 1
    with pytest.raises(ValueError, match="none of the translations"):
        viz.plot_translation_attention([Translation("dog", "ogday", None)])


def test_confusion_matrix_plot():
    cm = np.array([[5, 1, 0], [0, 2, 1], [0, 0, 9]])
    ax = viz.plot_confusion_matrix(cm, ["neg", "zero", "pos"])
    assert sorted(t.get_text() for t in ax.texts) == sorted(str(n) for n in cm.flat)
    with pytest.raises(ValueError, match="does not match"):
        viz.plot_confusion_matrix(cm, ["a", "b"])
