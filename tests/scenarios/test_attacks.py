"""Integrity by construction: attacks on the tests' own channel, graded by the real `make grade`.

The tests of a notebook ask the student's live kernel for their objects, from the grader
(``course_lib.grading.dispatch`` answers, ``autograder/kernels/remote.py`` asks). These
submissions attack that channel: forged records and replies, a patched dispatcher, cleared and
flooded outputs, display updates that multiply, replies too large or too slow, and messages that
try to carry the kernel's text out. Each hands in the same wrong but well-shaped answer as the
control student (zeros: worth exactly the shape test) plus its attack. Asserted per attack: no more
points than the control, no string of the student's in any message, grades.csv or feedback page,
and the victim (an honest student graded in the same run, with every everyday habit of a notebook:
debug prints, magics, shadowed builtins, a class defined twice) keeps full marks. The games
(:data:`GAMES`: signed plausible replies, NaN and inf, denormals, dtype games, a tensor subclass,
an answer changing between requests) each state the verdict expected of the grader, and an answer
that delegates to torch's own attention keeps its points with a note for the instructor only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from test_sandbox import TOML as SANDBOX_TOML
from test_sandbox import course_notebooks as sandbox_course

from autograder.course import notebooks, spec
from autograder.handin import tamper
from autograder.reports.rows import REVIEW_NOTE
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
        import course_lib.grading.dispatch as remote
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
        import course_lib.grading.dispatch as remote
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

SCALED = "torch.softmax(torch.bmm(queries, keys.transpose(1, 2)) / queries.shape[-1] ** 0.5, -1)"
UNSCALED = "torch.softmax(torch.bmm(queries, keys.transpose(1, 2)), dim=-1)"  # plausible, wrong
ALL_BUT_SHAPE = {"test_visible", "test_hidden", "test_softmax", "test_one_key"}
CLOSENESS = {"test_visible", "test_hidden"}  # what a plausible softmax of the wrong scores loses


def _returning(expression: str) -> str:
    """An answer that returns ``expression`` of the correct weights ``w``."""
    return f"def attention_weights(queries, keys):\n    w = {SCALED}\n    return {expression}\n"


# The attacks that had not been tried (issue 37): name -> (answer, attack code run after it,
# the points expected, whether exactly (else at most), the tests whose points it must lose).
# The verdict is the grader's: a reply is judged as the student's answer, whoever sent it.
GAMES: dict[str, tuple[str, str, float, bool, set[str]]] = {
    # Replies signed with the kernel's own key, sent by the student's own serving loop, that
    # carry a plausible value (a softmax over the keys, of unscaled scores): judged as the
    # student's answer, they lose the checks they answer wrongly.
    "signed-plausible-replies": (ZEROS, f"""
        import json
        import course_lib.grading.dispatch as remote
        from course_lib.grading import wire

        def forged_serve(sock, key, digest):
            while True:
                frames = sock.recv_multipart()
                if len(frames) != 3:
                    continue
                request = json.loads(frames[2])
                if request.get("op") == "call":
                    queries, keys = (wire.decode(a) for a in request["args"])
                    reply = {{"ok": wire.encode({UNSCALED})}}
                elif request.get("op") == "stop":
                    reply = {{"ok": wire.encode(None)}}
                else:
                    reply = remote.answer(request, remote._user_ns())
                body = json.dumps(reply).encode()
                sock.send_multipart([remote.sign(key, digest, frames[1], body), frames[1], body])
                if request.get("op") == "stop":
                    break
            sock.close(0)

        remote._serve = forged_serve
    """, 3.0, True, CLOSENESS),
    # NaN and inf among correct values: every closeness check fails, and so does "sums to 1".
    "nan-and-inf": (_returning("w.index_put_((torch.tensor([0, -1]),) * 3, "
                               "torch.tensor([float('nan'), float('inf')]))"),
                    "", 1.0, True, ALL_BUT_SHAPE),
    # Denormal values (the weights times 1e-39): values like any other, judged as such.
    "denormal": (_returning("w * 1e-39"), "", 1.0, True, ALL_BUT_SHAPE),
    # dtype games: converted by the grader (float64 as it is, half to float32, int as int64)
    # and judged on the values; complex does not travel: refused, with a fixed message.
    "dtype-float64": (_returning("w.double()"), "", 5.0, True, set()),
    "dtype-half": (_returning("w.half()"), "", 2.0, True, CLOSENESS | {"test_softmax"}),
    "dtype-int": (_returning("w.long()"), "", 2.0, True, CLOSENESS | {"test_softmax"}),
    "dtype-complex": (_returning("w.to(torch.complex64)"), "", 0.0, True,
                      ALL_BUT_SHAPE | {"test_shape"}),
    # A tensor subclass that lies to every torch function (equal, close, sums to 1) and would
    # leave a mark if its code ever ran outside this kernel: the grader gets plain data (its
    # zeros), never the class.
    "tensor-subclass": (f"""
        import os
        KERNEL = os.getpid()

        class Liar(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                if os.getpid() != KERNEL:
                    open("/tmp/{MARK}-subclass-ran-%d" % os.getpid(), "w").close()
                    print("{MARK} ran outside the kernel")
                name = getattr(func, "__name__", "")
                if name in ("allclose", "equal", "all", "isfinite", "__eq__", "__ge__"):
                    return True
                return super().__torch_function__(func, types, args, kwargs or {{}})

        def attention_weights(queries, keys):
            shape = (queries.shape[0], queries.shape[1], keys.shape[1])
            return torch.zeros(shape).as_subclass(Liar)
    """, "", 1.0, True, ALL_BUT_SHAPE),
    # An answer that changes between requests (a thread swaps the notebook's global between two
    # wrong answers, zeros and a softmax of unscaled scores): whichever a request meets, it earns
    # no point that neither earns alone.
    "changing-between-requests": (ZEROS, f"""
        import threading
        import time

        def unscaled(queries, keys):
            return {UNSCALED}

        namespace, zeros = globals(), attention_weights

        def swap():
            while True:
                now = namespace["attention_weights"]
                namespace["attention_weights"] = unscaled if now is zeros else zeros
                time.sleep(0.0005)

        threading.Thread(target=swap, daemon=True).start()
    """, 3.0, False, CLOSENESS),
}  # fmt: skip
DELEGATING = """
import torch.nn.functional as F


def attention_weights(queries, keys):  # torch's attention, values the identity: its weights
    n, s = keys.shape[0], keys.shape[1]
    return F.scaled_dot_product_attention(queries, keys, torch.eye(s).expand(n, s, s))
"""

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
    index = next(i for i, c in enumerate(nb.cells) if spec.grade_id(c) == "attention_weights")
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
    for name, (answer, attack, _, _, _) in GAMES.items():
        students[f"game-{name}"] = _submission(released, answer, attack)
    students["delegating"] = _submission(released, DELEGATING)
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


@pytest.mark.slow
@pytest.mark.parametrize("game", sorted(GAMES))
def test_a_reply_is_judged_as_the_students_answer(graded, game):
    """Signed plausible replies, NaN and inf, denormals, dtype games, a tensor subclass, an
    answer changing between requests: each gets exactly (or at most) its expected points and
    loses the checks its replies answer wrongly; the messages are the grader's fixed words."""
    _, gdir, _, rows = graded
    _, _, points, exact, lost = GAMES[game]
    student = f"game-{game}"
    row = rows[(student, "1_attention")]
    got = float(row["autograded"])
    assert got == points if exact else got <= points, row
    verdicts = student_record(gdir.root, student)["worker"]["notebooks"]["1_attention"]["verdicts"]
    lost_here = {gid for gid, v in verdicts.items() if v["score"] < v["points"]}
    assert lost <= lost_here if not exact else lost == lost_here, verdicts
    if game == "dtype-complex":  # refused, in the grader's words
        messages = {c["message"] for v in verdicts.values() for c in v["checks"]}
        assert messages == {"your code returned something that is not a plain value"}
    if game == "tensor-subclass":  # its code never ran in the grader, nor anywhere but there
        assert not list(Path("/tmp").glob(f"{MARK}-subclass-ran-*"))
        assert MARK not in json.dumps(rows[(student, "1_attention")])


@pytest.mark.slow
def test_delegation_keeps_its_points_and_is_noted_for_the_instructor(graded):
    """A correct answer through torch's own scaled_dot_product_attention (issue 37, item 9):
    results decide points (full marks), the scan notes it (``review``, instructor only: not on
    the student's feedback page); the honest victim gets no note."""
    _, gdir, _, rows = graded
    row = rows[("delegating", "1_attention")]
    assert float(row["autograded"]) == 5.0, row
    assert row["flags"] == "review", row
    assert f"{REVIEW_NOTE}cell " in row["notes"]
    assert tamper.RULES["delegation"] in row["notes"], row["notes"]
    pages = list((gdir.feedback / "delegating" / "a3").glob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(errors="replace")
        assert tamper.RULES["delegation"] not in text and REVIEW_NOTE not in text, page
    assert "review" not in rows[("victim-honest", "1_attention")]["flags"]
