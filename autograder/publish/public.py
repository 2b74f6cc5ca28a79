"""The student-facing repository: what ``course.toml``'s ``github_repo`` should hold.

This repository is the instructors' (solutions, judges, the gradebook's code, the known-wrong
answers of ``tests/variant_sets``): publishing it would hand students every answer. Students
need only two things from GitHub: ``pip install "course-lib @ git+https://github.com/<repo>"``
(``pyproject.toml`` and ``course_lib/``) and the Colab badges (``assignments/<a>/*.ipynb``).
``make public`` writes exactly that tree to ``autograder/out/public/`` (after ``make release``),
for the instructor to push to the public repository (a ``.git`` folder in it is kept, so
the folder can be a clone of that repository)::

    public/
      README.md          the student README (links, install, what to hand in)
      pyproject.toml     this repository's, unchanged (the package and its extras)
      course_lib/        the library, Python files and bundled data only
      assignments/<a>/   the released notebooks
      .gitignore

:func:`check_tree` refuses a tree with anything else in it, and one where ``course_lib``
holds most of a solution region in a row or a sentence of an instructor-only answer (the rule
that ``course_lib`` never contains the code students must write, checked like the release
checks a student notebook). The released notebooks are checked again (no instructor-only
line, stamped for the real repository) because ``assignments/`` may have been edited since.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder.course import nbgrader_dir, notebooks
from autograder.course.config import Course
from autograder.publish import leaks, release, releasechecks

# Top-level entries of the public tree, and the file types course_lib may ship.
TOP_LEVEL = frozenset({"README.md", "pyproject.toml", "course_lib", "assignments", ".gitignore"})
LIBRARY_SUFFIXES = frozenset({".py", ".txt"})
GITIGNORE = ".venv/\n__pycache__/\n*.pyc\n*.egg-info/\n.ipynb_checkpoints/\nresults/\n"

PUBLIC_HEADER = """<!-- Written by `make public` in the instructors' repository. -->
This repository holds what students of {assignment} need: the `course_lib` package (installed
by each notebook's setup cell) and the notebooks in `assignments/{assignment}/`.

"""


class PublicError(RuntimeError):
    """The public tree failed its checks; the message lists every problem."""


def library_files(root: Path) -> list[Path]:
    """The files of ``root/course_lib`` a student install needs (paths relative to ``root``)."""
    lib = root / "course_lib"
    return sorted(
        p.relative_to(root)
        for p in lib.rglob("*")
        if p.is_file() and p.suffix in LIBRARY_SUFFIXES and "__pycache__" not in p.parts
    )


def library_problems(sources: dict[str, nbformat.NotebookNode], files: dict[str, str]) -> list[str]:
    """Problems: a library file (``files``: path -> text) holding most of a solution region
    of any notebook in a row, or a sentence of an instructor-only answer."""
    blocks = [(name, b) for name, nb in sources.items() for b in leaks.solution_blocks(nb)]
    sentences = {s: name for name, nb in sources.items() for s in leaks.secret_sentences(nb)}
    problems = []
    for path, text in files.items():
        specific = leaks.specific_lines(text.split("\n"))
        for owner, block in blocks:
            run = leaks.longest_run(specific, block)
            if run >= max(leaks.COPY_RUN, leaks.COPY_SHARE * len(block)):
                problems.append(
                    f"{path}: {run} lines in a row of a solution of {owner} ({block[0]!r}): "
                    "course_lib never holds the code students write"
                )
        for sentence in leaks.sentences_of(text):
            if sentence in sentences:
                problems.append(
                    f"{path}: a sentence of an instructor-only answer of {sentences[sentence]}: "
                    f"{sentence[:80]!r}"
                )
    return problems


def check_tree(course: Course, tree: Path) -> list[str]:
    """Problems of a public tree: entries beyond :data:`TOP_LEVEL`, files other than the
    notebooks under ``assignments/``, library files of other types, solution code in the
    library, instructor-only text or a wrong stamp in the notebooks."""
    problems = [
        f"unexpected entry in the public tree: {p.name}"
        for p in sorted(tree.iterdir())
        if p.name not in TOP_LEVEL
    ]
    names = course.notebooks()
    expected = {f"assignments/{course.assignment}/{n}.ipynb" for n in names}
    found = {str(p.relative_to(tree)) for p in (tree / "assignments").rglob("*") if p.is_file()}
    problems += [f"unexpected file in the public tree: {f}" for f in sorted(found - expected)]
    problems += [f"missing from the public tree: {f}" for f in sorted(expected - found)]
    lib = tree / "course_lib"
    shipped = {str(p.relative_to(tree)) for p in lib.rglob("*") if p.is_file()}
    wanted = {str(p) for p in library_files(tree)}
    problems += [f"unexpected file in course_lib: {f}" for f in sorted(shipped - wanted)]
    sources = {n: nbgrader_dir.stamped_solution(course, n) for n in names}
    files = {f: (tree / f).read_text() for f in sorted(wanted)}
    problems += library_problems(sources, files)
    released = {
        n: notebooks.read(tree / f"assignments/{course.assignment}/{n}.ipynb")
        for n in names
        if f"assignments/{course.assignment}/{n}.ipynb" in found
    }
    problems += leaks.check_no_secrets(sources, released, course.allowed_copies)
    problems += releasechecks.check_stamped(course, released)
    return problems


def student_readme(course: Course, names: list[str]) -> str:
    """The public tree's README: who it is for, then the student bundle's README."""
    return PUBLIC_HEADER.format(assignment=course.assignment) + release.student_readme(
        course, names
    )


def build(course: Course, out: Path | None = None, draft: bool = False) -> Path:
    """Write the public tree to ``out`` (default ``autograder/out/public``) from
    ``course_lib/``, ``pyproject.toml`` and the released ``assignments/``; raise
    :class:`PublicError` listing every problem (``out`` is then left as it was). ``draft``:
    allow a placeholder repository (checks only: students could not install from it)."""
    out = out or course.out_dir / "public"
    names = course.notebooks()
    problems = []
    if course.placeholder_repo and not draft:
        problems.append(
            f"course.toml: github_repo = {course.github_repo!r} is a placeholder: set the "
            "course's real public repository before publishing (DRAFT=1 for checks only)"
        )
    missing = [n for n in names if not (course.assignments_dir / f"{n}.ipynb").is_file()]
    if missing:
        problems.append(f"not released yet (run make release): {', '.join(missing)}")
    if problems:
        raise PublicError("\n  ".join(["public tree not written:", *problems]))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".public-", dir=out.parent))
    try:
        for rel in library_files(course.root):
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(course.root / rel, target)
        folder = staging / "assignments" / course.assignment
        folder.mkdir(parents=True)
        for n in names:
            shutil.copyfile(course.assignments_dir / f"{n}.ipynb", folder / f"{n}.ipynb")
        shutil.copyfile(course.root / "pyproject.toml", staging / "pyproject.toml")
        (staging / "README.md").write_text(student_readme(course, names))
        (staging / ".gitignore").write_text(GITIGNORE)
        problems = check_tree(course, staging)
        if problems:
            raise PublicError(
                "\n  ".join([f"public tree failed {len(problems)} check(s):", *problems])
            )
        if (out / ".git").is_dir():  # a clone of the public repository: keep its history
            (out / ".git").rename(staging / ".git")
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return out
