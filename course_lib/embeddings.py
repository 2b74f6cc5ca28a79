"""Look at word embeddings in two dimensions: PCA or t-SNE, then a labelled scatter plot.

Typical use, on the number words of the verbal arithmetic task (W words, H hidden)::

    vectors = course_lib.bert.number_word_embeddings(model.bert, tokenizer)  # (W, H)
    plot_embeddings(vectors, NUMBER_WORDS, method="pca")
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

METHODS = ("pca", "tsne")


def project_2d(
    vectors: torch.Tensor | np.ndarray, method: str = "pca", seed: int = 0
) -> np.ndarray:
    """Project ``vectors (W, H)`` to ``(W, 2)`` with PCA or t-SNE.

    PCA (the top two principal axes, from an SVD of the centred vectors) is deterministic; the
    sign of each axis is fixed so that the first word has non-negative coordinates. t-SNE
    (scikit-learn) uses ``seed`` and a perplexity below ``W`` (it requires one), so a few dozen
    words work.
    """
    x = np.asarray(vectors.detach().cpu() if isinstance(vectors, torch.Tensor) else vectors)
    x = x.astype(np.float64)
    if x.ndim != 2 or len(x) < 3:
        raise ValueError(f"expected vectors of shape (num_words >= 3, hidden), got {x.shape}")
    if method == "pca":
        centred = x - x.mean(axis=0)  # (W, H)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (min(W, H), H)
        points = centred @ vt[:2].T  # (W, 2)
        signs = np.where(points[0] < 0, -1.0, 1.0)  # (2,)
        return points * signs
    if method == "tsne":
        from sklearn.manifold import TSNE  # imported here: scikit-learn is slow to import

        perplexity = min(30.0, (len(x) - 1) / 3)
        tsne = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed)
        return tsne.fit_transform(x)  # (W, 2)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")


def plot_embeddings(
    vectors: torch.Tensor | np.ndarray,
    words: Sequence[str],
    method: str = "pca",
    ax=None,
    title: str | None = None,
    seed: int = 0,
):
    """Scatter ``vectors (W, H)`` in 2-D (:func:`project_2d`), each point labelled by its word.

    Points are coloured by their position in ``words`` (for the number words: by value), so an
    ordered line of colours means the embedding keeps the order. Returns the axes.
    """
    if len(words) != len(vectors):
        raise ValueError(f"got {len(vectors)} vectors but {len(words)} words")
    points = project_2d(vectors, method=method, seed=seed)  # (W, 2)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.5))
    ax.scatter(points[:, 0], points[:, 1], c=np.arange(len(words)), cmap="viridis")
    for (x, y), word in zip(points, words, strict=True):
        ax.annotate(word, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=8)
    name = "PCA" if method == "pca" else "t-SNE"
    ax.set(xlabel=f"{name} 1", ylabel=f"{name} 2", title=title or f"Word embeddings ({name})")
    return ax
