"""The judge decides every autograded point, from plain data, outside the student's kernel.

These tests build executed notebooks by hand (outputs as a kernel would leave them) and check
what the judge makes of them: only the checks' verdicts count, whatever else the cell shows;
recorded data is read without executing anything; missing, duplicated or malformed records
cost the checks that need them and say why.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the autograder is a folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from autograder import judge  # noqa: E402
from course_lib import judging, probe  # noqa: E402


def _test_cell(gid: str, source: str, points: float = 1.0) -> nbformat.NotebookNode:
    meta = {"grade": True, "grade_id": gid, "locked": True, "points": points, "solution": False,
            "schema_version": 3}  # fmt: skip
    return new_code_cell(source, metadata={"nbgrader": meta})


def _judge_cell(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = ["judge"]
    return cell


def _record(key: str, value) -> nbformat.NotebookNode:
    return new_output("display_data", data={probe.MIME: {"key": key, "value": probe.encode(value)}})


SOLUTION = new_notebook(
    cells=[
        _judge_cell("import torch\nfrom course_lib.judging import check\n"),
        _test_cell(
            "test_double",
            '"""double doubles."""\nassert double(1) == 2\n### BEGIN HIDDEN TESTS\n'
            'from course_lib import probe\n\nprobe.put("x", double(torch.arange(3)))\n'
            "### END HIDDEN TESTS",
        ),
        _judge_cell(
            '@check("doubles a tensor", points=0.75)\n'
            "def _(record):\n"
            '    assert torch.equal(record["x"], torch.tensor([0, 2, 4])), "not doubled"\n\n\n'
            '@check("returns a tensor", points=0.25)\n'
            "def _(record):\n"
            '    assert isinstance(record["x"], torch.Tensor)\n'
        ),
    ]
)
SPEC = judge.spec_of(SOLUTION, "nb")


def executed(*outputs) -> nbformat.NotebookNode:
    """The graded notebook of a student, its test cell run with ``outputs``."""
    cell = _test_cell("test_double", SPEC.tests["test_double"].graded_source)
    cell.outputs, cell.execution_count = list(outputs), 3
    return new_notebook(cells=[cell])


def test_the_graded_form_is_the_docstring_and_the_probe():
    assert SPEC.tests["test_double"].graded_source == (
        '"""double doubles."""\nfrom course_lib import probe\n\n'
        'probe.put("x", double(torch.arange(3)))\n'
    )
    assert [j.test for j in SPEC.judges] == [None, "test_double"]
    assert judge.spec_problems(SPEC, SOLUTION) == []


def test_only_the_checks_decide_the_score():
    right = judge.judge_notebook(SPEC, executed(_record("x", torch.tensor([0, 2, 4]))))
    assert right["test_double"].score == 1.0
    half_wrong = judge.judge_notebook(SPEC, executed(_record("x", torch.tensor([0, 1, 2]))))
    assert half_wrong["test_double"].score == 0.25
    assert [c["passed"] for c in half_wrong["test_double"].checks] == [False, True]
    assert half_wrong["test_double"].lost()[0]["message"] == "not doubled"


def test_what_nbgrader_used_to_reward_is_worth_nothing():
    """A cell that shows a result (IPython's display-every-expression setting, a forged
    displayhook call) or prints a passing verdict, with no record: 0."""
    forged = executed(
        new_output("execute_result", data={"text/plain": "'double doubles.'"}, execution_count=3),
        new_output("stream", name="stdout", text="Autograder: 1 / 1 points\n"),
    )
    verdict = judge.judge_notebook(SPEC, forged)["test_double"]
    assert verdict.score == 0
    assert "the test did not record it" in verdict.checks[0]["message"]


def test_a_value_recorded_twice_is_never_trusted():
    """Records injected next to the probe's (a hook publishing a fake) cost their checks."""
    twice = executed(_record("x", torch.tensor([0, 2, 4])), _record("x", torch.tensor([0, 2, 4])))
    verdict = judge.judge_notebook(SPEC, twice)["test_double"]
    assert verdict.score == 0 and "more than once" in verdict.checks[0]["message"]


@pytest.mark.parametrize(
    "outputs, why",
    [
        ((new_output("error", ename="RuntimeError", evalue="boom", traceback=[]),),
         "the test stopped at RuntimeError: boom"),
        ((new_output("error", ename="CellTimeoutError", evalue="", traceback=[]),),
         "the test ran out of time"),
        ((_record("x/!error", "ValueError: bad shape"),), "the test did not record it"),
    ],
)  # fmt: skip
def test_missing_values_say_why(outputs, why):
    verdict = judge.judge_notebook(SPEC, executed(*outputs))["test_double"]
    assert verdict.score == 0 and why in verdict.checks[0]["message"]


def test_a_case_that_raised_names_the_error():
    record = judging.record_from({"2d/!error": probe.encode("RuntimeError: shapes (3, 4)")})
    with pytest.raises(judging.Missing, match=r"your code raised RuntimeError: shapes \(3, 4\) "
                       r"\(in 2d\)"):  # fmt: skip
        record["2d/context"]


def test_a_test_cell_that_did_not_run_scores_nothing():
    nb = executed()
    nb.cells[0].execution_count = None
    verdict = judge.judge_notebook(SPEC, nb)["test_double"]
    assert verdict.score == 0 and "did not run" in verdict.checks[0]["message"]


def _tensor_record(dtype: str, shape, data: bytes) -> dict:
    return {"tensor": {"dtype": dtype, "shape": shape, "data": base64.b64encode(data).decode()}}


@pytest.mark.parametrize(
    "data",
    [
        _tensor_record("float32", [2], b"\0" * 12),  # 3 floats for 2
        _tensor_record("object", [1], b"\0" * 8),  # not a dtype that travels
        _tensor_record("float32", [10**9, 10**9], b""),  # a huge shape claimed
        {"tensor": {"dtype": "float32", "shape": [1], "data": "not base64!"}},
        {"pickle": "gASVAAAAAAAAAAB9lC4="},  # an unknown kind: never unpickled
        {"list": [{"int": 1}], "extra": 2},
        "just a string",
    ],
)
def test_malformed_records_are_refused_without_running_anything(data):
    with pytest.raises(probe.DecodeError):
        probe.decode(data)
    record = judging.record_from({"x": data})
    with pytest.raises(judging.Missing, match="unreadable data"):
        record["x"]


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
    back = {k: probe.decode(json.loads(json.dumps(probe.encode(v)))) for k, v in values.items()}
    assert torch.equal(back["t"], values["t"]) and back["i"].dtype == torch.int64
    assert back["half"].dtype == torch.float32
    assert type(back["sub"]) is torch.Tensor and not torch.equal(back["sub"], torch.ones(2))
    assert back["nested"]["a"] == [1, 2.5, True, None, "s"]
    assert probe.decode(probe.encode(object())).what == "object"


def test_inputs_are_the_same_in_every_process():
    torch.manual_seed(123)  # the global state does not matter
    a = probe.randn(7, 2, 3)
    torch.manual_seed(456)
    assert torch.equal(a, probe.randn(7, 2, 3)) and not torch.equal(a, probe.randn(8, 2, 3))
    layer = probe.set_params(torch.nn.Linear(3, 2), seed=5)
    assert torch.equal(layer.weight, probe.param(5, "weight", (2, 3)))
    assert torch.equal(layer.bias, probe.param(5, "bias", (2,)))


def test_authoring_mistakes_are_found():
    bad = nbformat.from_dict(SOLUTION)
    bad.cells[1].metadata.nbgrader["points"] = 2
    bad.cells[1].source = (
        bad.cells[1]
        .source.replace(
            '"""double doubles."""', '"""double doubles."""\nthree = double(torch.arange(3))'
        )
        .replace('probe.put("x", double(torch.arange(3)))', 'probe.put("x", three)')
    )
    bad.cells.append(_test_cell("test_alone", '"""No judge follows."""'))
    problems = judge.spec_problems(judge.spec_of(bad, "nb"), bad)
    assert "nb test_double: its checks are worth 1 points, the test cell 2" in problems
    assert "nb test_alone: no judge cell with checks follows this test" in problems
    assert (
        "nb test_double: its probe uses 'three', which only its visible checks define" in problems
    )
    broken = nbformat.from_dict(SOLUTION)
    broken.cells.append(_judge_cell("raise ValueError('a bug of the course')"))
    with pytest.raises(judge.JudgeError, match="a bug of the course"):
        judge.collect_checks(judge.spec_of(broken, "nb"))


def test_annotate_replaces_the_raw_data_by_the_verdict(tmp_path):
    nb = executed(_record("x", torch.tensor([0, 1, 2])))
    path = tmp_path / "graded.ipynb"
    nbformat.write(nb, path)
    verdicts = judge.judge_notebook(SPEC, nb)
    judge.annotate(path, verdicts)
    (cell,) = nbformat.read(path, as_version=4).cells
    assert [o.output_type for o in cell.outputs] == ["stream"]
    text = cell.outputs[0].text
    assert "Autograder: 0.25 / 1 points" in text and "LOST" in text and "not doubled" in text


def test_the_judge_runs_in_its_own_process(tmp_path):
    specs = tmp_path / "judges"
    specs.mkdir()
    (specs / "nb.json").write_text(SPEC.to_json())
    path = tmp_path / "nb.ipynb"
    nbformat.write(executed(_record("x", torch.tensor([0, 2, 4]))), path)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    result = judge.judge_in_child(specs, {"nb": path}, env=env)
    assert result["nb"]["test_double"]["score"] == 1.0
    (specs / "nb.json").write_text("{not json")
    with pytest.raises(judge.JudgeError, match="the judge failed"):
        judge.judge_in_child(specs, {"nb": path}, env=env)


def test_the_probe_mime_type_is_the_judges():
    assert judge.PROBE_MIME == probe.MIME


def test_a_probe_must_not_rebind_what_later_cells_read():
    """When grading, a probe runs where the student ran the visible checks: a name it rebinds
    must not be one a later cell reads as the notebook defined it."""
    given = new_code_cell("encoder = make_encoder()\nimport torch")
    probe_cell = _test_cell(
        "test_x",
        '"""x."""\n### BEGIN HIDDEN TESTS\nimport torch\nencoder = 3\nmodel = 4\n'
        "### END HIDDEN TESTS",
    )
    later = new_code_cell("model = train(encoder)\nfor name in names:\n    print(model, torch)")
    nb = new_notebook(cells=[given, probe_cell, later])
    assert judge.probe_clobbers(nb) == [
        "test_x: its probe rebinds 'encoder', which a later cell reads (use another name in the "
        "probe)"
    ]
