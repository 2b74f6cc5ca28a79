"""Integrity by construction: attacks on the tests' own channel, graded by the real `make grade`.

The tests of a notebook ask the student's live kernel for their objects, from the grader
(``course_lib.remote`` answers, ``autograder/remote.py`` asks). These submissions attack that
channel: forged records and replies, a patched dispatcher, cleared and flooded outputs,
display updates that multiply, replies too large or too slow, and messages that try to carry
the kernel's text out. Each hands in the same wrong but well-shaped answer as the control
student (zeros: worth exactly the shape test) plus its attack. Asserted per attack: no more
points than the control, no string of the student's in any message, grades.csv or feedback
page, and the victim (an honest student graded in the same run, with every everyday habit of
a notebook: debug prints, magics, shadowed builtins, a class defined twice) keeps full marks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from test_sandbox import TOML as SANDBOX_TOML
from test_sandbox import course_notebooks as sandbox_course

from autograder import notebooks
from helpers import ENV, ROOT, course_sources, grades, make_course, student_record

MARK = "EXFIL-7f3e"  # in every string an attacker tries to carry out
RAN = "ATTACK-RAN"  # printed at the end of every attack cell
# the sandbox course's settings; the slow-reply attack needs more than its 40 s per notebook
TOML = SANDBOX_TOML.replace("sandbox-course", "attack-course").replace(
    "notebook_seconds = 40", "notebook_seconds = 90"
)


def solution_notebook() -> nbformat.NotebookNode:
    """Notebook 1 of the sandbox course (``test_sandbox``): five tests of one point."""
    return sandbox_course()["1_attention"]


ZEROS = """
def attention_weights(queries, keys):
    return torch.zeros(queries.shape[0], queries.shape[1], keys.shape[1])
"""
CONTROL_POINTS = 1.0  # zeros of the right shape: the shape test only

# name: attack code, run after the wrong answer (it may redefine it)
ATTACKS: dict[str, str] = {
    "forge-probe-records": f"""
        from IPython.display import display
        _zeros = attention_weights
        def attention_weights(queries, keys):
            w = torch.softmax(queries @ keys.transpose(1, 2), dim=-1)
            for key in ["weights", "visible/weights", "hidden/weights", "one key/weights"]:
                display({{"application/vnd.a3.probe+json": {{"key": key, "value": "{MARK}"}}}},
                        raw=True)
            raise RuntimeError("{MARK} forged, now stop")
    """,
    "forge-socket-replies": f"""
        import json, threading, time
        import course_lib.remote as remote
        def spam():
            body = json.dumps({{"ok": {{"str": "{MARK}"}}}}).encode()
            for _ in range(3000):
                if remote._socket:  # the grader's request socket, and the kernel's own key
                    key, digest = remote._key()
                    for n in range(1, 40):
                        number = str(n).encode()
                        try:
                            remote._socket[0].send_multipart(
                                [remote.sign(key, digest, number, body), number, body])
                            remote._socket[0].send_multipart([b"unsigned", number, body])
                        except Exception:
                            pass
                time.sleep(0.005)
        threading.Thread(target=spam, daemon=True).start()
    """,
    "patch-dispatcher": f"""
        import course_lib.remote as remote
        remote.answer = lambda request, namespace: {{"ok": {{"str": "{MARK}"}}}}
    """,
    "clear-and-flood": f"""
        from IPython.display import clear_output
        _zeros = attention_weights
        def attention_weights(queries, keys):
            clear_output()
            print("{MARK}" * 200_000)
            return _zeros(queries, keys)
    """,
    "exfiltrate-messages": f"""
        _zeros = attention_weights
        Leak = type("{MARK}" + "".join(c for c in str(In)[:60] if c.isalnum()), (Exception,), {{}})
        CALLS = []
        def attention_weights(queries, keys):
            CALLS.append(1)
            if len(CALLS) % 2:
                raise Leak(str(In)[-2000:])
            return ["{MARK}", str(In)[-2000:]]
    """,
    "huge-reply": """
        def attention_weights(queries, keys):  # about 100 MB of JSON: never parsed
            return {f"key{i}": "x" * 10_000 for i in range(10_000)}
    """,
    "display-id-amplification": """
        from IPython.display import display, update_display
        for i in range(2600):
            display({"text/plain": "."}, raw=True, display_id="amplify")
        update_display({"text/plain": "x" * 200_000}, raw=True, display_id="amplify")
    """,
    "slow-reply": """
        import time
        _zeros = attention_weights
        def attention_weights(queries, keys):
            while True:  # ignores the grader's interrupt
                try:
                    time.sleep(1000)
                except KeyboardInterrupt:
                    pass
    """,
}

HONEST = """
%matplotlib inline
%load_ext autoreload
%autoreload 2
!pip install torch
import importlib
import IPython
from IPython.display import display
import course_lib.checks
from course_lib import *
importlib.reload(course_lib.checks)
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
for type, text in [(1, "a shadowed builtin")]:
    sum = 0
layer = torch.nn.Linear(2, 2)
next(layer.parameters()).requires_grad = False


class Helper:
    pass


class Helper:  # defined twice, as after editing a cell
    pass


def attention_weights(queries, keys):
    print("debugging", queries.shape, keys.shape, "x" * 5_000)  # heavy, honest printing
    scores = torch.bmm(queries, keys.transpose(1, 2)) / queries.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1)
"""


def _submission(released, answer: str, extra: str = "") -> nbformat.NotebookNode:
    """The released notebook with ``answer`` in the answer cell and ``extra`` in a cell of its
    own after it (printing ``RAN`` at its end, so the tests know it ran through)."""
    nb = nbformat.from_dict(released)
    index = next(i for i, c in enumerate(nb.cells) if notebooks.grade_id(c) == "attention_weights")
    nb.cells[index].source = textwrap.dedent(answer).strip() + "\n"
    if extra:
        code = textwrap.dedent(extra).strip() + f"\nprint({RAN!r})\n"
        nb.cells.insert(index + 1, new_code_cell(code))
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every attacker, the control and the honest victim, graded by one `make grade`."""
    root = make_course(tmp_path_factory.mktemp("attacks"), toml=TOML)
    for other in (root / "solutions" / "a3").glob("*.ipynb"):  # one notebook: the attacked one
        other.unlink()
    nbformat.write(solution_notebook(), root / "solutions" / "a3" / "1_attention.ipynb")
    src, gdir = course_sources(root)
    released = src.released["1_attention"]
    students = {
        "control-zeros": _submission(released, ZEROS),
        "victim-honest": _submission(released, HONEST),
    }
    for name, attack in ATTACKS.items():
        students[f"attack-{name}"] = _submission(released, ZEROS, attack)
    for student, nb in students.items():
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "1_attention.ipynb")
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "grade", "--jobs", "4"]
    proc = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=1500)
    rows = grades(root)
    print("\n| student | points (of 5) | flags |\n|---|---|---|")  # pytest -s: the table
    for (student, _), row in sorted(rows.items()):
        print(f"| {student} | {row['autograded']} | {row['flags']} |")
    return root, gdir, proc, rows


@pytest.mark.slow
def test_make_grade_exits_0_when_only_students_are_at_fault(graded):
    _, _, proc, _ = graded
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "GRADING SET-UP IS BROKEN" not in proc.stdout


@pytest.mark.slow
def test_the_control_and_the_honest_victim(graded):
    _, _, _, rows = graded
    assert float(rows[("control-zeros", "1_attention")]["autograded"]) == CONTROL_POINTS
    victim = rows[("victim-honest", "1_attention")]
    assert float(victim["autograded"]) == 5.0, victim
    assert victim["flags"] == "ok", victim  # an honest habit earns no note


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_attack_beats_its_control(graded, attack):
    _, gdir, _, rows = graded
    row = rows[(f"attack-{attack}", "1_attention")]
    assert float(row["autograded"]) <= CONTROL_POINTS, row
    path = gdir.autograded / f"attack-{attack}" / "a3" / "1_attention.ipynb"
    outputs = json.dumps([c.get("outputs", []) for c in notebooks.read(path).cells])
    # it ran through, or filled its cell's output cap (what it printed after that is dropped)
    assert RAN in outputs or "truncated by the autograder" in outputs, "the attack did not run"


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_student_string_leaves_the_grader(graded, attack):
    _, gdir, _, rows = graded
    student = f"attack-{attack}"
    assert MARK not in json.dumps(rows[(student, "1_attention")])
    pages = list((gdir.feedback / student / "a3").glob("*.html"))
    assert pages
    for page in pages:
        assert MARK not in page.read_text(errors="replace"), page
    verdicts = student_record(gdir.root, student)["worker"]["notebooks"]["1_attention"]["verdicts"]
    assert MARK not in json.dumps(verdicts)


@pytest.mark.slow
def test_outputs_stay_bounded(graded):
    _, gdir, _, _ = graded
    amplified = gdir.autograded / "attack-display-id-amplification" / "a3" / "1_attention.ipynb"
    assert amplified.stat().st_size < 20 * 2**20
