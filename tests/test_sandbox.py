"""Grading safely: a corpus of attack submissions graded by the real pipeline (``make grade``).

A small course of two notebooks: ``1_attention`` (torch, the course_lib checks, five tests of
one point, each checking the same function a different way) and ``2_secret`` (its solution
and hidden test carry marker strings). Every attacker hands in notebook 1 with a wrong but
well-shaped answer (zeros: worth exactly the shape test, 1 point) plus one attack, and
notebook 2 blank. An honest student, the victim, hands in both solved, with a marker in an
answer. The tests assert, per attack: notebook 1 scores no more than its honest worth (1),
the expected flag, no marker in the attacker's outputs, and that the attack really ran; and for
the class: the victim's grades, submission, the instructor sources and the gradebook are
intact. See the README's "Grading safely" for what enforces each line of ``ATTACKS``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from test_grade import ROOT, _sources, autograder, grades, make_course

from autograder import notebooks, sandbox

MARKERS = ("HIDDEN-MARKER-a3f9c1", "SOLUTION-MARKER-77d2", "VICTIM-MARKER-5521")
RAN = "ATTACK-RAN"
HONEST_WORTH = 1.0  # zeros of the right shape pass the shape test only
TOML = """\
[course]
assignment = "a3"
github_repo = "example-org/sandbox-course"
branch = "main"

[grade]
cell_timeout = 15
demo_cell_timeout = 15
student_timeout = 240
jobs = 2

[sandbox]
memory_mb = 3072
processes = 64
file_mb = 32
scratch_mb = 64
output_kb = 64
notebook_seconds = 40

[collect]
pattern = '.*/(?P<student_id>[^/_]+)_(?:LATE_)?\\d+_\\d+_(?P<file_id>[^/]+\\.ipynb)$'
"""


def _meta(grade_id: str, *, solution=False, grade=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution}  # fmt: skip
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _code(grade_id: str, source: str, **kw) -> nbformat.NotebookNode:
    return new_code_cell(textwrap.dedent(source).strip() + "\n", metadata=_meta(grade_id, **kw))


def _test(grade_id: str, visible: str, hidden: str) -> nbformat.NotebookNode:
    source = (
        textwrap.dedent(visible).strip()
        + "\n### BEGIN HIDDEN TESTS\n"
        + textwrap.dedent(hidden).strip()
        + "\n### END HIDDEN TESTS\n"
    )
    return new_code_cell(source, metadata=_meta(grade_id, grade=True, locked=True, points=1))


INPUTS = {  # the visible and the hidden inputs of every test of notebook 1
    "visible": "torch.manual_seed(1)\nq, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)",
    "hidden": "torch.manual_seed(11)\nq, k = torch.randn(3, 2, 6), torch.randn(3, 7, 6)",
}
REF = "ref = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)"
CHECKS = {  # one point each: the same function checked five ways
    "test_shape": "out = check_shape(attention_weights(q, k), ref.shape, 'the weights')",
    "test_allclose": "out = attention_weights(q, k)\n"
    "assert isinstance(out, torch.Tensor), 'a tensor'\n"
    "assert torch.allclose(out, ref, atol=1e-6), 'weights differ from the reference'",
    "test_assert_close": "torch.testing.assert_close(attention_weights(q, k), ref)",
    "test_numpy": "np.testing.assert_allclose(attention_weights(q, k).numpy(), ref.numpy(), "
    "rtol=1e-5, atol=1e-6)",
    "test_check_close": "check_close(attention_weights(q, k), ref, 'the weights')",
}
SETUP = """
import os

import numpy as np
import torch
from course_lib.checks import check_close, check_shape

QUICK = os.environ.get("COURSE_QUICK") == "1" or bool(os.environ.get("NBGRADER_EXECUTION"))
"""
SOLUTION_1 = """
def attention_weights(queries, keys):
    \"\"\"softmax(q k^T / sqrt(H)) over the keys: (N, k, H), (N, S, H) -> (N, k, S).\"\"\"
    ### BEGIN SOLUTION
    # SOLUTION-MARKER-77d2
    scores = torch.bmm(queries, keys.transpose(1, 2)) / queries.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1)
    ### END SOLUTION
"""
SOLUTION_2 = """
def secret_word():
    \"\"\"The password.\"\"\"
    ### BEGIN SOLUTION
    return "open sesame"  # SOLUTION-MARKER-77d2
    ### END SOLUTION
"""


def course_notebooks() -> dict[str, nbformat.NotebookNode]:
    """The two instructor notebooks (nbgrader source)."""
    one = new_notebook(
        cells=[
            new_markdown_cell("# Part 1: attention weights"),
            _code("setup", SETUP, locked=True),
            _code("attention_weights", SOLUTION_1, solution=True),
            *[_test(gid, *(f"{INPUTS[k]}\n{REF}\n{check}" for k in ("visible", "hidden")))
              for gid, check in CHECKS.items()],
        ]
    )  # fmt: skip
    two = new_notebook(
        cells=[
            new_markdown_cell("# Part 2: a secret"),
            _code("setup", SETUP, locked=True),
            _code("secret_word", SOLUTION_2, solution=True),
            _test(
                "test_secret",
                "assert isinstance(secret_word(), str)",
                "# HIDDEN-MARKER-a3f9c1\nassert secret_word() == 'open sesame'",
            ),
        ]
    )
    for nb in (one, two):
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}  # fmt: skip
    return {"1_attention": one, "2_secret": two}


# A walk over the whole visible file system for files holding a marker (what a student who
# wants the hidden tests, the solutions, the gradebook or another answer would do).
HUNT = """
import os
LEAKED = []
SKIP = ("/proc", "/sys", "/dev", "/usr", "/lib", "/bin", "/sbin", "/etc", "/boot", "/var/lib")
for top, dirs, files in os.walk("/"):
    if top.startswith(SKIP) or "site-packages" in top or ".pyenv" in top or ".git" in top:
        dirs[:] = []
        continue
    for name in files:
        if name.endswith((".ipynb", ".db", ".json", ".csv", ".html", ".py", ".txt")):
            try:
                with open(os.path.join(top, name), "rb") as fh:
                    data = fh.read(20_000_000)
            except OSError:
                continue
            at = data.find(b"MARKER-")
            if at >= 0:
                LEAKED.append(os.path.join(top, name))
                print(data[max(0, at - 20) : at + 30])
print("found", LEAKED)
"""
ZEROS = """
def attention_weights(queries, keys):
    return torch.zeros(queries.shape[0], queries.shape[1], keys.shape[1])
"""

# name: (attack code run before the wrong answer, flags expected on notebook 1)
ATTACKS: dict[str, tuple[str, set[str]]] = {
    "read-course-files": (HUNT, set()),
    "read-known-paths": (
        """
        import glob
        for pattern in ["/work/*/solutions/*/*.ipynb", "/work/*/autograder/gradebook.db",
                        "/tmp/pytest-of-*/*/*/solutions/a3/*", "/tmp/pytest-of-*/*/*/autograder/*",
                        "../../../source/a3/*.ipynb", "../../../submitted/*/a3/*.ipynb",
                        "../../../gradebook.db", os.path.expanduser("~/*")]:
            for path in glob.glob(pattern):
                try:
                    print(path, open(path, "rb").read()[:10_000_000].count(b"MARKER-"))
                except OSError as err:
                    print(path, err)
        """,
        set(),
    ),
    "write-outside": (
        """
        import glob
        from pathlib import Path
        for folder in [Path.cwd().parent, Path.cwd().parents[1], Path.home(), Path("/tmp"),
                       *map(Path, glob.glob("/tmp/pytest-of-*/*/*/autograder")), Path("/var/tmp")]:
            for name in ["PWNED.txt", "gradebook.db"]:
                try:
                    (folder / name).write_text("pwned")
                    print("wrote", folder / name)
                except OSError as err:
                    print("refused", folder / name, type(err).__name__)
        for path in glob.glob("/tmp/pytest-of-*/*/*/autograder/**/*.ipynb", recursive=True):
            try:
                Path(path).write_text("{}")
                print("overwrote", path)
            except OSError as err:
                print("refused", path, type(err).__name__)
        """,
        set(),
    ),
    "network": (  # urllib: the scan flags socket, not this
        """
        import urllib.request
        for url in ["http://1.1.1.1", "http://8.8.8.8:53", "http://127.0.0.1:22", "https://pypi.org"]:
            try:
                urllib.request.urlopen(url, timeout=3).close()
                print("NETWORK-REACHED", url)
            except OSError as err:
                print("no network", url, type(err).__name__)
        """,
        set(),
    ),
    "infinite-loop": ("while True:\n    pass", {"timeout"}),
    "slow-cells": ("import time\ntime.sleep(14)", {"timeout"}),  # 3 such cells: notebook limit
    "fork-bomb": (  # through torch.multiprocessing: the scan flags os.fork, not this
        """
        import time
        import torch.multiprocessing as tmp
        children = []
        try:
            for _ in range(10_000):
                child = tmp.get_context("fork").Process(target=time.sleep, args=(3600,))
                child.start()
                children.append(child)
        except OSError as err:
            print("fork refused after", len(children), type(err).__name__)
        for child in children:
            child.kill()
        """,
        set(),
    ),
    "memory-hog": (
        """
        hog = []
        try:
            while True:
                hog.append(bytearray(256 * 2**20))
        except MemoryError:
            print("memory refused after", len(hog) * 256, "MB")
        del hog
        """,
        set(),
    ),
    "disk-fill": (
        """
        written = 0
        try:
            for i in range(1000):
                with open(f"fill{i}.bin", "wb") as fh:
                    fh.write(b"0" * 16 * 2**20)
                written += 16
        except OSError as err:
            print("disk refused after", written, "MB", type(err).__name__)
        """,
        set(),
    ),
    "output-flood": ("for _ in range(20_000):\n    print('x' * 1000)", set()),
    "kill-grader": (  # through psutil: the scan flags os.kill and signal, not this
        """
        import psutil
        me = psutil.Process()
        for proc in psutil.process_iter():
            if proc.pid != me.pid:
                try:
                    proc.kill()
                    print("killed", proc.pid, proc.name())
                except psutil.Error as err:
                    print("kill refused", proc.pid, type(err).__name__)
        """,
        set(),
    ),
    "signal-grader": (
        """
        import signal
        for target in [os.getppid(), 1, -1]:
            os.kill(target, signal.SIGKILL)
        """,
        {"tampered"},
    ),
    "crash-kernel": ("import faulthandler\nfaulthandler._sigsegv()", {"failed"}),
    "exit-kernel": ("import sys\ntry:\n    sys.exit(3)\nfinally:\n    os._exit(3)", {"tampered"}),
    "patch-allclose": ("torch.allclose = lambda *args, **kwargs: True", {"tampered"}),
    "patch-assert-close": (
        "torch.testing.assert_close = lambda *args, **kwargs: None",
        {"tampered"},
    ),
    "patch-numpy-testing": (
        "np.testing.assert_allclose = lambda *args, **kwargs: None",
        {"tampered"},
    ),
    "patch-builtins": (
        "import builtins\nbuiltins.isinstance = lambda *args: True\n"
        "isinstance = builtins.isinstance",
        {"tampered"},
    ),
    "patch-checks": (
        """
        import course_lib.checks as checks
        checks.check_close = lambda *args, **kwargs: None
        check_close = checks.check_close
        def check_shape(value, shape, what=""):
            return value
        """,
        {"tampered"},
    ),
    "patch-softmax": (
        "torch.softmax = lambda x, dim=None: torch.zeros_like(x)\n"
        "torch.nn.functional.softmax = torch.softmax",
        {"tampered"},
    ),
    "patch-dynamic": (
        "setattr(torch, 'all' + 'close', lambda *a, **k: True)\n"
        "exec('import numpy; numpy.testing.assert_allclose = print')",
        {"tampered"},
    ),
    "eq-trick": (
        """
        class Anything(torch.Tensor):
            def __eq__(self, other):
                return True
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if func in (torch.allclose, torch.equal):
                    return True
                return super().__torch_function__(func, types, args, kwargs or {})
        _zeros = attention_weights
        def attention_weights(queries, keys):
            return _zeros(queries, keys).as_subclass(Anything)
        """,
        {"tampered"},
    ),
    "cached-outputs": (
        """
        def attention_weights(queries, keys):
            cache = torch.load("expected.pt")  # shipped beside the notebook
            return cache[tuple(queries.shape)]
        """,
        set(),
    ),
}
LAST = {"eq-trick", "cached-outputs"}  # these redefine the answer: they go after ZEROS


def _attack_notebook(src, name: str) -> nbformat.NotebookNode:
    code, _ = ATTACKS[name]
    body = textwrap.dedent(code).strip()
    nb = nbformat.from_dict(src.released["1_attention"])
    cell = next(c for c in nb.cells if notebooks.grade_id(c) == "attention_weights")
    parts = [ZEROS.strip(), body] if name in LAST else [body, ZEROS.strip()]
    cell.source = "\n".join(parts) + f"\nprint({RAN!r})\n"
    if name == "slow-cells":  # three cells of 14 s: the 40 s notebook limit stops the third
        index = nb.cells.index(cell)
        for _ in range(2):
            nb.cells.insert(index, new_code_cell(body + f"\nprint({RAN!r})\n"))
    return nb


def _cache_file(tmp: Path) -> bytes:
    """What a cheater precomputed: the right weights for the visible and hidden inputs."""
    import torch

    cache = {}
    for inputs in INPUTS.values():
        scope: dict = {"torch": torch}
        exec(inputs + "\n" + REF, scope)  # noqa: S102 (the test's own code)
        cache[tuple(scope["q"].shape)] = scope["ref"]
    path = tmp / "expected.pt"
    torch.save(cache, path)
    return path.read_bytes()


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Grade the victim and every attacker; return what the tests look at."""
    assert sandbox.probe().isolated, f"no sandbox on this machine: {sandbox.probe().reason}"
    root = make_course(tmp_path_factory.mktemp("attacks"), toml=TOML)
    for name, nb in course_notebooks().items():
        nbformat.write(nb, root / "solutions" / "a3" / f"{name}.ipynb")
    src, gdir = _sources(root)

    def hand_in(student: str, files: dict[str, bytes]) -> None:
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)

    victim = src.solved("1_attention")
    victim.cells[2].source += "# VICTIM-MARKER-5521\n"
    solved2 = nbformat.writes(src.solved("2_secret")).encode()
    hand_in("victim", {"1_attention.ipynb": nbformat.writes(victim).encode(),
                       "2_secret.ipynb": solved2})  # fmt: skip
    blank2 = nbformat.writes(src.released["2_secret"]).encode()
    cache = _cache_file(tmp_path_factory.mktemp("cache"))
    for name in ATTACKS:
        files = {"1_attention.ipynb": nbformat.writes(_attack_notebook(src, name)).encode(),
                 "2_secret.ipynb": blank2}  # fmt: skip
        if name == "cached-outputs":
            files["expected.pt"] = cache
        hand_in(f"a-{name}", files)
    before = {
        "solutions": _digest(root / "solutions"),
        "source": _digest(gdir.source),
        "victim": _digest(gdir.submitted / "victim"),
    }
    proc = autograder(root, "grade", "--jobs", "2", timeout=1800)
    return root, gdir, before, proc.stdout


def _outputs(gdir: Path, student: str, name: str) -> str:
    """Every output text of a student's graded notebook (not the sources)."""
    path = gdir.root / "autograded" / student / "a3" / f"{name}.ipynb"
    if not path.exists():
        return ""
    return json.dumps([c.get("outputs", []) for c in notebooks.read(path).cells])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_gains_nothing(attacked, name):
    root, gdir, _, _ = attacked
    rows = grades(root)
    row = rows[(f"a-{name}", "1_attention")]
    flags = set(row["flags"].split(";")) - {"ok"}
    assert float(row["autograded"]) <= HONEST_WORTH, (name, row)
    assert ATTACKS[name][1] <= flags, (name, row["flags"], row["notes"])
    assert float(rows[(f"a-{name}", "2_secret")]["autograded"]) == 0
    outputs = _outputs(gdir, f"a-{name}", "1_attention")
    if "failed" not in ATTACKS[name][1]:  # a killed kernel leaves no graded copy
        truncated = "output truncated by the autograder" in outputs  # RAN came after the cap
        assert RAN in outputs or "timeout" in flags or truncated, f"{name}: the attack did not run"
    for marker in MARKERS:
        assert marker not in outputs, f"{name} read {marker}"
    assert "NETWORK-REACHED" not in outputs


@pytest.mark.slow
def test_tampering_is_explained(attacked):
    root, *_ = attacked
    rows = grades(root)
    notes = rows[("a-patch-allclose", "1_attention")]["notes"]
    assert "torch.allclose" in notes, notes
    assert "exec" in rows[("a-patch-dynamic", "1_attention")]["notes"]
    assert "the kernel died" in rows[("a-crash-kernel", "1_attention")]["notes"]


@pytest.mark.slow
def test_attacks_leave_the_class_intact(attacked):
    root, gdir, before, out = attacked
    rows = grades(root)
    assert float(rows[("victim", "1_attention")]["autograded"]) == 5
    assert float(rows[("victim", "2_secret")]["autograded"]) == 1
    assert rows[("victim", "1_attention")]["flags"] == "ok"
    assert len({s for s, _ in rows}) == len(ATTACKS) + 1  # every student graded
    assert before["solutions"] == _digest(root / "solutions")
    assert before["source"] == _digest(gdir.source)
    assert before["victim"] == _digest(gdir.submitted / "victim")
    con = sqlite3.connect(gdir.root / "gradebook.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        con.close()
    assert not list(root.rglob("PWNED*")), "an attack wrote into the course"
    assert "sandbox: bubblewrap" in out


@pytest.mark.slow
def test_output_flood_is_truncated(attacked):
    _, gdir, _, _ = attacked
    outputs = _outputs(gdir, "a-output-flood", "1_attention")
    assert "output truncated" in outputs
    assert len(outputs) < 200_000


# ---------------------------------------------------------------------------------------------
# Without isolation (no bubblewrap, or disabled): grading still runs, says so, flags nothing
# for it; the limits and the tampering scan still apply.


@pytest.mark.slow
def test_grading_without_isolation_says_so(tmp_path):
    root = make_course(tmp_path, toml=TOML.replace("[sandbox]", "[sandbox]\nenabled = false"))
    for name, nb in course_notebooks().items():
        nbformat.write(nb, root / "solutions" / "a3" / f"{name}.ipynb")
    src, gdir = _sources(root)
    for student, one in [
        ("victim", src.solved("1_attention")),
        ("a-patch-allclose", _attack_notebook(src, "patch-allclose")),
    ]:
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        (folder / "1_attention.ipynb").write_text(nbformat.writes(one))
        (folder / "2_secret.ipynb").write_text(nbformat.writes(src.solved("2_secret")))
    out = autograder(root, "grade", "--jobs", "2").stdout
    assert "sandbox: NOT ISOLATED (disabled in course.toml)" in out
    assert "not enforced" in (root / "autograder" / "out" / "summary.txt").read_text()
    rows = grades(root)
    assert rows[("victim", "1_attention")]["flags"] == "ok"
    assert rows[("victim", "2_secret")]["flags"] == "ok"
    assert float(rows[("victim", "1_attention")]["autograded"]) == 5
    assert rows[("a-patch-allclose", "1_attention")]["flags"] == "tampered"
    assert float(rows[("a-patch-allclose", "1_attention")]["autograded"]) <= HONEST_WORTH


def test_kernel_command_isolates_and_limits(tmp_path):
    (tmp_path / "secret").mkdir()
    hide = (str(tmp_path / "secret"), "/no/such/folder")
    limits = sandbox.Limits(memory_mb=100, processes=7, file_mb=3, scratch_mb=5, hide=hide)
    status = sandbox.Status(isolated=True, unprivileged=True)
    kernel = ["python", "-m", "ipykernel_launcher", "-f", "conn.json"]
    cmd = sandbox.kernel_command(kernel, tmp_path / "run", limits, status, uid=61234)
    assert cmd[0] == "bwrap" and cmd[-len(kernel) :] == kernel
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent"} <= set(cmd)
    shown = [Path(cmd[i + 1]) for i, arg in enumerate(cmd) if arg in ("--ro-bind", "--bind")]
    assert "/usr" in map(str, shown) and Path(sys.prefix).resolve() in shown
    # only the system, Python, course_lib and the kernel's own folder: not /, /work, the repo
    allowed = [Path(p) for p in sandbox.SYSTEM] + sandbox.shown_paths() + [tmp_path / "run"]
    assert all(p in allowed for p in shown), shown
    assert not any(p in (Path("/"), ROOT, ROOT.parent) for p in shown)
    tmpfs = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--tmpfs"]
    assert tmpfs == ["/tmp", str(tmp_path / "secret")]
    tail = cmd[cmd.index("--", cmd.index("--chdir")) :]
    assert "--reuid=61234" in tail and f"--as={100 * 2**20}" in tail
    assert f"--fsize={3 * 2**20}" in tail and "--nproc=7" in tail


def test_kernel_command_without_isolation_keeps_limits(tmp_path):
    limits = sandbox.Limits(memory_mb=100, processes=7, file_mb=3)
    status = sandbox.Status(isolated=False, unprivileged=False, reason="no bwrap")
    cmd = sandbox.kernel_command(["python"], tmp_path, limits, status, uid=None)
    assert cmd[0] == "prlimit" and "bwrap" not in cmd and cmd[-1] == "python"
    assert f"--as={100 * 2**20}" in cmd and "--core=0" in cmd
    text = "\n".join(status.describe(limits))
    assert "NOT ISOLATED (no bwrap)" in text and "not enforced: process limit" in text


@pytest.mark.parametrize(
    "table, error",
    [
        ("memory_mb = -1", "positive integers"),
        ("memory = 100", "unknown [sandbox] settings"),
        ("notebook_seconds = 'long'", "positive integers"),
    ],
)
def test_bad_sandbox_settings_are_refused(tmp_path, table, error):
    from autograder import config

    head, rest = TOML.split("[sandbox]")
    toml = f"{head}[sandbox]\n{table}\n\n[collect]{rest.split('[collect]')[1]}"
    (tmp_path / "course.toml").write_text(toml)
    with pytest.raises(config.ConfigError, match=re.escape(error)):
        config.load(tmp_path)
