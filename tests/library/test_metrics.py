import math

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion

from course_lib import metrics


def test_word_accuracy():
    assert metrics.word_accuracy(["ab", "c", "d"], ["ab", "x", "d"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="length"):
        metrics.word_accuracy(["a"], ["a", "b"])


@pytest.mark.parametrize(
    ("a", "b", "d"), [("", "", 0), ("abc", "abc", 0), ("abc", "abd", 1), ("", "ab", 2),
                      ("kitten", "sitting", 3), ("ethay", "theay", 2)]
)  # fmt: skip
def test_edit_distance(a, b, d):
    assert metrics.edit_distance(a, b) == d == metrics.edit_distance(b, a)


def test_character_error_rate():
    assert metrics.character_error_rate(["abc", "xy"], ["abd", "xy"]) == pytest.approx(1 / 5)
    assert metrics.character_error_rate(["a"], ["a"]) == 0.0


def test_perplexity_of_uniform_guess():
    assert metrics.perplexity(math.log(29)) == pytest.approx(29)


def test_confusion_and_per_class():
    y_true, y_pred = [0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 2]
    assert np.array_equal(metrics.confusion_matrix(y_true, y_pred, 3), sk_confusion(y_true, y_pred))
    assert metrics.per_class_accuracy(y_true, y_pred, 3) == pytest.approx([0.5, 1.0, 2 / 3])
    assert math.isnan(metrics.per_class_accuracy([0, 0], [0, 1], 3)[2])
    with pytest.raises(ValueError, match="out of range"):
        metrics.confusion_matrix([0, 3], [0, 0], 3)


def test_no_ready_made_mcc():
    """Notebook 4's exercise, the multi-class Matthews correlation, is not one call away."""
    assert not hasattr(metrics, "matthews_corrcoef")
    assert not any("matthews" in name.lower() or "mcc" in name.lower() for name in dir(metrics))
