"""The canary's key and message, and a course dependency that breaks after it passed
(``autograder/marking/canary.py``; the canary stopping a broken course: ``test_grade.py``).

The last test grades in a virtual environment of its own: a copy of the suite's venv made of
hard links (no file is written through them: files are only added or removed), so that a
module the fixture course imports can be removed from the grading environment, kernel
included, without touching the venv every other test uses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import config, nbgrader_dir, notebooks
from autograder.marking import canary
from helpers import ENV, ROOT, course_sources, grades, make_course, student_record


def _dist(site: Path, name: str, version: str, requires: list[str] = ()) -> None:
    """A distribution's metadata in ``site`` (what pip writes, less the files)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    head = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    head += [f"Requires-Dist: {r}" for r in requires]
    # a long description after the header, as real metadata has: never read
    (info / "METADATA").write_text("\n".join(head) + "\n\nRequires-Dist: not-a-header\n")


# --- the key --------------------------------------------------------------------------------


def test_the_environment_follows_what_grading_installs(tmp_path):
    site = tmp_path / "site"
    _dist(site, "course-lib", "0.1.0", ["torch>=2", 'nbgrader==0.9.6; extra == "grader"',
                                        'pytest; extra == "dev"'])  # fmt: skip
    _dist(site, "torch", "2.13.0", ["filelock"])
    _dist(site, "filelock", "3.0")
    _dist(site, "nbgrader", "0.9.6")
    _dist(site, "pytest", "8.0")  # a dev tool: not what grading imports
    start = [("course-lib", frozenset({"bert", "grader"}))]
    found = canary.distributions(start, paths=[str(site)])
    assert found == {"course-lib": "0.1.0", "filelock": "3.0", "nbgrader": "0.9.6",
                     "torch": "2.13.0"}  # fmt: skip
    base = {"python": "CPython 3.11.7", "kernel": {}, "course_lib": "x"}
    before = canary.fingerprint({**base, "distributions": found})
    # a version changed: another fingerprint, and the change in words
    shutil.rmtree(site / "filelock-3.0.dist-info")
    _dist(site, "filelock", "3.1")
    changed = canary.distributions(start, paths=[str(site)])
    assert canary.fingerprint({**base, "distributions": changed}) != before
    assert canary.changes({"distributions": found}, {"distributions": changed}) == [
        "filelock 3.0 -> 3.1"
    ]
    # uninstalled: another fingerprint again
    shutil.rmtree(site / "nbgrader-0.9.6.dist-info")
    gone = canary.distributions(start, paths=[str(site)])
    assert gone["nbgrader"] == canary.MISSING
    assert canary.fingerprint({**base, "distributions": gone}) not in (before,)


def test_the_key_covers_the_environment(tmp_path, monkeypatch):
    """A distribution's version, the kernel spec: each changes the canary's key (it covered
    neither: a passed canary stood after transformers was uninstalled)."""
    root = make_course(tmp_path)
    course = config.load(root)
    gdir = nbgrader_dir.real(course)
    gdir.source_stamp.parent.mkdir(parents=True)
    gdir.source_stamp.write_text("stamp\n")
    env = canary.environment()
    assert env["distributions"]["nbgrader"] == "0.9.6" and "pytest" not in env["distributions"]
    assert env["kernel"]["argv"][0] == "{python}"  # where the venv lies does not count
    first = canary.key(gdir, 20, "{}")
    assert canary.key(gdir, 20, "{}") == first
    bumped = dict(env["distributions"], transformers=canary.MISSING)
    monkeypatch.setattr(canary, "distributions", lambda *a, **k: bumped)
    assert canary.key(gdir, 20, "{}") != first
    monkeypatch.undo()
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps(
        {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "language": "python", "display_name": "x", "env": {"A3_OTHER": "1"}}))  # fmt: skip
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    assert canary.key(gdir, 20, "{}") != first


def test_a_canary_passed_with_the_same_key_is_not_graded_again(tmp_path, monkeypatch):
    """A passed canary's record with the key of now stands (the shared records, then the
    course's proof, which says so): nothing is generated or graded, the record's modules and
    seconds are the verdict's."""
    course = config.load(make_course(tmp_path))
    gdir = nbgrader_dir.real(course)
    gdir.source_stamp.parent.mkdir(parents=True)
    gdir.source_stamp.write_text("stamp\n")
    stamp = canary.key(gdir, 20, course.sandbox.to_json())

    def graded(*args, **kwargs):
        raise AssertionError("the canary was graded again")

    monkeypatch.setattr(canary, "fresh", graded)  # grading's first step
    records = tmp_path / "records"
    records.mkdir()
    monkeypatch.setenv(canary.RECORDS_ENV, str(records))
    passed = {"key": stamp, "passed": True, "modules": ["json"], "seconds": 7.0}
    (records / f"{stamp}.json").write_text(json.dumps(passed))
    lines: list[str] = []
    verdict = canary.check(course, gdir, 20, 1, log=lines.append)
    assert (verdict.graded, verdict.proven, verdict.key) == (False, False, stamp)
    assert (verdict.modules, verdict.seconds, verdict.passed, lines) == (("json",), 7.0, True, [])
    (records / f"{stamp}.json").unlink()
    canary.proof_path(course).write_text(json.dumps(passed))
    verdict = canary.check(course, gdir, 20, 1, log=lines.append)
    assert verdict.proven and not verdict.graded and verdict.modules == ("json",)
    assert lines == [f"  canary: not graded: this environment is the one {canary.PROOF} proved"]
    canary.proof_path(course).write_text(json.dumps({**passed, "key": "another"}))
    with pytest.raises(AssertionError, match="graded again"):  # another key: graded
        canary.check(course, gdir, 20, 1, log=lines.append)


# --- the message ------------------------------------------------------------------------------


def test_the_message_puts_the_cause_first_and_counts_what_it_cut(tmp_path):
    """A given cell that could not import, and 25 checks that failed because of it: the import
    error first, the cut counted, and advice that fits (make setup alone does nothing when the
    venv exists)."""
    cdir = nbgrader_dir.GradingDir(tmp_path, "a3")
    graded = cdir.student_dir(cdir.autograded, canary.STUDENT)
    graded.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1") for _ in range(14)]
    error = nbformat.v4.new_output(
        "error", ename="ModuleNotFoundError", evalue="No module named 'transformers'", traceback=[]
    )
    nb.cells.append(
        nbformat.v4.new_code_cell("from transformers import AutoModel", outputs=[error])
    )
    notebooks.write_bytes(graded / "4_bert.ipynb", nbformat.writes(nb).encode())
    checks = [{"description": f"check {i}", "passed": False, "points": 0.01,
               "message": "your code raised ModuleNotFoundError"} for i in range(25)]  # fmt: skip
    result = {"notebooks": {"4_bert": {"graded": True, "verdicts": {"t": {"checks": checks}}}}}
    problems = canary.problems_of(cdir, ["4_bert"], result, killed=False)
    assert problems[0] == (
        "4_bert cell 14 raised ModuleNotFoundError: No module named 'transformers'"
    )
    message = canary.Verdict(tuple(problems), graded=True).message()
    lines = message.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  - "))
    assert "ModuleNotFoundError: No module named 'transformers'" in lines[first]
    assert f"... and {26 - canary.SHOWN} more" in message
    assert "pip install" in message and "does nothing while the venv exists" in message
    # a failed check alone: no advice about installing
    alone = canary.Verdict(("1_sums test_add: 'adds' failed: expected 3",), True).message()
    assert "pip install" not in alone and "more" not in alone


# --- a course dependency broken after the canary -----------------------------------------------


def test_the_grader_decides_whose_import_error_it_is(tmp_path):
    """The kernel's word is a hint: a student's own ModuleNotFoundError stays theirs when
    every course module still imports from the grader; a course module that no longer imports
    makes it the course's."""
    gdir = nbgrader_dir.GradingDir(tmp_path, "a3")
    raised = {"description": "d", "passed": False, "points": 1.0,
              "message": "your code raised ModuleNotFoundError"}  # fmt: skip
    result = {"notebooks": {"1_sums": {"graded": True, "verdicts": {"t": {"checks": [raised]}}}}}
    clean = {"notebooks": {"1_sums": {"graded": True, "verdicts": {}}}}
    env = canary.environment()
    fine = canary.Verdict((), False, env, ("json", "course_lib.grading.judging"))
    broken = canary.Verdict((), False, env, ("course_lib.grading.judging", "a3_no_such_module"))
    assert canary.course_fault(gdir, "ann", clean, broken) == ""  # no import error: no check
    assert canary.course_fault(gdir, "ann", result, fine) == ""  # the student's own
    why = canary.course_fault(gdir, "ann", result, broken)
    assert "THE GRADING ENVIRONMENT BROKE" in why
    assert "course module a3_no_such_module does not import here: ModuleNotFoundError" in why
    assert "course_lib.grading.judging" not in why


def _venv_copy(dest: Path) -> Path:
    """A copy of the suite's venv in hard links (a plain copy where the temporary folder is on
    another filesystem); its kernel spec names the copy's Python.
    Returns its site-packages."""
    prefix = Path(sys.prefix)
    if subprocess.run(["cp", "-al", str(prefix), str(dest)]).returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)  # another filesystem: a real copy (slower)
        subprocess.run(["cp", "-a", str(prefix), str(dest)], check=True)
    spec = dest / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    data = json.loads(spec.read_text())
    data["argv"][0] = str(dest / "bin" / "python")
    spec.unlink()  # a hard link: written anew, never through
    spec.write_text(json.dumps(data))
    site = dest / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    assert site.is_dir()
    return site


def test_a_dependency_broken_after_the_canary_stops_grading(tmp_path):
    """The fixture course imports a module of its environment; the canary passes; the module is
    removed (no distribution's version changes: the canary's key cannot see it). Grading the
    next student meets ModuleNotFoundError in the kernel; the grader finds the course's module
    unimportable: exit 1, the student not graded nor blamed, graded again once it is back."""
    site = _venv_copy(tmp_path / "venv")
    dep = site / "a3_course_dep.py"
    dep.write_text("VALUE = 1\n")
    python = str(tmp_path / "venv" / "bin" / "python")
    root = make_course(tmp_path / "course")
    solution = root / "solutions" / "a3" / "2_words.ipynb"
    nb = nbformat.read(solution, as_version=4)
    setup = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    setup.source += "\nimport a3_course_dep"
    nbformat.write(nb, solution)
    src, gdir = course_sources(root)
    folder = gdir.submitted / "ann" / "a3"
    folder.mkdir(parents=True)
    for name in ("1_sums", "2_words"):
        (folder / f"{name}.ipynb").write_text(nbformat.writes(src.solved(name)))
    env = {k: v for k, v in ENV.items() if k != canary.RECORDS_ENV}  # its own canary
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env['PATH']}"
    cmd = [python, "-m", "autograder", "--root", str(root), "grade"]

    def grade(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*cmd, *options], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )

    # the canary passes with the module; then it is removed
    first = grade()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "canary: full marks" in first.stdout
    kept = root / "autograder" / "out" / "canary" / "class" / canary.RESULT
    proof = json.loads(kept.read_text())
    assert "a3_course_dep" in proof["modules"]
    assert grades(root)[("ann", "2_words")]["autograded"] == "2"
    dep.unlink()
    proc = grade("--regrade")
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-3000:]
    assert "canary:" not in out  # its key did not change: not graded again
    assert "THE GRADING ENVIRONMENT BROKE" in out
    assert "course module a3_course_dep does not import here: ModuleNotFoundError" in out
    assert "not graded: the course's fault" in out
    record = student_record(gdir.root, "ann")
    assert record is not None and not record["worker"]  # pending: graded again next time
    assert grades(root)[("ann", "2_words")]["autograded"] == "2"  # grades.csv not rewritten
    # back: ann is graded again (not "unchanged"), full marks
    dep.write_text("VALUE = 1\n")
    again = grade()
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "grading 1 student(s)" in again.stdout
    row = grades(root)[("ann", "2_words")]
    assert (row["autograded"], row["flags"]) == ("2", "ok")
