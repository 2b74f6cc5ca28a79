"""``make release``'s static checks: what it finds in the solutions and their student copies
before any notebook runs (``release.py`` runs them in this order, and a failure stops it).

1. the cheap checks, before nbgrader: each notebook's points as ``[release.points]`` in
   ``course.toml`` fixes them (:func:`check_points`), and the lint CI runs (:func:`check_lint`:
   ``ruff check`` and ``ruff format --check``);
2. then, on what ``nbgrader generate_assignment`` made of the stamped solutions
   (:func:`static_problems`): nothing instructor-only survives (``leaks.py``); the repository is
   a real one (not a placeholder such as ``example-org/...``, unless the release is a draft);
   the stamp is complete and each badge opens its own notebook (:func:`check_stamped`); every
   test is well formed (:func:`spec_problems`); the student copy holds the notebooks only
   (:func:`check_student_copy`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import nbgrader_dir, notebooks
from autograder.course.config import PLACEHOLDERS, REPO_ROOT, Course
from autograder.course.spec import (
    SKIP_TAG,
    Spec,
    grade_id,
    is_grade,
    is_instructor_only,
    is_solution,
    is_test,
    spec_of,
    tags,
)
from autograder.kernels import judge
from autograder.publish.leaks import check_no_secrets

# The lint CI runs (`make lint`), on the whole course repository: ruff's arguments.
LINT = (("check",), ("format", "--check"))
LINT_LINES = 60  # lines of ruff's output shown when the lint fails
RUFF_SETTINGS = ("pyproject.toml", "ruff.toml", ".ruff.toml")


def spec_problems(spec: Spec, nb: NotebookNode) -> list[str]:
    """Authoring problems of a solution notebook's tests: a test without checks, checks whose
    points do not add up to the test's, a hidden region (it would run in the student's
    kernel)."""
    problems = []
    try:
        checks = judge.collect_checks(spec)
    except judge.JudgeError as err:
        return [f"{spec.name}: {err}"]
    for gid, test in spec.tests.items():
        mine = checks.get(gid, [])
        total = round(sum(c.points for c in mine), 6)
        if not mine:
            problems.append(f"{spec.name} {gid}: no judge cell with checks follows this test")
        elif abs(total - test.points) > 1e-6:
            problems.append(
                f"{spec.name} {gid}: its checks are worth {total:g} points, "
                f"the test cell {test.points:g}"
            )
    for i, cell in enumerate(nb.cells):
        if SKIP_TAG in tags(cell) and (
            cell.cell_type != "code"
            or is_solution(cell)
            or is_grade(cell)
            or is_instructor_only(cell)
        ):
            problems.append(
                f"{spec.name} {grade_id(cell) or f'cell {i}'}: only given code cells "
                f"may be tagged {SKIP_TAG} (not answers, tests, judges or markdown)"
            )
        if is_test(cell) and notebooks.regions(cell).hidden:
            problems.append(
                f"{spec.name} {grade_id(cell)}: its hidden region would run in the "
                "student's kernel: put what it checks in the judge cell"
            )
    return problems


def check_points(course: Course, solutions: dict[str, NotebookNode]) -> list[str]:
    """Problems: a notebook whose autograded tests or written answers add up to other points
    than ``[release.points]`` in ``course.toml`` fixes (the handout's), or that has no line
    there."""
    problems = []
    for name, nb in solutions.items():
        spec = spec_of(nb, name)
        auto, manual = round(spec.autograded_max, 6), round(spec.manual_max, 6)
        fixed = course.points.get(name)
        if fixed is None:
            problems.append(
                f"{name}: course.toml fixes no points for this notebook: add the line "
                f"`{name} = {{ autograded = {auto:g}, manual = {manual:g} }}` under "
                "[release.points] (what its cells add up to now), with the handout's points"
            )
            continue
        for kind, have, want in (
            ("autograded tests", auto, fixed.autograded),
            ("written answers", manual, fixed.manual),
        ):
            if abs(have - want) > 1e-6:
                problems.append(
                    f"{name}: its {kind} add up to {have:g} points, the handout gives them "
                    f"{want:g} ([release.points] {name} in course.toml): change the cells' "
                    "points back, or the handout and that line"
                )
    return problems


def check_lint(course: Course) -> list[str]:
    """Problems: what CI's lint (``ruff check .`` and ``ruff format --check .``, the venv's
    ruff) finds in the course repository, with ruff's own output. A course root without ruff
    settings of its own (a test's copy of a course) has its solutions linted, with this
    repository's settings."""
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        return [f"lint: {ruff} not found: `make setup` installs it (the dev extra)"]
    if any((course.root / f).exists() for f in RUFF_SETTINGS):
        where = ["."]
    else:
        where = ["--config", str(REPO_ROOT / "pyproject.toml"), str(course.solutions_dir)]
    problems = []
    for args in LINT:
        proc = subprocess.run(
            [str(ruff), *args, *where], cwd=course.root, capture_output=True, text=True
        )
        if proc.returncode != 0:
            lines = (proc.stdout + proc.stderr).rstrip().split("\n")
            shown = lines[-LINT_LINES:]
            if len(lines) > LINT_LINES:
                shown = [f"... ({len(lines) - LINT_LINES} lines above)", *shown]
            problems.append(
                f"lint: `ruff {' '.join(args)} {where[-1]}` fails (as CI will): run "
                "`make format`, then fix by hand what it cannot:\n    " + "\n    ".join(shown)
            )
    return problems


def check_stamped(course: Course, released: dict[str, NotebookNode]) -> list[str]:
    """Problems: placeholders left, or a badge that does not open its own notebook."""
    problems = []
    for name, nb in released.items():
        text = "\n".join(cell.source for cell in nb.cells)
        for placeholder in PLACEHOLDERS:
            if placeholder in text:
                problems.append(f"{name}: placeholder {placeholder} left after stamping")
        for url in re.findall(r"https://colab\.research\.google\.com/github/[^\s)\"']+", text):
            if url != course.colab_url(name):
                problems.append(
                    f"{name}: Colab badge opens {url}, expected {course.colab_url(name)}"
                )
        if not re.search(course.install_pattern, text):
            problems.append(f"{name}: the setup cell does not install {course.install_requirement}")
    return problems


def check_student_copy(names: list[str], folder: Path, bundle: Path | None = None) -> list[str]:
    """Problems: anything in the student copy but the notebooks (and the bundle's README)."""
    expected = {f"{n}.ipynb" for n in names}
    problems = [
        f"{folder}: unexpected file in the student copy: {p.name}"
        for p in folder.iterdir()
        if p.name not in expected
    ]
    if bundle is not None:
        with zipfile.ZipFile(bundle) as zf:
            entries = set(zf.namelist())
        wanted = {f"{folder.name}/{n}" for n in expected | {"README.md"}}
        problems += [f"{bundle.name}: unexpected entry {e}" for e in sorted(entries - wanted)]
        problems += [f"{bundle.name}: missing entry {e}" for e in sorted(wanted - entries)]
    return problems


def static_problems(
    course: Course,
    gdir: nbgrader_dir.GradingDir,
    solutions: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    draft: bool,
    log=print,
) -> list[str]:
    """Problems the release finds in what ``generate_assignment`` made, running nothing:
    a placeholder repository (unless ``draft``), anything instructor-only in the release
    (:func:`leaks.check_no_secrets`), the stamp, the student copy. (Ill-formed tests,
    :func:`spec_problems`, are found while nbgrader runs.)"""
    problems = []
    if course.placeholder_repo:
        if draft:
            log(f"DRAFT release: {course.github_repo} is a placeholder: not for students")
        else:
            problems.append(
                f"course.toml: github_repo = {course.github_repo!r} is a placeholder: set the "
                "course's real public repository (students install course_lib from it), or "
                "release a draft for checks only (make release DRAFT=1)"
            )
    problems += check_no_secrets(solutions, released, course.allowed_copies)
    problems += check_stamped(course, released)
    problems += check_student_copy(list(released), gdir.release)
    return problems
