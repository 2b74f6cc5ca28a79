import pytest
import torch

from course_lib.batching import make_batches
from course_lib.piglatin import load_pairs
from course_lib.train import History, TrainConfig, fit, seq2seq_loss, to_device


def mean_loss(model, batches, loss_fn=seq2seq_loss) -> float:
    """The mean of ``loss_fn`` over ``batches``, each weighted by the items it averages (as
    ``fit`` measures a validation loss), without training."""
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        losses = [loss_fn(model, to_device(batch, device)) for batch in batches]
    return sum(float(loss) * n for loss, n in losses) / sum(n for _, n in losses)


@pytest.fixture(scope="module")
def data():
    pairs = load_pairs()
    train = [p for p in pairs if len(p[0]) in (3, 4)][:96]
    val = [p for p in pairs if len(p[0]) in (3, 4)][96:128]
    return make_batches(train, batch_size=32), make_batches(val, batch_size=32)


def test_fit_lowers_loss_and_restores_best(tiny_model, data, no_quick, tmp_path):
    train, val = data
    before = mean_loss(tiny_model, val)
    config = TrainConfig(epochs=6, lr=0.02, progress=False, checkpoint_path=tmp_path / "best.pt")
    history = fit(tiny_model, train, val, config)
    assert len(history.train_loss) == len(history.val_loss) == 6
    assert history.train_loss[-1] < history.train_loss[0] - 0.5
    assert history.best_val_loss == min(history.val_loss) < before
    # the model holds the best weights, not the last ones
    assert mean_loss(tiny_model, val) == pytest.approx(history.best_val_loss, rel=1e-5)
    saved = torch.load(tmp_path / "best.pt", weights_only=True)  # the best epoch, on disk
    assert saved["epoch"] == history.best_epoch
    assert saved["val_loss"] == pytest.approx(history.best_val_loss)
    assert saved["state_dict"].keys() == history.best_state.keys()
    assert all(torch.equal(saved["state_dict"][k], v) for k, v in history.best_state.items())


def test_best_checkpoint_is_restored_after_divergence(tiny_model, data, no_quick):
    train, val = data
    seen = []

    def wreck_after_first(epoch, history):
        seen.append(mean_loss(tiny_model, val))
        if epoch == 0:  # make every later epoch worse than the first
            with torch.no_grad():
                for p in tiny_model.parameters():
                    p.add_(torch.randn_like(p) * 5)

    config = TrainConfig(epochs=3, lr=1e-5, progress=False)
    history = fit(tiny_model, train, val, config, on_epoch_end=wreck_after_first)
    assert history.best_epoch == 0
    assert mean_loss(tiny_model, val) == pytest.approx(seen[0], rel=1e-5)


def test_early_stopping(tiny_model, data, no_quick):
    train, val = data
    config = TrainConfig(epochs=50, lr=0.0, lr_decay=1.0, early_stopping=2, progress=False)
    history = fit(tiny_model, train, val, config)
    assert history.stopped_early and len(history.val_loss) == 3


def test_quick_mode_caps_epochs_and_batches(tiny_model, data, monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    calls = []

    def counting_loss(model, batch):
        calls.append(1)
        return seq2seq_loss(model, batch)

    history = fit(tiny_model, *data, TrainConfig(epochs=100, progress=False), counting_loss)
    assert len(history.train_loss) == 2
    assert len(calls) <= 2 * (4 + 4)


def test_lr_decays_each_epoch(tiny_model, data, no_quick, monkeypatch):
    lrs = []

    class SpyAdam(torch.optim.Adam):
        def step(self, *args, **kwargs):
            lrs.append(self.param_groups[0]["lr"])
            return super().step(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", SpyAdam)
    fit(tiny_model, *data, TrainConfig(epochs=3, lr=0.01, lr_decay=0.5, progress=False))
    assert sorted(set(lrs), reverse=True) == pytest.approx([0.01, 0.005, 0.0025])


def test_frozen_model_is_rejected(tiny_model, data, no_quick):
    for p in tiny_model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable"):
        fit(tiny_model, *data, TrainConfig(epochs=1, progress=False))


def test_restore_without_training_raises(tiny_model):
    with pytest.raises(RuntimeError, match="no checkpoint"):
        History().restore_best(tiny_model)
