"""Shared fixtures: tiny reference seq2seq models built on torch's own GRU (never the code
students write), so library tests do not depend on any notebook."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import torch
from torch import nn

os.environ.setdefault("MPLBACKEND", "Agg")
# nbgrader imports setuptools, whose distutils shim asserts that nothing imported the standard
# library's distutils before it: with several modules per pytest-xdist worker, one may have.
# setuptools first, in every worker, so its distutils is the one every later import gets.
import setuptools  # noqa: E402, F401, I001

# What a test run shares between its modules (pytest-xdist runs them in separate processes):
# a folder made by the process that sets A3_TEST_SHARED (pytest-xdist's controller, or pytest
# without it) and removed by it at the end. In it:
# - canary records: many tests grade copies of the same course, whose canary
#   (autograder/marking/canary.py) passes or fails the same for each, so they share one folder of
# canary
#   results (test_grade.py's canary test grades its own);
# - classes graded once for several modules (helpers.graded_tiny_demo).
_SHARED = None
if "A3_TEST_SHARED" not in os.environ:
    _SHARED = tempfile.mkdtemp(prefix="a3-tests-")
    os.environ["A3_TEST_SHARED"] = _SHARED
os.environ.setdefault("A3_CANARY_RECORDS", os.path.join(os.environ["A3_TEST_SHARED"], "canary"))

from course_lib.train import Seq2Seq  # noqa: E402
from course_lib.vocab import VOCAB_SIZE  # noqa: E402


class TinyEncoder(nn.Module):
    def __init__(self, hidden: int = 16):
        super().__init__()
        self.embed = nn.Embedding(VOCAB_SIZE, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, src):
        annotations, h = self.rnn(self.embed(src))  # (N, S, H), (1, N, H)
        return annotations, h[0]


class TinyAttentionDecoder(nn.Module):
    """GRU decoder with dot-product attention over the annotations (returns (N, S, T))."""

    def __init__(self, hidden: int = 16, attention: bool = True):
        super().__init__()
        self.attention = attention
        self.embed = nn.Embedding(VOCAB_SIZE, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(2 * hidden, VOCAB_SIZE)

    def forward(self, tgt_in, annotations, hidden):
        states, _ = self.rnn(self.embed(tgt_in), hidden[None])  # (N, T, H)
        scores = states @ annotations.transpose(1, 2)  # (N, T, S)
        weights = scores.softmax(dim=-1)
        context = weights @ annotations  # (N, T, H)
        logits = self.out(torch.cat([states, context], dim=-1))  # (N, T, V)
        return logits, (weights.transpose(1, 2) if self.attention else None)


@pytest.fixture
def no_quick(monkeypatch):
    """Quick mode off, whatever the environment (CI sets COURSE_QUICK=1)."""
    monkeypatch.setenv("COURSE_QUICK", "0")


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    return Seq2Seq(TinyEncoder(), TinyAttentionDecoder())


# The modules that grade whole classes or run every notebook, slowest first: `make test` and
# `make test-long` run one file per worker at a time (``--dist loadfile
# --no-loadscope-reorder``, Makefile) in this order, so the long ones start first and the quick
# ones fill in around them. The order of their seconds on a fresh clone (`make test`: 283, 249,
# 119, 106, 74, 72, 56, 55, 52, 43 s; `make test-long`: variant sets 400, the real course 220,
# the forged attacks 110). (The attack corpora grade 4 students at a time: many of their
# kernels wait on a time limit.)
SLOW_FIRST = (
    "test_variants", "test_grade_real", "test_sandbox_forged", "test_grade", "test_sandbox",
    "test_shards", "test_gradescope", "test_attacks", "test_browser", "test_release",
    "test_isolation", "test_audit", "test_feedback", "test_canary", "test_notebooks",
    "test_colab_install", "test_setup_cells", "test_report", "test_sharedkernel",
)  # fmt: skip


def pytest_unconfigure(config):
    if _SHARED is not None:
        shutil.rmtree(_SHARED, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The tests of the modules of :data:`SLOW_FIRST` first, in its order; the rest as
    collected (a stable sort: each module's own order is kept)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__, len(SLOW_FIRST)))
