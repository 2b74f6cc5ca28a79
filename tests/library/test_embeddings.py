"""Tests of the 2-D embedding plots (course_lib.embeddings)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_lib.embeddings import plot_embeddings, project_2d


def _line_with_noise(num_words: int = 12, hidden: int = 7) -> torch.Tensor:
    """Points along one direction in ``hidden`` dimensions, plus a little noise."""
    torch.manual_seed(0)
    direction = torch.randn(hidden)
    steps = torch.arange(num_words, dtype=torch.float32)[:, None]  # (W, 1)
    return steps * direction + 0.01 * torch.randn(num_words, hidden)  # (W, H)


def test_pca_shape_and_first_axis_follows_the_line():
    points = project_2d(_line_with_noise(), method="pca")
    assert points.shape == (12, 2)
    first_axis = np.abs(np.diff(points[:, 0]))
    assert np.all(first_axis > 0.5), "consecutive words should be spread along the first axis"
    assert np.abs(points[:, 1]).max() < 0.1, "little should be left for the second axis"


def test_pca_matches_scikit_learn_up_to_sign():
    from sklearn.decomposition import PCA

    vectors = torch.randn(15, 9, generator=torch.Generator().manual_seed(1))
    ours = project_2d(vectors)
    theirs = PCA(n_components=2).fit_transform(vectors.double().numpy())
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), atol=1e-8)


def test_pca_accepts_numpy_and_fixes_signs():
    vectors = _line_with_noise()
    a = project_2d(vectors)
    b = project_2d(vectors.numpy())
    c = project_2d(-vectors)  # the same cloud mirrored: the sign rule gives the same picture
    np.testing.assert_allclose(a, b, atol=1e-8)
    np.testing.assert_allclose(a, c, atol=1e-6)
    assert np.all(a[0] >= 0)


def test_tsne_is_seeded_and_works_for_a_few_words():
    vectors = _line_with_noise(num_words=20)
    a = project_2d(vectors, method="tsne", seed=1)
    b = project_2d(vectors, method="tsne", seed=1)
    assert a.shape == (20, 2)
    np.testing.assert_allclose(a, b)


@pytest.mark.parametrize(
    ("vectors", "method", "message"),
    [
        (np.zeros((2, 5)), "pca", "num_words >= 3"),
        (np.zeros(5), "pca", "num_words >= 3"),
        (np.ones((4, 5)), "umap", "unknown method"),
    ],
)
def test_project_2d_rejects_bad_input(vectors, method, message):
    with pytest.raises(ValueError, match=message):
        project_2d(vectors, method=method)


def test_plot_embeddings_labels_every_word():
    words = [f"w{i}" for i in range(12)]
    ax = plot_embeddings(_line_with_noise(), words, title="numbers")
    assert [t.get_text() for t in ax.texts] == words
    assert ax.get_title() == "numbers"
    assert ax.get_xlabel() == "PCA 1"
    plt.close(ax.figure)


def test_plot_embeddings_draws_on_given_axes_and_checks_lengths():
    _, ax = plt.subplots()
    assert plot_embeddings(_line_with_noise(), [str(i) for i in range(12)], ax=ax) is ax
    with pytest.raises(ValueError, match="12 vectors but 3 words"):
        plot_embeddings(_line_with_noise(), ["a", "b", "c"], ax=ax)
    plt.close(ax.figure)
