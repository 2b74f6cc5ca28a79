"""`make grade` end to end on the repository's own notebooks (solutions/a3): the demo class of
``autograder/course/demo.py`` graded as a real class, expected grades derived from the solutions'
points, and one of its students graded again by Gradescope's ``run_autograder``: the same
points, test by test. (The tiny course's classes, with exact grades:
``tests/grader/marking/test_grade.py``.)
"""

from __future__ import annotations

import shutil
import time

import pytest

from autograder.course import config, demo, nbgrader_dir, notebooks
from autograder.course.spec import is_solution, spec_of
from helpers import ROOT, autograder, grades, make_course

# ---------------------------------------------------------------------------------------------
# The repository's own notebooks: the demo class of the README's `make grade`.


def expected_real(
    student: str, index: int, regular: list[str], name: str, spec, solution_cells: int
):
    """(points: 'max' | 'zero' | 'part', flags) for one demo student and notebook, from the
    demo's definition (autograder/course/demo.py) and the notebook's points (``regular``: the
    notebooks that are not extra credit)."""
    manual = {"needs-manual"} if spec.manual_max > 0 else set()
    full = ("max", manual or {"ok"})
    first = index == 0
    if student == "s1-full":
        return full
    if student == "s2-blank":
        return ("zero", {"ok"})
    if student == "s10-no-extra":  # an extra-credit notebook not handed in: no flag
        return full if name in regular else ("zero", {"ok"})
    if student == "s3-partial":
        solved = (solution_cells + 1) // 2 if index % 2 == 0 else solution_cells // 2
        kind = "zero" if solved == 0 else "max" if solved == solution_cells else "part"
        return (kind, {"ok"})
    last = len(regular) > 1 and name == regular[-1]
    if not first and not (student == "s9-invalid-json" and last):
        return full
    return {
        "s4-raises": ("zero", {"ok"}),
        "s5-loop": ("zero", {"timeout"}),
        "s6-tampered": ("max", {"tampered"} | manual),
        "s7-deleted": ("max", {"tampered"} | manual),
        "s8-renamed": ("max", {"renamed"} | manual),
        "s9-invalid-json": ("zero", {"failed"}) if first else ("zero", {"missing"}),
    }[student]


FIRST_ONLY = {  # these hand in their first notebook only (real_demo)
    "s1-full", "s2-blank", "s4-raises", "s6-tampered", "s7-deleted", "s8-renamed",
    "s9-invalid-json", "s10-no-extra",
}  # fmt: skip
# Left out of the real class (real_demo): s5-loop's `while True: pass` would keep a core busy
# for the whole cell time limit. Its case (a timeout in a notebook, the rest graded) is the
# tiny demo class's (tests/grader/marking/test_grade.py), graded with the same code.
LEFT_OUT = "s5-loop"


@pytest.fixture(scope="module")
def real_demo(tmp_path_factory):
    """The demo class of ``autograder/course/demo.py`` on the repository's own notebooks, handed in
    as a real class and graded by one ``make grade``. Only s3-partial (points lost and kept in
    every notebook) hands in every notebook; the others (:data:`FIRST_ONLY`) their first one
    only: the canary grades every solution as a student first (full marks, or grading stops),
    the release checks every blank notebook (no point), and s10-no-extra's case is what it
    leaves out. s5-loop (:data:`LEFT_OUT`) hands in nothing. The tiny course's demo class
    grades the demo as the README's ``make grade`` shows it."""
    root = make_course(tmp_path_factory.mktemp("real-demo"), source=ROOT)
    # 45 s per cell, not the real class's 300: a cell that hangs shows in minutes (the slowest
    # cell of any notebook's grading run takes ~2.5 s on an idle machine). Set in
    # course.toml, not by --cell-timeout: the Gradescope run below grades with the same limit,
    # so it finds the canary this run passed instead of grading the solutions again.
    toml = root / "course.toml"
    text = toml.read_text()
    assert text.count("\ncell_timeout = 300\n") == 1
    toml.write_text(text.replace("\ncell_timeout = 300\n", "\ncell_timeout = 45\n"))
    course = config.load(root)
    assert course.grade.cell_timeout == 45
    gdir = nbgrader_dir.real(course)
    nbgrader_dir.generate_assignment(course, gdir)
    demo.build(course, gdir)
    later = {f"{n}.ipynb" for n in course.notebooks()[1:]}  # s8-renamed's first is renamed
    shutil.rmtree(gdir.student_dir(gdir.submitted, LEFT_OUT).parent)
    for student in FIRST_ONLY:
        for path in gdir.student_dir(gdir.submitted, student).iterdir():
            if path.name in later:
                path.unlink()
    start = time.perf_counter()
    proc = autograder(root, "grade", "--jobs", "2", timeout=3600)
    return root, proc.stdout, time.perf_counter() - start


@pytest.mark.slow
@pytest.mark.long
def test_real_demo_class(real_demo):
    root, out, seconds = real_demo
    course = config.load(root)
    names = course.notebooks()
    rows = grades(root)
    sources = {n: notebooks.read(course.solutions_dir / f"{n}.ipynb") for n in names}
    specs = {n: spec_of(nb, n) for n, nb in sources.items()}
    cells = {
        n: sum(is_solution(c) and c.cell_type == "code" for c in nb.cells)
        for n, nb in sources.items()
    }
    problems = []
    regular = [n for n in names if n not in course.grade.extra_credit]
    for student, _ in demo.students(course.grade.extra_credit):
        if student.student_id == LEFT_OUT:
            assert not any(s == LEFT_OUT for s, _ in rows)
            continue
        for i, name in enumerate(names):
            row = rows[(student.student_id, name)]
            kind, flags = expected_real(
                student.student_id, i, regular, name, specs[name], cells[name]
            )
            if student.student_id in FIRST_ONLY and i > 0:  # not handed in (the fixture)
                kind, flags = ("zero", {"missing"} if name in regular else {"ok"})
            points, most = float(row["autograded"]), specs[name].autograded_max
            ok_points = {
                "max": points == pytest.approx(most),
                "zero": points == 0,
                "part": 0 < points < most - 1e-9,
            }[kind]
            if not ok_points or set(row["flags"].split(";")) != flags:
                problems.append(
                    f"{student.student_id} {name}: got {points:g} {row['flags']}, "
                    f"want {kind} of {most:g} {sorted(flags)} ({row['notes']})"
                )
            assert float(row["manual"]) == 0
    assert not problems, "\n".join(problems)
    print(f"\nreal demo class: {len(names)} notebooks, graded in {seconds:.0f} s\n{out}")


@pytest.mark.slow
@pytest.mark.long
def test_real_course_student_on_gradescope_equals_make_grade(real_demo, tmp_path):
    """One student of the repository's own course (the partial one: points lost and kept),
    graded by make grade (the demo class above) and by Gradescope's run_autograder: the same
    points, test by test."""
    import jsonschema
    from test_gradescope import SCHEMA, emulate, name_parts

    from autograder.deploy import gradescope

    root, _, seconds = real_demo
    autograder(root, "gradescope", timeout=600)
    course = config.load(root)
    gdir = nbgrader_dir.real(course)
    rows = {n: r for (s, n), r in grades(root).items() if s == "s3-partial"}
    folder = gdir.student_dir(gdir.submitted, "s3-partial")
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    zip_path = course.out_dir / gradescope.ZIP_NAME
    result, ag_seconds, out = emulate(zip_path, files, tmp_path / "ag")
    # The canary's key does not depend on where the course is: the zip's course found the one
    # the class's make grade passed (the suite shares canary records), with the same limits.
    assert "canary: full marks" not in out and "canary: grading" not in out
    # nothing of an honest student's runs on (ended sandboxes, grading's own helpers: not counted)
    assert "left running" not in out, out[-2000:]
    # every autograded point; of the extra credit, what [grade] extra_credit_cap lets count
    want = sum(float(r["extra_counted"] or r["autograded"]) for r in rows.values())
    assert result["score"] == pytest.approx(want)
    assert 0 < result["score"]
    by_test = {name_parts(t): t for t in result["tests"]}
    for nb, row in rows.items():
        for item in row["cells"].split():
            gid, points = item.split("=")
            score, most = (float(x) for x in points.split("/"))
            test = by_test[(nb, gid)]
            expected = 0.0 if "manual-grading" in test["tags"] else score
            assert (test["score"], test["max_score"]) == (pytest.approx(expected), most)
    assert not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(result))
    size = zip_path.stat().st_size
    print(f"\nreal course: make grade {seconds:.0f} s for the class, run_autograder "
          f"{ag_seconds:.0f} s for one student; zip {size / 1e6:.2f} MB")  # fmt: skip
