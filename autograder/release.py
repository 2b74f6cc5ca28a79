"""``make release``: the student notebooks, the student bundle, and the checks that guard them.

Steps: stamp the solutions into nbgrader's source, run ``nbgrader generate_assignment``, check
the result, and only if every check passes copy the notebooks to ``assignments/<a>/``, write
the bundle ``autograder/out/<a>-student.zip`` and print the Colab links. The checks:

1. no solution or hidden test survives: no marker line (or misspelt marker); no line of a
   notebook's solution regions, solution cells or hidden tests in its release (lines long
   enough to be specific and not also in its public text); no copy of most of a solution
   region, in a row, in any release (a reference answer left in a plain cell, a copied class);
2. the repository and branch are stamped (no placeholder left) and each badge opens its own
   notebook;
3. every solution notebook runs without an error and passes every test, scored as nbgrader
   scores it under the course's config (an error gives 0, and so does text on stderr, except
   what ``IgnorePattern`` drops: warnings and progress bars);
4. every released notebook, with its hidden tests put back as the autograder does, fails every
   test and otherwise runs: the setup and given code raise nothing but the stubs'
   ``NotImplementedError`` (or the ``NameError`` of a name a stub never defined);
5. the student copy holds the notebooks and README only: no gradebook, source or outputs.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from . import nbgrader_dir, notebooks
from .config import PLACEHOLDERS, Course
from .execute import execute_in_child

# Lines shorter than this (after stripping) are too generic to call a leak ("return x").
MIN_SECRET_CHARS = 16
# A copied answer: at least COPY_RUN lines of one solution region, and COPY_SHARE of its
# lines, in a row in a released cell.
COPY_RUN = 3
COPY_SHARE = 0.6
# Errors the given code of a blank notebook may raise: a stub, or a name a stub never defined.
STUB_ERRORS = {"NotImplementedError", "NameError"}
# A marker, or a misspelt one ("BEGIN SOLUTON"), that nbgrader would not have acted on.
_MARKER = re.compile(r"\b(BEGIN|END)\s+(SOL|HID)", re.IGNORECASE)

STUDENT_README = """# {assignment}: student notebooks

Notebooks: {notebook_list}.

## In Colab (recommended)

Open each notebook from its link and run its setup cell first: it installs `course_lib`
(`pip install "{requirement}"`), fixes the seeds and picks the GPU when there is one
(Runtime > Change runtime type > GPU).

{links}

## On your own machine

```bash
python3 -m venv .venv
.venv/bin/pip install "{requirement}" jupyterlab
.venv/bin/jupyter lab
```

## What to hand in

Fill in the cells marked `YOUR CODE HERE` (and the written answers marked
`YOUR ANSWER HERE`), run the check after each, then hand in the `.ipynb` files **with their
names unchanged**. Do not edit, delete or move the test cells: the autograder puts them back
and flags the notebook for the instructor.
"""


class ReleaseError(RuntimeError):
    """The release failed its checks; the message lists every problem found."""


@dataclass(frozen=True)
class Release:
    """What ``release`` produced."""

    notebooks: list[str]
    bundle: Path
    colab_links: dict[str, str]


def _specific(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if len(line.strip()) >= MIN_SECRET_CHARS]


def secret_lines(source: NotebookNode) -> set[str]:
    """Lines of ``source``'s solutions and hidden tests that give something away: long enough
    to be specific, and not also in the notebook's public (released) text."""
    public: set[str] = set()
    secret: set[str] = set()
    for cell in source.cells:
        parts = notebooks.regions(cell)
        public |= {line.strip() for line in parts.public}
        secret |= set(_specific(sum(parts.solutions, []) + parts.hidden))
    return secret - public


def solution_blocks(source: NotebookNode) -> list[list[str]]:
    """The specific lines of each solution region of ``source`` with at least ``COPY_RUN``."""
    blocks = [_specific(r) for cell in source.cells for r in notebooks.regions(cell).solutions]
    return [b for b in blocks if len(b) >= COPY_RUN]


def longest_run(lines: list[str], block: list[str]) -> int:
    """The longest run of consecutive ``lines`` that all belong to ``block``."""
    wanted = set(block)
    run = longest = 0
    for line in lines:
        run = run + 1 if line in wanted else 0
        longest = max(longest, run)
    return longest


def check_no_secrets(
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    allowed_copies: tuple[str, ...] = (),
) -> list[str]:
    """Problems: a marker (or misspelt marker) line in a release; a line of a notebook's
    solutions or hidden tests in its own release; most of a solution region of any notebook,
    in a row, in a release (a reference answer left in a plain cell, a copied class). Single
    lines such as ``super().__init__()`` are shared with given code by design, and so are the
    solution regions whose first line is in ``allowed_copies`` (shown elsewhere on purpose)."""
    secrets = {name: secret_lines(nb) for name, nb in sources.items()}
    blocks = {
        name: [b for b in solution_blocks(nb) if b[0] not in allowed_copies]
        for name, nb in sources.items()
    }
    problems = []
    for name, nb in released.items():
        for i, cell in enumerate(nb.cells):
            lines = [line.strip() for line in cell.source.split("\n")]
            for line in lines:
                if _MARKER.search(line):
                    problems.append(f"{name} cell {i}: marker left in the release: {line}")
                elif line in secrets.get(name, set()):
                    problems.append(f"{name} cell {i}: solution or hidden-test line left: {line}")
            specific = _specific(lines)
            for owner, owned in blocks.items():
                for block in owned:
                    run = longest_run(specific, block)
                    if run >= max(COPY_RUN, COPY_SHARE * len(block)):
                        problems.append(
                            f"{name} cell {i}: {run} lines in a row of a solution of {owner}; "
                            "if that is on purpose, add the solution's first line to "
                            f"[release] allowed_copies in course.toml: {block[0]!r}"
                        )
            if cell.get("outputs"):
                problems.append(f"{name} cell {i}: output left in the release")
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
        if course.install_requirement not in text:
            problems.append(f"{name}: the setup cell does not install {course.install_requirement}")
    return problems


def _error(cell: NotebookNode) -> str | None:
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            return f"{output.ename}: {output.evalue}"[:300]
    return None


def _score(cell: NotebookNode, ignore: str) -> float:
    """What nbgrader gives a test cell with these outputs, once its ``IgnorePattern``
    (``ignore``) has dropped the matching stderr text."""
    from nbgrader.utils import determine_grade

    cell = notebooks.nbformat.from_dict(cell)

    def dropped(o: NotebookNode) -> bool:
        return o.output_type == "stream" and o.name == "stderr" and bool(re.search(ignore, o.text))

    cell.outputs = [o for o in cell.outputs if not (ignore and dropped(o))]
    return determine_grade(cell)[0] or 0.0


def check_solution_run(name: str, nb: NotebookNode, ignore: str = "") -> list[str]:
    """Problems of an executed solution notebook: any error, any test short of full points."""
    problems = []
    for i, cell in enumerate(nb.cells):
        error = _error(cell)
        gid = notebooks.grade_id(cell) or f"cell {i}"
        if error:
            problems.append(f"{name} (solution) {gid}: raised {error}")
        elif notebooks.is_test(cell) and _score(cell, ignore) < notebooks.points(cell):
            stderr = [o.text for o in cell.outputs if o.get("name") == "stderr"]
            problems.append(
                f"{name} (solution) {gid}: scores {_score(cell, ignore):g}/"
                f"{notebooks.points(cell):g}: nbgrader gives 0 to a test cell that writes to "
                f"stderr: {' '.join(stderr)[:300]}"
            )
    return problems


def check_blank_run(name: str, nb: NotebookNode, ignore: str = "") -> list[str]:
    """Problems of an executed blank (released, hidden tests restored) notebook: a test that
    passes, or given code failing for another reason than the stubs."""
    problems = []
    seen_solution = False
    for i, cell in enumerate(nb.cells):
        gid = notebooks.grade_id(cell) or f"cell {i}"
        error = _error(cell)
        if notebooks.is_test(cell):
            if _score(cell, ignore) > 0:
                problems.append(f"{name} (blank) {gid}: test passes on the blank notebook")
        elif error and (not seen_solution or error.split(":")[0] not in STUB_ERRORS):
            problems.append(f"{name} (blank) {gid}: given code raised {error}")
        seen_solution = seen_solution or notebooks.is_solution(cell)
    return problems


def with_hidden_tests(released: NotebookNode, source: NotebookNode) -> NotebookNode:
    """A copy of ``released`` whose test cells are the source's (hidden tests included), as
    nbgrader's autograde puts them back."""
    nb = notebooks.nbformat.from_dict(released)
    tests = notebooks.cells_by_id(source)
    for cell in nb.cells:
        gid = notebooks.grade_id(cell)
        if notebooks.is_test(cell) and gid in tests:
            cell.source = tests[gid].source
    return nb


def run_checks(
    course: Course,
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    jobs: int,
    log=print,
) -> list[str]:
    """Execute every solution and every blank notebook (``jobs`` at a time) and check them."""
    timeout = course.grade.cell_timeout
    nbgrader_config = nbgrader_dir.load_config(nbgrader_dir.real(course).root)
    ignore = nbgrader_config.IgnorePattern.get("pattern", "")
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        runs = []
        for name in sources:
            for kind, nb in (
                ("solution", sources[name]),
                ("blank", with_hidden_tests(released[name], sources[name])),
            ):
                src = Path(tmp) / f"{kind}-{name}.ipynb"
                notebooks.write(nb, src)
                runs.append((name, kind, src, Path(tmp) / f"{kind}-{name}.out.ipynb"))
        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            errors = list(pool.map(lambda r: execute_in_child(r[2], r[3], timeout, threads), runs))
        for (name, kind, _, out), error in zip(runs, errors, strict=True):
            if error:
                problems.append(f"{name} ({kind}): could not run: {error}")
                continue
            executed = notebooks.read(out)
            check = check_solution_run if kind == "solution" else check_blank_run
            problems += check(name, executed, ignore)
            seconds, slowest = max(cell_seconds(executed), default=(0.0, ""))
            log(f"  {name} ({kind}): slowest cell {slowest} took {seconds:.1f} s")
            if seconds > timeout / 3:
                log(f"  warning: that is over a third of the {timeout} s cell limit of grading")
    return problems


def cell_seconds(nb: NotebookNode) -> list[tuple[float, str]]:
    """(seconds, cell name) of every executed cell, from the timings nbclient records."""
    from datetime import datetime

    found = []
    for i, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        try:
            busy = datetime.fromisoformat(timing["iopub.status.busy"].replace("Z", "+00:00"))
            idle = datetime.fromisoformat(timing["iopub.status.idle"].replace("Z", "+00:00"))
        except (KeyError, ValueError):
            continue
        found.append(((idle - busy).total_seconds(), notebooks.grade_id(cell) or f"cell {i}"))
    return found


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


def write_bundle(course: Course, names: list[str]) -> Path:
    """Zip the released notebooks and a README on installing course_lib, for publishing."""
    links = "\n".join(f"- [{n}]({course.colab_url(n)})" for n in names)
    readme = STUDENT_README.format(
        assignment=course.assignment,
        notebook_list=", ".join(f"`{n}.ipynb`" for n in names),
        requirement=course.install_requirement,
        links=links,
    )
    course.out_dir.mkdir(parents=True, exist_ok=True)
    tmp = course.bundle_path.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{course.assignment}/README.md", readme)
        for n in names:
            zf.write(course.assignments_dir / f"{n}.ipynb", f"{course.assignment}/{n}.ipynb")
    tmp.replace(course.bundle_path)
    return course.bundle_path


def publish(course: Course, gdir: nbgrader_dir.GradingDir, names: list[str]) -> None:
    """Copy the checked release into ``assignments/<a>/`` (removing notebooks no longer in it)."""
    course.assignments_dir.mkdir(parents=True, exist_ok=True)
    for old in course.assignments_dir.glob("*.ipynb"):
        if old.stem not in names:
            old.unlink()
    for n in names:
        nb = notebooks.strip_outputs(notebooks.read(gdir.release / f"{n}.ipynb"))
        target = course.assignments_dir / f"{n}.ipynb"
        data = (notebooks.nbformat.writes(nb) + "\n").encode()
        if not target.exists() or target.read_bytes() != data:
            notebooks.write_bytes(target, data)


def release(course: Course, jobs: int | None = None, log=print) -> Release:
    """Generate, check and publish the student notebooks; raise :class:`ReleaseError` listing
    every problem (and leave ``assignments/`` untouched) when a check fails."""
    gdir = nbgrader_dir.real(course)
    log(f"generating the student version of {course.solutions_dir} with nbgrader ...")
    nbgrader_dir.generate_assignment(course, gdir, force=True)
    names = course.notebooks()
    sources = {n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names}
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    problems = check_no_secrets(sources, released, course.allowed_copies)
    problems += check_stamped(course, released)
    problems += check_student_copy(names, gdir.release)
    for name, nb in sources.items():
        for cell in nb.cells:
            if notebooks.is_test(cell) and notebooks.BEGIN_HIDDEN not in cell.source:
                log(f"note: {name} {notebooks.grade_id(cell)} has no hidden tests")
    workers = course.grade.workers(jobs)
    log(f"running {len(names)} solution and {len(names)} blank notebooks in quick mode ...")
    problems += run_checks(course, sources, released, workers, log)
    if problems:
        raise ReleaseError(
            f"release failed {len(problems)} check(s); assignments/ left unchanged:\n  "
            + "\n  ".join(problems)
        )
    publish(course, gdir, names)
    bundle = write_bundle(course, names)
    problems = check_student_copy(names, course.assignments_dir, bundle)
    if problems:
        raise ReleaseError(
            "the student copy holds more than the notebooks:\n  " + "\n  ".join(problems)
        )
    links = {n: course.colab_url(n) for n in names}
    log(f"released {len(names)} notebooks to {course.assignments_dir}")
    log(f"student bundle: {bundle}")
    log("Colab links (live once the branch is pushed):")
    for n, url in links.items():
        log(f"  {n}: {url}")
    return Release(names, bundle, links)
