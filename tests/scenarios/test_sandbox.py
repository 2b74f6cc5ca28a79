"""Grading safely: a corpus of attack submissions graded by the real pipeline (``make grade``).

A small course of two notebooks: ``1_attention`` (torch; five tests of one point, whose checks
ask the student's kernel from the grader: the shape, the values for inputs of two sizes, a
softmax over the keys, a single key) and ``2_secret`` (its solution and judge carry marker
strings). Every attacker hands in notebook 1 with a wrong but well-shaped answer (zeros: worth
exactly the shape test, 1 point, what the control student ``control-zeros`` gets with no attack)
plus one attack, and no notebook 2 (the control hands it in blank). An honest student, the
victim, hands in both solved, with a marker in an answer. The tests assert, per attack: notebook
1 scores no more than the control, the expected flags, no marker, no secret of the grader's
environment and no host path in the attacker's outputs, and that the attack really ran; and for
the class: the victim's grades, submission, the instructor sources and the gradebook are intact.
Each student's kernels are forked from one zygote in their sandbox (``[sandbox] fork_kernels``,
as the real course grades; ``tests/scenarios/test_sandbox_forged.py`` grades in kernels of their
own). Every attack runs as handed in: the advisory scan (``tamper.py``) only notes what reaches the
machinery (the flag ``review``, for the instructor), so the judge alone must give them nothing.
The attacks that forge a score inside the kernel are graded a second time with the scan off
(``[grade] tamper_scan = false``, ``tests/scenarios/test_sandbox_forged.py``): the same
outcome, and no ``review``. See the README's
"Grading safely" for what enforces each line of ``ATTACKS``."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.course import notebooks, spec
from autograder.handin import tamper
from autograder.kernels import sandbox
from helpers import ENV, ROOT, autograder, course_sources, grades, make_course

MARKERS = ("JUDGE-MARKER-a3f9c1", "SOLUTION-MARKER-77d2", "VICTIM-MARKER-5521")
SECRET = "GRADER-TOKEN-0c1d2e"  # exported in the shell that runs `make grade`
RAN = "ATTACK-RAN"
HONEST_WORTH = 1.0  # zeros of the right shape pass the shape test only (the control's score)
TOML = """\
[course]
assignment = "a3"
github_repo = "nmt-course/sandbox-course"
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
fork_kernels = true
preload = ["torch"]

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


def _test(grade_id: str, visible: str) -> nbformat.NotebookNode:
    """A test cell: its docstring and visible checks (its checks are in the judge cell after)."""
    source = f'"""{grade_id}."""\n' + textwrap.dedent(visible).strip() + "\n"
    return new_code_cell(source, metadata=_meta(grade_id, grade=True, locked=True, points=1))


def _judge(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(textwrap.dedent(source).strip() + "\n")
    cell.metadata["tags"] = ["judge"]
    return cell


JUDGE_SETUP = """
import torch

from course_lib.checks import check_close, check_distribution, check_shape
from course_lib.grading.judging import check


def reference(q, keys):
    return torch.softmax(q @ keys.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)  # (N, k, S)
"""
CHECKS = {  # one point each: grade id -> its checks (asking the student's kernel)
    "test_shape": """
        @check("the weights have shape (N, k, S)", points=1)
        def _(student, rng):
            for n, k, s, h in [(2, 3, 5, 4), (3, 2, 7, 6)]:
                weights = student.attention_weights(rng.randn(n, k, h), rng.randn(n, s, h))
                check_shape(weights, (n, k, s), "the weights")
    """,
    "test_visible": """
        @check("the weights of inputs of the visible check's sizes", points=1)
        def _(student, rng):
            q, keys = rng.randn(2, 3, 4), rng.randn(2, 5, 4)
            check_close(student.attention_weights(q, keys), reference(q, keys), "the weights")
    """,
    "test_hidden": """
        @check("the weights of inputs of other sizes", points=1)
        def _(student, rng):
            q, keys = rng.randn(3, 2, 6), rng.randn(3, 7, 6)
            check_close(student.attention_weights(q, keys), reference(q, keys), "the weights")
    """,
    "test_softmax": """
        @check("each query's weights sum to 1 over the keys", points=1)
        def _(student, rng):
            weights = student.attention_weights(rng.randn(3, 2, 6), rng.randn(3, 7, 6))
            check_distribution(weights, dim=2, what="the weights")
    """,
    "test_one_key": """
        @check("a single key gets weight 1", points=1)
        def _(student, rng):
            weights = student.attention_weights(rng.randn(2, 3, 4), rng.randn(2, 1, 4))
            check_close(weights, torch.ones(2, 3, 1), "the weights")
    """,
}
VISIBLE = """
q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
check_shape(attention_weights(q, k), (2, 3, 5))
"""
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
    """The two instructor notebooks (nbgrader source, judges included)."""
    tests = []
    for gid, judge in CHECKS.items():
        tests += [_test(gid, VISIBLE), _judge(judge)]
    one = new_notebook(
        cells=[
            new_markdown_cell("# Part 1: attention weights"),
            _code("setup", SETUP, locked=True),
            _judge(JUDGE_SETUP),
            _code("attention_weights", SOLUTION_1, solution=True),
            *tests,
        ]
    )
    two = new_notebook(
        cells=[
            new_markdown_cell("# Part 2: a secret"),
            _code("setup", SETUP, locked=True),
            _code("secret_word", SOLUTION_2, solution=True),
            _test("test_secret", "assert isinstance(secret_word(), str)"),
            _judge(
                """
                from course_lib.grading.judging import check


                @check("the password", points=1)
                def _(student):
                    assert student.secret_word() == "open sesame"  # JUDGE-MARKER-a3f9c1
                """
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

# name: (attack code run before the wrong answer, flags expected on notebook 1: ``review`` where
# the advisory scan notes the attack; it runs all the same)
ATTACKS: dict[str, tuple[str, set[str]]] = {
    "read-course-files": (HUNT, set()),
    "read-known-paths": (
        """
        import glob
        for pattern in ["/work/*/solutions/*/*.ipynb", "/work/*/autograder/class/gradebook.db",
                        "/tmp/pytest-of-*/*/*/solutions/a3/*", "/tmp/pytest-of-*/*/*/autograder/*",
                        "/tmp/pytest-of-*/*/*/autograder/class/gradebook.db",
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
                       *map(Path, glob.glob("/tmp/pytest-of-*/*/*/autograder")),
                       *map(Path, glob.glob("/tmp/pytest-of-*/*/*/autograder/class")),
                       Path("/var/tmp")]:
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
    "network": (  # urllib: the scan notes nothing here
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
    "fork-bomb": (  # through torch.multiprocessing: the scan notes nothing here
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
    "kill-grader": (  # through psutil: the scan notes os.kill and signal, not this
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
        {"review"},
    ),
    "crash-kernel": ("import faulthandler\nfaulthandler._sigsegv()", {"failed"}),
    "exit-kernel": (  # the kernel exits: nothing graded
        "import sys\ntry:\n    sys.exit(3)\nfinally:\n    os._exit(3)",
        {"review", "failed"},
    ),
    "patch-allclose": ("torch.allclose = lambda *args, **kwargs: True", {"review"}),
    "patch-assert-close": (
        "torch.testing.assert_close = lambda *args, **kwargs: None",
        {"review"},
    ),
    "patch-numpy-testing": (
        "np.testing.assert_allclose = lambda *args, **kwargs: None",
        {"review"},
    ),
    "patch-builtins": (
        "import builtins\nbuiltins.isinstance = lambda *args: True\n"
        "isinstance = builtins.isinstance",
        {"review"},
    ),
    "patch-checks": (
        """
        import course_lib.checks as checks
        checks.check_close = lambda *args, **kwargs: None
        check_close = checks.check_close
        def check_shape(value, shape, what=""):
            return value
        """,
        {"review"},
    ),
    "patch-softmax": (
        "torch.softmax = lambda x, dim=None: torch.zeros_like(x)\n"
        "torch.nn.functional.softmax = torch.softmax",
        {"review"},
    ),
    "patch-dynamic": (
        "setattr(torch, 'all' + 'close', lambda *a, **k: True)\n"
        "exec('import numpy; numpy.testing.assert_allclose = print')",
        {"review"},
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
        {"review"},
    ),
    "cached-outputs": (
        """
        def attention_weights(queries, keys):
            cache = torch.load("expected.pt")  # shipped beside the notebook
            return cache[tuple(queries.shape)]
        """,
        set(),
    ),
    # --- forging a score inside the kernel (the judge decides outside it) --------------------
    "automagic-display-all": (  # IPython's automagic: a %config without %, in its own cell
        "#%% cell\nconfig ZMQInteractiveShell.ast_node_interactivity = 'all'",
        {"review"},
    ),
    "percent-config": (
        "#%% cell\n%config InteractiveShell.ast_node_interactivity = 'all'",
        {"review"},
    ),  # fmt: skip
    "displayhook": (  # every call of the answer shows a result, as a passing cell would
        """
        import sys
        _zeros = attention_weights
        def attention_weights(queries, keys):
            sys.displayhook("forged result")
            return _zeros(queries, keys)
        """,
        {"review"},
    ),
    "shell-singleton-transformer": (  # the shell through its class: blank what the grader runs
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.input_transformers_post.append(
            lambda lines: ["print('blanked')\\n"] if any("remote" in l for l in lines) else lines
        )
        """,
        {"review"},
    ),
    "event-forged-records": (  # after every cell, records that claim uniform weights
        """
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.display import publish_display_data
        import course_lib.grading.wire as w
        def forge(*args):
            for key, shape in [("visible/weights", (2, 3, 5)), ("hidden/weights", (3, 2, 7)),
                               ("one key/weights", (2, 3, 1))]:
                value = w.encode(torch.full(shape, 1.0 / shape[-1]))
                publish_display_data({"application/vnd.a3.probe+json": {"key": key,
                                                                         "value": value}})
        InteractiveShell.instance().events.register("pre_run_cell", forge)
        """,
        {"review"},
    ),
    "run-cell-wrapper": (  # what the grader runs in the kernel replaced by nothing
        """
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        original = shell.run_cell
        def run_cell(raw_cell, *args, **kwargs):
            return original("None" if "remote" in raw_cell else raw_cell, *args, **kwargs)
        shell.run_cell = run_cell
        """,
        {"review"},
    ),
    "settrace-locals": (  # rewrite what the dispatcher sends back, on its way out
        """
        import sys
        def tracer(frame, event, arg):
            if frame.f_code.co_name == "_out" and "value" in frame.f_locals:
                frame.f_locals["value"] = torch.ones(2, 3, 5) / 5
            return tracer
        sys.settrace(tracer)
        """,
        {"review"},
    ),
    "code-swap": (  # the dispatcher made to answer nothing
        """
        import course_lib.grading.dispatch as r
        r.answer.__code__ = (lambda request, namespace: None).__code__
        """,
        {"review"},
    ),
    "frame-walk-reference": (  # look up the callers' frames for an expected value
        """
        import sys
        _zeros = attention_weights
        def attention_weights(queries, keys):
            frame = sys._getframe(1)
            while frame is not None:
                for scope in (frame.f_locals, frame.f_globals):
                    for name in ("ref", "expected", "reference", "expected_weights"):
                        found = scope.get(name)
                        if isinstance(found, torch.Tensor):
                            return found
                frame = frame.f_back
            return _zeros(queries, keys)
        """,
        {"review"},
    ),
    "builtins-from-traceback": (
        """
        try:
            1 / 0
        except ZeroDivisionError as err:
            err.__traceback__.tb_frame.f_builtins["isinstance"] = lambda *args: True
        """,
        {"review"},
    ),
    "dunder-from-strings": (
        'setattr(torch.Tensor, "__" + "eq" + "__", lambda a, b: True)',
        {"review"},
    ),
    "class-patch": (
        "torch.zeros(1).__class__.sum = lambda *args, **kwargs: torch.tensor(1.0)",
        {"review"},
    ),
    # --- what the kernel can see of the grader's machine ---------------------------------------
    "read-grader-env": (
        """
        print(dict(os.environ))
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    print(pid, open(f"/proc/{pid}/cmdline").read().replace(chr(0), " "))
                except OSError:
                    pass
        print(open("/proc/self/mountinfo").read())
        """,
        set(),
    ),
    "import-the-grader": (  # it is installed in the venv (editable): the sandbox hides it
        """
        import importlib.util
        print("grader importable:", importlib.util.find_spec("autograder") is not None)
        try:
            import autograder.course.config
            for path in autograder.course.config.REPO_ROOT.rglob("*.json"):
                print(path, open(path, "rb").read()[:10_000_000].count(b"MARKER-"))
        except Exception as err:
            print("the grader:", type(err).__name__)
        """,
        set(),
    ),
    "fill-runtime-folder": (  # the kernel's own runtime folder (its sockets) and everything else
        """
        for top in ["/tmp/.kernel", "/tmp/work", "/tmp", "/", "/dev", "/run"]:
            written = 0
            try:
                with open(os.path.join(top, "fill.bin"), "wb") as fh:
                    for _ in range(100):
                        fh.write(b"0" * 2**20)
                        written += 1
            except OSError as err:
                print(top, "refused after", written, "MB", type(err).__name__)
        """,
        set(),
    ),
    "html-script-output": (  # nothing a student writes may run in the instructor's browser
        """
        from IPython.display import HTML, display
        display(HTML("<script>document.title='PWNED-SCRIPT'</script><b>bold</b>"))
        """,
        set(),
    ),
}
LAST = {  # these redefine the answer: they go after ZEROS
    "eq-trick", "cached-outputs", "displayhook", "frame-walk-reference",
}  # fmt: skip
FORGERS = [  # forge a score inside the kernel: graded again with the scan off, so they run
    "automagic-display-all", "percent-config", "displayhook", "shell-singleton-transformer",
    "event-forged-records", "run-cell-wrapper", "settrace-locals", "code-swap",
    "frame-walk-reference", "builtins-from-traceback", "dunder-from-strings", "class-patch",
    "patch-allclose", "patch-checks", "eq-trick", "patch-dynamic",
]  # fmt: skip


def _attack_notebook(src, name: str) -> nbformat.NotebookNode:
    """Notebook 1 answered with zeros plus the attack ``name`` (in a cell of its own before the
    answer when it starts with ``#%% cell``: IPython's automagic works on one-line cells)."""
    code, _ = ATTACKS[name]
    body = textwrap.dedent(code).strip()
    nb = nbformat.from_dict(src.released["1_attention"])
    cell = next(c for c in nb.cells if spec.grade_id(c) == "attention_weights")
    if body.startswith("#%% cell\n"):
        nb.cells.insert(nb.cells.index(cell), new_code_cell(body.split("\n", 1)[1]))
        cell.source = ZEROS.strip() + f"\nprint({RAN!r})\n"
        return nb
    parts = [ZEROS.strip(), body] if name in LAST else [body, ZEROS.strip()]
    cell.source = "\n".join(parts) + f"\nprint({RAN!r})\n"
    if name == "slow-cells":  # three cells of 14 s: the 40 s notebook limit stops the third
        index = nb.cells.index(cell)
        for _ in range(2):
            nb.cells.insert(index, new_code_cell(body + f"\nprint({RAN!r})\n"))
    return nb


def _cache_file(tmp: Path) -> bytes:
    """What a cheater precomputed: right weights for inputs they guessed (the grader draws its
    own)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    cache = {}
    for n, k, s, h in [(2, 3, 5, 4), (3, 2, 7, 6), (2, 3, 1, 4)]:
        q = torch.randn(n, k, h, generator=generator)
        keys = torch.randn(n, s, h, generator=generator)
        cache[(n, k, h)] = torch.softmax(q @ keys.transpose(1, 2) / h**0.5, dim=-1)
    path = tmp / "expected.pt"
    torch.save(cache, path)
    return path.read_bytes()


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _course(tmp: Path, toml: str = TOML):
    root = make_course(tmp, toml=toml)
    for name, nb in course_notebooks().items():
        nbformat.write(nb, root / "solutions" / "a3" / f"{name}.ipynb")
    return root, *course_sources(root)


def _hand_in(gdir, student: str, files: dict[str, bytes]) -> None:
    folder = gdir.submitted / student / "a3"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


def _zeros(src) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(src.released["1_attention"])
    cell = next(c for c in nb.cells if spec.grade_id(c) == "attention_weights")
    cell.source = ZEROS.strip() + "\n"
    return nb


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Grade the victim, the control and every attacker, with a secret exported in the
    grader's environment; return what the tests look at."""
    assert sandbox.probe().isolated, f"no sandbox on this machine: {sandbox.probe().reason}"
    root, src, gdir = _course(tmp_path_factory.mktemp("attacks"))
    victim = src.solved("1_attention")
    answer = next(c for c in victim.cells if spec.grade_id(c) == "attention_weights")
    answer.source += "# VICTIM-MARKER-5521\n"
    solved2 = nbformat.writes(src.solved("2_secret")).encode()
    _hand_in(gdir, "victim", {"1_attention.ipynb": nbformat.writes(victim).encode(),
                              "2_secret.ipynb": solved2})  # fmt: skip
    blank2 = nbformat.writes(src.released["2_secret"]).encode()
    _hand_in(gdir, "control-zeros", {"1_attention.ipynb": nbformat.writes(_zeros(src)).encode(),
                                     "2_secret.ipynb": blank2})  # fmt: skip
    cache = _cache_file(tmp_path_factory.mktemp("cache"))
    for name in ATTACKS:  # notebook 2 not handed in: the attacks run in notebook 1's kernel
        files = {"1_attention.ipynb": nbformat.writes(_attack_notebook(src, name)).encode()}
        if name == "cached-outputs":
            files["expected.pt"] = cache
        _hand_in(gdir, f"a-{name}", files)
    before = {
        "solutions": _digest(root / "solutions"),
        "source": _digest(gdir.source),
        "victim": _digest(gdir.submitted / "victim"),
    }
    env = {**ENV, "GRADER_API_TOKEN": SECRET}
    proc = autograder(root, "grade", "--jobs", "4", timeout=1800, env=env)
    return root, gdir, before, proc.stdout


def _outputs(gdir: Path, student: str, name: str) -> str:
    """Every output text of a student's graded notebook (not the sources)."""
    path = gdir.root / "autograded" / student / "a3" / f"{name}.ipynb"
    if not path.exists():
        return ""
    return json.dumps([c.get("outputs", []) for c in notebooks.read(path).cells])


@pytest.mark.slow
def test_the_control_gets_the_honest_worth(attacked):
    root, *_ = attacked
    rows = grades(root)
    assert float(rows[("control-zeros", "1_attention")]["autograded"]) == HONEST_WORTH
    assert rows[("control-zeros", "1_attention")]["flags"] == "ok"


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
    feedback = gdir.root / "feedback" / f"a-{name}" / "a3"
    pages = "".join(p.read_text() for p in feedback.glob("*.html")) if feedback.is_dir() else ""
    assert "NETWORK-REACHED" not in outputs
    for text in (outputs, pages):  # the pages also show the attack's code: no output strings
        for marker in MARKERS:
            assert marker not in text, f"{name} read {marker}"
        assert SECRET not in text, f"{name}: the grader's environment reached the student"
        assert str(gdir.root.parent) not in text, f"{name}: a host path of the course is shown"
        assert "a3-sbx-" not in text, f"{name}: the grader's runtime folder is shown"
        assert "<script>document.title" not in text, f"{name}: a script reached a page"


@pytest.mark.slow
def test_review_notes_name_the_rule_never_the_code(attacked):
    root, *_ = attacked
    rows = grades(root)
    patch = f"review: cell 3 line 1: {tamper.RULES['patch']}"
    notes = rows[("a-patch-allclose", "1_attention")]["notes"]
    assert notes.split(" | ") == [patch], notes  # no code quoted
    assert tamper.RULES["patch"] in rows[("a-patch-dynamic", "1_attention")]["notes"]
    assert "the kernel died" in rows[("a-crash-kernel", "1_attention")]["notes"]
    config = rows[("a-automagic-display-all", "1_attention")]["notes"]
    assert tamper.RULES["config"] in config, config
    for name in ATTACKS:  # nothing of it reaches the student's pages
        pages = (root / "autograder" / "class" / "feedback" / f"a-{name}" / "a3").glob("*.html")
        assert not any("review" in p.read_text() for p in pages), name


@pytest.mark.slow
def test_the_installed_grader_is_not_importable_in_the_kernel(attacked):
    """The venv's Python imports ``autograder`` from anywhere (tests/course/test_packaging.py); a
    kernel of that venv, in the sandbox, cannot."""
    _, gdir, _, _ = attacked
    outputs = _outputs(gdir, "a-import-the-grader", "1_attention")
    assert "grader importable: False" in outputs and "the grader: ModuleNotFoundError" in outputs


@pytest.mark.slow
def test_the_kernel_writes_only_its_scratch(attacked):
    _, gdir, _, _ = attacked
    outputs = _outputs(gdir, "a-fill-runtime-folder", "1_attention")
    for top in ("/tmp/.kernel", "/tmp/work", "/tmp"):  # one size-limited file system (64 MB)
        assert re.search(rf"{re.escape(top)} refused after \d+ MB", outputs), outputs[:2000]
    written = [int(n) for n in re.findall(r"refused after (\d+) MB", outputs)]
    assert sum(written) <= 64, written  # the scratch limit holds for the runtime folder too
    for top in ("/", "/dev", "/run"):
        assert f"{top} refused after 0 MB" in outputs, outputs[:2000]


@pytest.mark.slow
def test_attacks_leave_the_class_intact(attacked):
    root, gdir, before, out = attacked
    rows = grades(root)
    assert float(rows[("victim", "1_attention")]["autograded"]) == 5
    assert float(rows[("victim", "2_secret")]["autograded"]) == 1
    assert rows[("victim", "1_attention")]["flags"] == "ok"
    assert len({s for s, _ in rows}) == len(ATTACKS) + 2  # every student graded
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
# for it; the limits and the advisory scan still apply.


@pytest.mark.slow
def test_grading_without_isolation_says_so(tmp_path):
    root = make_course(tmp_path, toml=TOML.replace("[sandbox]", "[sandbox]\nenabled = false"))
    for name, nb in course_notebooks().items():
        nbformat.write(nb, root / "solutions" / "a3" / f"{name}.ipynb")
    src, gdir = course_sources(root)
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
    attacker = rows[("a-patch-allclose", "1_attention")]
    assert attacker["flags"] == "review", attacker["notes"]
    assert float(attacker["autograded"]) <= HONEST_WORTH


def test_kernel_command_isolates_and_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_API_TOKEN", SECRET)
    (tmp_path / "secret").mkdir()
    hide = (str(tmp_path / "secret"), "/no/such/folder")
    limits = sandbox.Limits(memory_mb=100, processes=7, file_mb=3, scratch_mb=5, hide=hide)
    status = sandbox.Status(isolated=True, unprivileged=True)
    connection = tmp_path / "run" / "kernel-1.json"
    kernel = ["python", "-m", "ipykernel_launcher", "-f", str(connection)]
    cmd = sandbox.kernel_command(kernel, tmp_path / "run", limits, status, 61234, connection)
    assert cmd[0] == "bwrap"
    assert cmd[-5:] == [*kernel[:-1], sandbox.INSIDE_CONNECTION]  # the inside path only
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv"} <= set(cmd)
    shown = [Path(cmd[i + 1]) for i, arg in enumerate(cmd) if arg in ("--ro-bind", "--bind")]
    assert "/usr" in map(str, shown) and Path(sys.prefix).resolve() in shown
    # only the system, Python, course_lib (and an empty folder over a hidden one): nothing of
    # the grader's own folders, not even the kernel's runtime folder, is bound
    allowed = [Path(p) for p in sandbox.SYSTEM] + sandbox.shown_paths() + [tmp_path / "run/empty"]
    assert all(p in allowed for p in shown), shown
    assert "--bind" not in cmd and str(connection) not in cmd[:-1]
    assert not any(p in (Path("/"), ROOT, ROOT.parent) for p in shown)
    binds = {cmd[i + 2]: cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--ro-bind"}
    assert binds[str(tmp_path / "secret")] == str(tmp_path / "run" / "empty")
    tmpfs = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--tmpfs"]
    assert tmpfs == ["/tmp"] and cmd[cmd.index("--tmpfs") - 1] == str(5 * 2**20)
    remounted = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--remount-ro"]
    assert remounted == ["/dev", "/"]
    env = {cmd[i + 1]: cmd[i + 2] for i, arg in enumerate(cmd) if arg == "--setenv"}
    assert env == sandbox.kernel_env() and SECRET not in " ".join(cmd)
    tail = cmd[cmd.index("--", cmd.index("--chdir")) :]
    assert "--reuid=61234" in tail and f"--as={100 * 2**20}" in tail
    assert f"--fsize={3 * 2**20}" in tail and "--nproc=7" in tail


def test_the_sandbox_shows_no_host_path_and_no_grader_variable(tmp_path, monkeypatch):
    """A real kernel-like process in the sandbox: its environment, process list and mount table
    say nothing of the grader's shell or folders."""
    if not sandbox.probe().isolated:
        pytest.fail(f"no sandbox on this machine: {sandbox.probe().reason}")
    monkeypatch.setenv("GRADER_API_TOKEN", SECRET)
    box = sandbox.Sandbox(sandbox.Limits(scratch_mb=16))
    try:
        connection = box.rundir / "kernel-1.json"
        connection.write_text('{"transport": "ipc"}')
        code = (
            "import os\nprint(open('/tmp/.kernel/connection.json').read())\n"
            "print(dict(os.environ))\nprint(open('/proc/self/mountinfo').read())\n"
            "for pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
            "        print(open(f'/proc/{pid}/cmdline').read())\n"
        )
        cmd = box.wrap([sys.executable, "-c", code, "-f", str(connection)], str(connection))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    finally:
        box.cleanup()
    assert '{"transport": "ipc"}' in out  # it ran, and read its connection file
    assert SECRET not in out and "GRADER_API_TOKEN" not in out
    assert str(box.rundir) not in out and "a3-sbx-" not in out
    assert str(tmp_path) not in out


def test_kernel_command_without_isolation_keeps_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_API_TOKEN", SECRET)
    limits = sandbox.Limits(memory_mb=100, processes=7, file_mb=3)
    status = sandbox.Status(isolated=False, unprivileged=False, reason="no bwrap")
    cmd = sandbox.kernel_command(["python"], tmp_path, limits, status, uid=None)
    assert cmd[:2] == ["env", "-i"] and "bwrap" not in cmd and cmd[-1] == "python"
    assert "prlimit" in cmd and f"--as={100 * 2**20}" in cmd and "--core=0" in cmd
    assert SECRET not in " ".join(cmd) and f"HOME={tmp_path / 'home'}" in cmd
    text = "\n".join(status.describe(limits))
    assert "NOT ISOLATED (no bwrap)" in text and "not enforced: process limit" in text


@pytest.mark.parametrize(
    "table, error",
    [
        ("memory_mb = -1", "[sandbox] memory_mb must be a positive integer, got -1"),
        ("memory = 100", "unknown [sandbox] settings"),
        ("notebook_seconds = 'long'", "[sandbox] notebook_seconds must be a positive integer"),
    ],
)
def test_bad_sandbox_settings_are_refused(tmp_path, table, error):
    from autograder.course import config

    head, rest = TOML.split("[sandbox]")
    toml = f"{head}[sandbox]\n{table}\n\n[collect]{rest.split('[collect]')[1]}"
    (tmp_path / "course.toml").write_text(toml)
    with pytest.raises(config.ConfigError, match=re.escape(error)):
        config.load(tmp_path)
