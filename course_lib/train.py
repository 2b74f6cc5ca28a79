"""The one training API of the course: :func:`fit` trains any model, the notebooks only differ
in the model (and, for BERT, the loss function) they pass.

Seq2seq models follow one interface (N batch, S source length, T target length, H hidden,
V vocabulary):

- ``encoder(src (N, S)) -> (annotations (N, S, H), hidden (N, H))``
- ``decoder(tgt_in (N, T), annotations (N, S, H), hidden (N, H))
  -> (logits (N, T, V), attention_weights (N, S, T) or None)``

:class:`Seq2Seq` joins an encoder and a decoder; :func:`seq2seq_loss` is teacher-forced
cross-entropy. ``fit`` uses Adam with per-epoch exponential learning-rate decay, keeps the
best-validation weights (in memory and, if asked, on disk), stops early if asked, shows a tqdm
progress bar and returns the loss history. In quick mode (:func:`course_lib.env.quick_mode`) it
trains ``quick_epochs`` epochs of ``quick_batches`` batches, so notebooks run in seconds.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from .batching import IGNORE_INDEX, Batch
from .env import get_device, quick_mode

LossFn = Callable[[nn.Module, Any], tuple[torch.Tensor, int]]


class Seq2Seq(nn.Module):
    """An encoder and a decoder trained together with teacher forcing."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``src (N, S)``, ``tgt_in (N, T)`` -> ``logits (N, T, V)``, attention or None."""
        annotations, hidden = self.encoder(src)
        return self.decoder(tgt_in, annotations, hidden)


def seq2seq_loss(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, int]:
    """Mean cross-entropy over the real target tokens of ``batch``, and their count."""
    logits, _ = model(batch.src, batch.tgt_in)  # (N, T, V)
    targets = batch.tgt_out  # (N, T)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_INDEX
    )
    return loss, int((targets != IGNORE_INDEX).sum())


@dataclass
class TrainConfig:
    """How :func:`fit` trains. Defaults follow the original course (100 epochs, Adam)."""

    epochs: int = 100
    lr: float = 0.005
    lr_decay: float = 0.99  # learning rate multiplied by this after every epoch
    weight_decay: float = 0.0
    grad_clip: float | None = None  # max gradient norm, None for no clipping
    early_stopping: int | None = None  # stop after this many epochs without improvement
    checkpoint_path: str | Path | None = None  # where to save the best weights, if anywhere
    restore_best: bool = True  # load the best-validation weights into the model at the end
    shuffle: bool = True  # shuffle the order of a list of batches every epoch
    seed: int = 0
    device: str | None = None  # None: CUDA when available, else CPU
    progress: bool = True  # tqdm progress bar over epochs
    quick_epochs: int = 2  # in quick mode: at most this many epochs ...
    quick_batches: int = 4  # ... of at most this many batches (train and validation)


@dataclass
class History:
    """What happened in training: losses per epoch and the best epoch (0-based)."""

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_val_loss: float = float("inf")
    best_state: dict[str, torch.Tensor] | None = field(default=None, repr=False)
    stopped_early: bool = False

    def restore_best(self, model: nn.Module) -> None:
        """Load the best-validation weights into ``model``."""
        if self.best_state is None:
            raise RuntimeError("no checkpoint kept: train for at least one epoch first")
        model.load_state_dict(self.best_state)

    def plot(self, ax=None, title: str = "Loss"):
        """Train and validation loss curves (see :func:`course_lib.viz.plot_losses`)."""
        from .viz import plot_losses

        return plot_losses(self, ax=ax, title=title)


def to_device(batch: Any, device: torch.device) -> Any:
    """Move a :class:`Batch`, tensor, dict, list or tuple of tensors to ``device``."""
    if isinstance(batch, (torch.Tensor, Batch)):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def _run_epoch(model, batches, loss_fn, device, optimizer=None, grad_clip=None, limit=None):
    total, count = 0.0, 0
    for i, batch in enumerate(batches):
        if limit is not None and i >= limit:
            break
        loss, n = loss_fn(model, to_device(batch, device))
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            if grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
        total += float(loss.detach()) * n
        count += n
    if count == 0:
        raise ValueError("no batches to train or evaluate on")
    return total / count


def _optimizer(
    model: nn.Module, config: TrainConfig
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """Adam over ``model``'s trainable parameters, and its per-epoch exponential decay."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    optimizer = torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    return optimizer, torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_decay)


def _keep_if_best(
    history: History, model: nn.Module, config: TrainConfig, epoch: int, val_loss: float
) -> None:
    """After ``epoch``: when ``val_loss`` is the best so far, keep ``model``'s weights (a CPU
    copy in ``history``, and on disk at ``config.checkpoint_path`` if set)."""
    if val_loss < history.best_val_loss:
        history.best_val_loss, history.best_epoch = val_loss, epoch
        history.best_state = copy.deepcopy({k: v.cpu() for k, v in model.state_dict().items()})
        if config.checkpoint_path is not None:
            save_checkpoint(model, config.checkpoint_path, epoch=epoch, val_loss=val_loss)


def fit(
    model: nn.Module,
    train_batches: Iterable,
    val_batches: Iterable,
    config: TrainConfig | None = None,
    loss_fn: LossFn = seq2seq_loss,
    on_epoch_end: Callable[[int, History], None] | None = None,
) -> History:
    """Train ``model`` and return its :class:`History`.

    ``train_batches`` / ``val_batches``: anything iterable more than once (a list of
    :class:`~course_lib.batching.Batch`, a ``DataLoader``). ``loss_fn(model, batch)`` returns the
    mean loss of a batch and how many items it averaged over. ``on_epoch_end(epoch, history)``
    is called after each epoch (for example to print a sample translation).
    """
    config = config or TrainConfig()
    device = get_device(config.device)
    quick = quick_mode()
    epochs = min(config.epochs, config.quick_epochs) if quick else config.epochs
    limit = config.quick_batches if quick else None
    if quick:
        print(f"quick mode: {epochs} epoch(s) of at most {limit} batches")
    model.to(device)
    optimizer, scheduler = _optimizer(model, config)
    rng = random.Random(config.seed)
    history = History()
    bar = tqdm(range(epochs), desc="epochs", disable=not config.progress)
    for epoch in bar:
        start = time.perf_counter()
        batches = train_batches
        if config.shuffle and isinstance(train_batches, list):
            batches = rng.sample(train_batches, len(train_batches))
        model.train()
        train_loss = _run_epoch(model, batches, loss_fn, device, optimizer, config.grad_clip, limit)
        scheduler.step()
        model.eval()
        with torch.no_grad():
            val_loss = _run_epoch(model, val_batches, loss_fn, device, limit=limit)
        history.train_loss.append(train_loss)
        history.val_loss.append(val_loss)
        history.epoch_seconds.append(time.perf_counter() - start)
        _keep_if_best(history, model, config, epoch, val_loss)
        bar.set_postfix(train=f"{train_loss:.3f}", val=f"{val_loss:.3f}")
        if on_epoch_end is not None:
            on_epoch_end(epoch, history)
        if (
            config.early_stopping is not None
            and epoch - history.best_epoch >= config.early_stopping
        ):
            history.stopped_early = True
            break
    if config.restore_best:
        history.restore_best(model)
    model.eval()
    return history


def save_checkpoint(model: nn.Module, path: str | Path, **info: Any) -> None:
    """Save ``model``'s weights and ``info`` (epoch, loss, ...) to ``path``: a dict
    ``{"state_dict": ..., **info}`` that ``torch.load(path, weights_only=True)`` reads back."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), **info}, path)
