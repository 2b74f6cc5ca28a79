import pytest
import torch

from course_lib import checks


def test_plain_refuses_lookalikes():
    class Sneaky(torch.Tensor):
        def __eq__(self, other):
            return True

    with pytest.raises(AssertionError, match="must be a torch.Tensor, got list"):
        checks.plain([1.0])
    with pytest.raises(AssertionError, match="got Sneaky"):
        checks.plain(torch.zeros(2).as_subclass(Sneaky))
    t = torch.ones(2, requires_grad=True)
    copy = checks.plain(t)
    assert not copy.requires_grad and copy.data_ptr() != t.data_ptr()


def test_check_shape_message():
    checks.check_shape(torch.zeros(2, 3), (2, 3))
    with pytest.raises(AssertionError, match=r"should have shape \(3, 2\), got \(2, 3\)"):
        checks.check_shape(torch.zeros(2, 3), (3, 2), "context")


def test_check_close():
    checks.check_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    with pytest.raises(AssertionError, match="largest difference 0.5"):
        checks.check_close(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0]))
    with pytest.raises(AssertionError, match="NaN"):
        checks.check_close(torch.tensor([float("nan")]), torch.tensor([1.0]))


def test_check_close_ignores_patched_allclose(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    with pytest.raises(AssertionError, match="differs"):
        checks.check_close(torch.tensor([3.0]), torch.tensor([1.0]))


def test_check_distribution():
    w = torch.softmax(torch.randn(2, 5, 3), dim=1)
    checks.check_distribution(w, dim=1)
    with pytest.raises(AssertionError, match="sum to 1 over dimension 2"):
        checks.check_distribution(w, dim=2)
    with pytest.raises(AssertionError, match="non-negative"):
        checks.check_distribution(-w, dim=1)


def test_check_causal():
    scores = torch.randn(2, 4, 4)  # (N, keys, queries)
    allowed = torch.triu(torch.ones(4, 4, dtype=torch.bool))  # key i <= query j
    causal = scores.masked_fill(~allowed, float("-inf")).softmax(dim=1)
    checks.check_causal(causal)
    with pytest.raises(AssertionError, match="later positions"):
        checks.check_causal(scores.softmax(dim=1))
    with pytest.raises(AssertionError, match="before its query"):
        checks.check_causal(causal.transpose(1, 2))  # the transposed mask is wrong


def test_check_causal_says_which_way_the_mask_is_wrong():
    scores = torch.randn(2, 4, 4)
    keys_after = torch.ones(4, 4, dtype=torch.bool).tril(diagonal=-1)  # key i > query j
    too_much = torch.ones(4, 4, dtype=torch.bool).tril(diagonal=0)  # the diagonal hidden too
    leaky = scores.masked_fill(too_much, -1e7).softmax(dim=1)
    with pytest.raises(AssertionError, match="own position .*diagonal=-1"):
        checks.check_causal(leaky)
    with pytest.raises(AssertionError, match="attend to later positions"):
        checks.check_causal(scores.softmax(dim=1))  # no mask at all
    past_hidden = scores.masked_fill(keys_after | torch.eye(4).bool().roll(1, 0), -1e7)
    with pytest.raises(AssertionError, match="zero weight to a key before its query"):
        checks.check_causal(past_hidden.masked_fill(keys_after, float("-inf")).softmax(dim=1))
