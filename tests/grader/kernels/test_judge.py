"""The judge decides every autograded point, in the grader, from replies to its own requests.

These tests judge notebooks without a kernel: the student's namespace is a plain dict answered
through ``course_lib.grading.dispatch.LocalTransport`` (the same JSON the grading kernel sends), or
a transport that returns what a hostile kernel could send. Only the checks' verdicts count, whatever
the notebook's cells show; replies are read without executing anything; a failed request costs the
checks that made it, with the course's words.
"""

from __future__ import annotations

import base64
import json

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.course import config
from autograder.course.spec import Spec, annotate, spec_of
from autograder.kernels import judge
from autograder.publish import releasechecks, releasehistory
from course_lib.grading import dispatch, judging, wire


def _test_cell(gid: str, source: str, points: float = 1.0) -> nbformat.NotebookNode:
    meta = {"grade": True, "grade_id": gid, "locked": True, "points": points, "solution": False,
            "schema_version": 3}  # fmt: skip
    return new_code_cell(source, metadata={"nbgrader": meta})


def _judge_cell(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = ["judge"]
    return cell


SOLUTION = new_notebook(
    cells=[
        _judge_cell("import torch\nfrom course_lib.grading.judging import check\n"),
        _test_cell("test_double", '"""double doubles."""\nassert double(1) == 2'),
        _judge_cell(
            '@check("doubles a tensor the grader drew", points=0.75)\n'
            "def _(student, rng):\n"
            "    x = rng.randn(4)\n"
            '    assert torch.equal(student.double(x), 2 * x), "not doubled"\n\n\n'
            '@check("returns a tensor", points=0.25)\n'
            "def _(student):\n"
            "    assert isinstance(student.double(torch.arange(3)), torch.Tensor), 'no tensor'\n"
        ),
    ]
)
SPEC = spec_of(SOLUTION, "nb")


def executed(*outputs) -> nbformat.NotebookNode:
    """The graded notebook of a student, its test cell run with ``outputs``."""
    cell = _test_cell("test_double", SPEC.tests["test_double"].graded_source)
    cell.outputs, cell.execution_count = list(outputs), 3
    return new_notebook(cells=[cell])


def local(**namespace) -> judging.Student:
    return judging.Student(dispatch.LocalTransport(namespace))


class Replies:
    """A kernel that answers every request with ``reply`` (what a hostile one could send)."""

    def __init__(self, reply):
        self.reply = reply

    def request(self, _request):
        return self.reply


def test_the_spec_holds_what_the_notebook_is_worth():
    """One spec per notebook, written at release and read by grading, the reports and
    Gradescope: its tests and judges, and every graded cell with its points."""
    from nbformat.v4 import new_markdown_cell

    meta = {"grade": True, "grade_id": "why", "locked": False, "points": 2.0, "solution": True,
            "schema_version": 3}  # fmt: skip
    nb = new_notebook(cells=[*SOLUTION.cells, new_markdown_cell("A", metadata={"nbgrader": meta})])
    spec = spec_of(nb, "nb")
    assert [(c.grade_id, c.points, c.auto) for c in spec.graded] == [
        ("test_double", 1.0, True),
        ("why", 2.0, False),
    ]
    assert (spec.autograded_max, spec.manual_max, spec.max) == (1.0, 2.0, 3.0)
    assert Spec.from_json(spec.to_json()) == spec
    old = json.loads(spec.to_json())
    del old["graded"]  # a spec an older grader wrote: never read as worth nothing
    with pytest.raises(ValueError, match="run make grade once"):
        Spec.from_json(json.dumps(old))


def test_the_graded_form_is_the_docstring_alone():
    assert SPEC.tests["test_double"].graded_source == '"""double doubles."""\n'
    assert [j.test for j in SPEC.judges] == [None, "test_double"]
    assert releasechecks.spec_problems(SPEC, SOLUTION) == []


def test_only_the_checks_decide_the_score():
    right = judge.judge_notebook(SPEC, executed(), local(double=lambda x: 2 * x))
    assert right["test_double"].score == 1.0
    half = judge.judge_notebook(SPEC, executed(), local(double=lambda x: x + 1))
    assert half["test_double"].score == 0.25
    assert [c["passed"] for c in half["test_double"].checks] == [False, True]
    assert half["test_double"].lost()[0]["message"] == "not doubled"


def test_what_nbgrader_used_to_reward_is_worth_nothing():
    """A cell that shows a result, prints a passing verdict or publishes a forged record,
    with a stub behind it: 0."""
    forged = executed(
        new_output("execute_result", data={"text/plain": "'double doubles.'"}, execution_count=3),
        new_output("stream", name="stdout", text="Autograder: 1 / 1 points\n"),
        new_output(
            "display_data",
            data={"application/vnd.a3.probe+json": {"key": "x", "value": wire.encode(1)}},
        ),
    )

    def stub(x):
        raise NotImplementedError

    verdict = judge.judge_notebook(SPEC, forged, local(double=stub))["test_double"]
    assert verdict.score == 0
    assert "NotImplementedError" in verdict.checks[0]["message"]


def test_without_a_kernel_the_checks_fail_as_not_graded():
    verdict = judge.judge_notebook(SPEC, executed())["test_double"]
    assert verdict.score == 0 and "no kernel to ask" in verdict.checks[0]["message"]


@pytest.mark.parametrize(
    "reply, words",
    [
        ({"raised": "ValueError"}, "your code raised ValueError"),
        ({"raised": "LeakTheAnswers"}, "your code raised an exception"),
        ({"raised": "KeyboardInterrupt"}, "did not answer in time"),
        ({"raised": "NameError"}, "the notebook defines no double"),
        ({"ok": {"object": "secret"}}, "not a plain value"),
        ({"ok": {"error": "words of the kernel"}}, "not a plain value"),
        ({"nothing": 1}, "could not be read"),
    ],
)
def test_failed_requests_say_why_in_the_courses_words(reply, words):
    verdict = judge.judge_notebook(SPEC, executed(), judging.Student(Replies(reply)))
    message = verdict["test_double"].checks[0]["message"]
    assert words in message
    assert "LeakTheAnswers" not in message and "secret" not in message and "kernel" != message


def test_a_transport_failure_is_a_fixed_reason():
    class Dead:
        def request(self, _request):
            error = RuntimeError("the kernel's own words")
            error.reason = "dead"
            raise error

    verdict = judge.judge_notebook(SPEC, executed(), judging.Student(Dead()))["test_double"]
    assert {c["message"] for c in verdict.checks} == {judging.FAILED_WORDS["dead"]}


def _tensor_record(dtype: str, shape, data: bytes) -> dict:
    return {"tensor": {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()}}


@pytest.mark.parametrize(
    "data",
    [
        _tensor_record("float32", [2], b"\0" * 12),  # 3 floats for 2
        _tensor_record("object", [1], b"\0" * 8),  # not a dtype that travels
        _tensor_record("float32", [10**9, 10**9], b""),  # a huge shape claimed
        _tensor_record("float32", [0, 10**19], b""),  # empty, but no array can hold it
        {"tensor": {"dtype": "float32", "shape": [1], "data": "not base64!"}},
        {"pickle": "gASVAAAAAAAAAAB9lC4="},  # an unknown kind: never unpickled
        {"list": [{"int": 1}], "extra": 2},
        "just a string",
    ],
)
def test_malformed_replies_are_refused_without_running_anything(data):
    with pytest.raises(wire.DecodeError):
        wire.decode(data)
    verdict = judge.judge_notebook(SPEC, executed(), judging.Student(Replies({"ok": data})))
    message = verdict["test_double"].checks[0]["message"]
    assert message == judging.FAILED_WORDS["unreadable"]


def test_values_round_trip_as_plain_data():
    class Sneaky(torch.Tensor):
        def __eq__(self, other):
            return True

    values = {
        "t": torch.randn(2, 3),
        "i": torch.arange(4, dtype=torch.int32),
        "half": torch.ones(2, dtype=torch.float16),
        "sub": torch.zeros(2).as_subclass(Sneaky),
        "nested": {"a": [1, 2.5, True, None, "s"], "nan": float("nan")},
    }
    back = {k: wire.decode(json.loads(json.dumps(wire.encode(v)))) for k, v in values.items()}
    assert torch.equal(back["t"], values["t"]) and back["i"].dtype == torch.int64
    assert back["half"].dtype == torch.float32
    assert type(back["sub"]) is torch.Tensor and not torch.equal(back["sub"], torch.ones(2))
    assert back["nested"]["a"] == [1, 2.5, True, None, "s"]


def test_inputs_are_drawn_by_the_grader_the_same_in_every_run():
    torch.manual_seed(123)  # the global state does not matter
    a = judging.Inputs("nb/test/check").randn(2, 3)
    torch.manual_seed(456)
    assert torch.equal(a, judging.Inputs("nb/test/check").randn(2, 3))
    assert not torch.equal(a, judging.Inputs("nb/test/other check").randn(2, 3))


def test_a_message_that_quotes_a_reply_is_replaced():
    check = judging.Check("t", "greets", 1.0, lambda student: _fails_with(student.greet()))
    (result,) = judging.evaluate([check], student=local(greet=lambda: "<script>x</script>"))
    assert "<script>" not in result.message and "quote your code's output" in result.message
    own = judging.Check("t", "names", 1.0, lambda student: _fails_with(student.name()))
    (result,) = judging.evaluate([own], student=local(name=lambda: "encoder.rnn.Wir.weight"),
                                 own_words="MODEL_PARAMS = ['encoder.rnn.Wir.weight']")  # fmt: skip
    assert result.message == "got encoder.rnn.Wir.weight"  # the test author's own words


def _fails_with(text: str) -> None:
    raise AssertionError(f"got {text}")


def test_authoring_mistakes_are_found():
    bad = nbformat.from_dict(SOLUTION)
    bad.cells[1].metadata.nbgrader["points"] = 2
    bad.cells.append(_test_cell("test_alone", '"""No judge follows."""'))
    bad.cells.append(
        _test_cell(
            "test_probe", '"""A probe."""\n### BEGIN HIDDEN TESTS\nx = 1\n### END HIDDEN TESTS'
        )
    )
    bad.cells.append(_judge_cell('@check("x", points=1)\ndef _(student):\n    pass\n'))
    problems = releasechecks.spec_problems(spec_of(bad, "nb"), bad)
    assert "nb test_double: its checks are worth 1 points, the test cell 2" in problems
    assert "nb test_alone: no judge cell with checks follows this test" in problems
    assert (
        "nb test_probe: its hidden region would run in the student's kernel: "
        "put what it checks in the judge cell" in problems
    )
    broken = nbformat.from_dict(SOLUTION)
    broken.cells.append(_judge_cell("raise ValueError('a bug of the course')"))
    with pytest.raises(judge.JudgeError, match="a bug of the course"):
        judge.collect_checks(spec_of(broken, "nb"))


def test_annotate_shows_the_verdict():
    nb = executed(new_output("stream", name="stdout", text="debugging\n"))
    verdicts = judge.judge_notebook(SPEC, nb, local(double=lambda x: x + 1))
    annotate(nb, verdicts)
    (cell,) = nb.cells
    text = cell.outputs[-1].text
    assert "Autograder: 0.25 / 1 points" in text and "LOST" in text and "not doubled" in text


# --- given code comes from the course, never from the student's namespace ------------------

GIVEN = '''import sys
import torch
from course_lib import train, vocab
from course_lib.models import GRUEncoder, RNNDecoder

V = vocab.VOCAB_SIZE
pairs = load_pairs()  # data: not a definition
if "google.colab" in sys.modules:
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT


def doubled_answer(x):
    """Given code that calls the student's answer."""
    return 2 * my_answer(x)
'''


def _solution_with_given() -> nbformat.NotebookNode:
    meta = {"grade": False, "grade_id": "answer", "locked": False, "solution": True,
            "schema_version": 3}  # fmt: skip
    answer = new_code_cell("def my_answer(x):\n    ### BEGIN SOLUTION\n    return x + 1\n"
                           "    ### END SOLUTION\n", metadata={"nbgrader": meta})  # fmt: skip
    return new_notebook(cells=[new_code_cell(GIVEN), answer, *SOLUTION.cells])


def test_the_spec_holds_the_given_definitions_and_the_answers_names():
    spec = spec_of(_solution_with_given(), "nb")
    assert spec.answers == ("my_answer",)
    assert "def doubled_answer" in spec.course
    assert "V = vocab.VOCAB_SIZE" in spec.course and "from course_lib.models import" in spec.course
    assert "load_pairs" not in spec.course and "colab" not in spec.course  # nothing that runs
    assert Spec.from_json(spec.to_json()) == spec


def test_given_names_rebound_by_the_student_change_nothing(monkeypatch):
    """The student rebinds every given name (in their namespace, in course_lib's modules, in
    sys.modules); ``course`` is still the course's code, calling the student's answer."""
    import sys
    import types

    from course_lib import models, train

    class Cheat(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            raise RuntimeError("a lookalike")

    monkeypatch.setattr(train, "Seq2Seq", Cheat)
    monkeypatch.setattr(models, "GRUEncoder", Cheat)
    monkeypatch.setitem(sys.modules, "course_lib.models", types.SimpleNamespace(GRUEncoder=Cheat))
    namespace = {"my_answer": lambda x: x + 1, "GRUEncoder": Cheat, "doubled_answer": None,
                 "train": types.SimpleNamespace(Seq2Seq=Cheat)}  # fmt: skip
    spec = spec_of(_solution_with_given(), "nb")
    student = judging.Student(dispatch.LocalTransport(namespace))
    course = judging.Course(student, spec.course, spec.answers)
    model = course.train.Seq2Seq(course.GRUEncoder(29, 4), course.RNNDecoder(29, 4))
    logits, _ = model(torch.tensor([[3, 4, 1]]), torch.tensor([[0, 5]]))
    assert logits.shape == (1, 2, 29)
    assert course.V.get() == 29 and course.doubled_answer(3) == 8  # 2 * the student's answer
    with pytest.raises(judging.StudentError, match="RuntimeError"):
        student.GRUEncoder(29, 4)  # what the student's names hold: the lookalike


def test_a_check_asks_for_the_course_by_name():
    namespace = {"my_answer": lambda x: x + 1}
    spec = spec_of(_solution_with_given(), "nb")
    student = judging.Student(dispatch.LocalTransport(namespace))
    course = judging.Course(student, spec.course, spec.answers)

    @judging.check("given code around the answer", points=1.0)
    def _(student, course):
        assert course.doubled_answer(1) == 4

    found = judging.evaluate([judging.Check("t", "given", 1.0, _)], student, course=course)
    assert found[0].passed
    (without,) = judging.evaluate([judging.Check("t", "given", 1.0, _)], None)
    assert not without.passed and "not graded" in without.message


def test_structure_and_freezing_are_read_past_what_a_class_says_of_itself():
    """A module that hides parameters by overriding named_parameters, and a parameter whose
    requires_grad property says it is frozen, are listed and differentiated as torch sees them."""

    class Lying(torch.nn.Parameter):
        @property
        def requires_grad(self):
            return False  # says frozen; autograd trains it

    class Hiding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = Lying(torch.ones(3))

        def named_parameters(self, *args, **kwargs):
            return iter(())

        def forward(self, x):
            return x * self.w

    student = local(Hiding=Hiding)
    model = student.Hiding()
    assert model.params() == {"w": ((3,), True)}
    found = model.grad(torch.ones(3), cotangent=torch.ones(3), params_of=model)
    assert torch.equal(found.params["w"], torch.ones(3))


def _grader_modules_loaded(*modules: str) -> set[str]:
    """The grader's and ``course_lib``'s modules a fresh interpreter holds after importing
    ``modules``."""
    import subprocess
    import sys

    code = (
        f"import sys\nfor m in {list(modules)!r}: __import__(m)\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(('autograder', 'course_lib'))))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    return set(found.stdout.split())


def test_the_spec_is_read_without_the_judge():
    """Reading a notebook's spec (intake, reports, the gradebook) loads neither the judge nor
    the kernel's end of the protocol: ``autograder/course/spec.py`` stands alone."""
    loaded = _grader_modules_loaded("autograder.course.spec")
    assert "autograder.course.spec" in loaded
    assert not {m for m in loaded if m in ("autograder.kernels.judge", "autograder.kernels.remote")}
    assert not {m for m in loaded if m.startswith("course_lib.grading")}


def test_the_release_digest_covers_every_module_that_judges():
    """A change to any grader module the judge runs on (the spec it reads included) changes
    the release's dependencies digest, so the release checks run again."""
    loaded = _grader_modules_loaded("autograder.kernels.judge", "autograder.kernels.remote")
    packages = {"autograder." + stage for stage in config.STAGES}  # their __init__: no code
    grader = [m for m in loaded if m.startswith("autograder.") and m not in packages]
    files = {m.split(".", 1)[1].replace(".", "/") + ".py" for m in grader}
    assert "course/spec.py" in files
    assert files <= set(releasehistory.RUN_MODULES), files - set(releasehistory.RUN_MODULES)
