import random

import pytest
import torch

from course_lib import env


@pytest.mark.parametrize(
    ("course_quick", "nbgrader", "expected"),
    [
        ("1", None, True),
        ("0", "1", False),
        ("", "1", True),
        ("", None, False),
        ("true", None, True),
    ],
)
def test_quick_mode(monkeypatch, course_quick, nbgrader, expected):
    monkeypatch.setenv("COURSE_QUICK", course_quick)
    if nbgrader is None:
        monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    else:
        monkeypatch.setenv("NBGRADER_EXECUTION", nbgrader)
    assert env.quick_mode() is expected


def test_seed_repeats():
    env.set_seed(5)
    a = (random.random(), torch.rand(3))
    env.set_seed(5)
    b = (random.random(), torch.rand(3))
    assert a[0] == b[0] and torch.equal(a[1], b[1])


def test_setup_reports(capsys, monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    e = env.setup(seed=3)
    out = capsys.readouterr().out
    assert e.quick and e.seed == 3 and not e.colab
    assert e.device == env.get_device()
    assert "quick mode=on" in out and f"device={e.device}" in out


def test_device_preference():
    assert env.get_device("cpu") == torch.device("cpu")


def test_setup_limits_cpu_threads(monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        env.setup(verbose=False, cpu_threads=1)
        assert torch.get_num_threads() == 1
        env.setup(verbose=False, cpu_threads=None)
        assert torch.get_num_threads() == 1  # None leaves it alone
    finally:
        torch.set_num_threads(before)
