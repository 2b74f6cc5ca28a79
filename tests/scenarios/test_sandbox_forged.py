"""The attacks of ``tests/scenarios/test_sandbox.py`` that forge a score inside the kernel,
graded again with the advisory scan off (``[grade] tamper_scan = false``): they run in the kernel,
and still get no more than the control, and nothing notes them (no ``review``). Here every
notebook's kernel is a process of its own (``[sandbox] fork_kernels = false``), the other mode of
the sandbox."""

from __future__ import annotations

import nbformat
import pytest
from test_sandbox import (
    FORGERS,
    HONEST_WORTH,
    RAN,
    TOML,
    _attack_notebook,
    _course,
    _hand_in,
    _outputs,
)

from helpers import autograder, grades


@pytest.fixture(scope="module")
def forged(tmp_path_factory):
    """The score forgers graded with the tamper scan off: their attacks run in the kernel."""
    toml = TOML.replace("jobs = 2", "jobs = 2\ntamper_scan = false")
    toml = toml.replace("fork_kernels = true", "fork_kernels = false")
    root, src, gdir = _course(tmp_path_factory.mktemp("forged"), toml=toml)
    for name in FORGERS:
        files = {"1_attention.ipynb": nbformat.writes(_attack_notebook(src, name)).encode()}
        _hand_in(gdir, f"a-{name}", files)
    autograder(root, "grade", "--jobs", "4", timeout=1800)
    return root, gdir


@pytest.mark.slow
@pytest.mark.long  # the attack corpus graded a second time, with the scan off
@pytest.mark.parametrize("name", FORGERS)
def test_forged_scores_gain_nothing_without_the_scan(forged, name):
    """The attack runs in the kernel (no scan) and still gets no more than the control."""
    root, gdir = forged
    row = grades(root)[(f"a-{name}", "1_attention")]
    assert float(row["autograded"]) <= HONEST_WORTH, (name, row)
    assert "review" not in row["flags"], row  # the scan was off: nothing noted
    outputs = _outputs(gdir, f"a-{name}", "1_attention")
    broke = {"failed", "timeout"} & set(row["flags"].split(";"))  # it took the kernel down
    assert RAN in outputs or "blanked" in outputs or broke, f"{name}: the attack did not run"
