"""``make similarity``: which students' answers look alike, for the instructor's eyes only.

A lead for a human, not a verdict: it changes no grade, sets no flag and writes nothing a
student sees. It reads every student's *answer cells* (the code cells nbgrader marks
``solution: true``: the code the student wrote), per notebook, and compares them pairwise, with
the course's own solutions (``solutions/<a>/``: always, the instructor has them) and with a
folder of reference code when the instructor gives one (past terms, solutions found online).
Matches to the solutions and to reference code are listed apart from the pairs of students.
Notebooks are read as JSON only (``intake.parse``): no student code runs. A notebook that
cannot be read is skipped with a line that says why; the others go on.

How two answers are compared (copydetect's winnowing; the stub and code everybody writes are
not evidence; identical answers grouped apart) is ``similarity_match.py``'s.

Output, next to grades.csv: ``autograder/out/similarity.html`` (the pairs, each with both
answers side by side and the matched code highlighted; one self-contained page, every string
of student code escaped by Jinja2) and ``autograder/out/similarity.csv`` (every pair listed).
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from nbformat import NotebookNode

from autograder.course import nbgrader_dir, notebooks, spec
from autograder.course.config import Course, SimilaritySettings
from autograder.course.nbgrader_dir import STUDENT_ID
from autograder.handin import intake
from autograder.reports import pages
from autograder.tools.similarity_match import (
    REFERENCE_PREFIX,
    SOLUTION_PREFIX,
    Answer,
    NotebookStats,
    Pair,
    compare_notebook,
    fingerprint,
)

TEMPLATE = "similarity.html.j2"  # in templates/ (pages.py)
HTML_NAME, CSV_NAME = "similarity.html", "similarity.csv"
# kind: "students" (a pair of students), "solution" or "reference" (a student's match to it)
CSV_COLUMNS = ("kind", "rank", "notebook", "student_a", "student_b", "score", "share_a",
               "share_b", "matched_tokens")  # fmt: skip
MAX_CODE_CHARS = 200_000  # of one student's answers to one notebook (more is not an answer)
MAX_REFERENCE_BYTES = 5_000_000  # a reference file larger than this is skipped
REFERENCE_SUFFIXES = (".py", ".ipynb")


@dataclass
class Report:
    """The result: pairs of students, and matches of a student to reference code (the
    course's solutions included), at or above the threshold, highest first; what was skipped."""

    settings: SimilaritySettings
    pairs: list[Pair] = field(default_factory=list)  # two students
    matches: list[Pair] = field(default_factory=list)  # a student, and a solution or reference
    stats: dict[str, NotebookStats] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    students: int = 0
    reference: str = ""  # the reference folder, as given ("" : none)
    solutions: str = ""  # the course's solutions compared with ("" : none found)


# --- reading -----------------------------------------------------------------------------------


def released_notebooks(course: Course) -> dict[str, NotebookNode]:
    """The student copies (``assignments/<a>/``), by notebook name: their answer cells are
    the stub."""
    found = {}
    for name in course.notebooks():
        path = course.assignments_dir / f"{name}.ipynb"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: run make release first")
        found[name] = notebooks.read(path)
    return found


def answer_ids(released: NotebookNode) -> list[str]:
    """The grade ids of ``released``'s answer cells (code cells marked ``solution: true``)."""
    return [
        spec.grade_id(c)
        for c in released.cells
        if c.cell_type == "code" and spec.is_solution(c) and spec.grade_id(c)
    ]


def join_cells(cells: list[tuple[str, str]]) -> tuple[str, list[tuple[int, str]]]:
    """``(label, source)`` cells as one text, and where each cell starts (line index)."""
    parts, starts, line = [], [], 0
    for label, source in cells:
        source = source.rstrip("\n")
        starts.append((line, label))
        parts.append(source)
        line += source.count("\n") + 2  # the cell's lines and one blank line after it
    return "\n\n".join(parts) + "\n", starts


def answer_cells(nb: NotebookNode, ids: list[str]) -> list[tuple[str, str]]:
    """``(label, source)`` of ``nb``'s answer cells, in notebook order: code cells marked
    ``solution: true`` or carrying the grade id of an answer cell (``ids``), labelled ``cell
    <grade id>`` (``cell <number>`` for a cell whose grade id is not an answer's)."""
    found = []
    for i, cell in enumerate(nb.cells):
        gid = spec.grade_id(cell)
        if cell.cell_type == "code" and (spec.is_solution(cell) or gid in ids):
            source = cell.source if isinstance(cell.source, str) else ""
            label = gid if isinstance(gid, str) and gid in ids else str(i + 1)
            found.append((f"cell {label}", source))
    return found


def read_student(
    folder: Path, student: str, released: dict[str, NotebookNode], log=print
) -> tuple[dict[str, Answer], list[str]]:
    """``student``'s answers by notebook (``folder`` is ``submitted/<student>/<a>/``), and a
    line per file skipped. A file under another name (``Copy of 1_gru.ipynb``) counts for the
    notebook it matches by content, as ``make grade`` decides, when no file has its name."""
    skipped: list[str] = []
    exact: dict[str, NotebookNode] = {}
    others: dict[str, NotebookNode] = {}
    for path in intake.submitted_files(folder)[: intake.MAX_FILES]:
        try:
            nb, why = intake.parse(path.read_bytes())
        except OSError as err:
            nb, why = None, f"unreadable ({err.strerror})"
        if nb is None:
            skipped.append(f"{student}/{path.name}: skipped, {why}")
        elif path.stem in released:
            exact[path.stem] = nb
        else:
            match = intake.best_match(nb, released)
            if match is None:
                skipped.append(f"{student}/{path.name}: skipped, matches no assignment notebook")
            elif match in others:
                skipped.append(f"{student}/{path.name}: skipped, another file is also {match}")
            else:
                others[match] = nb
    answers = {}
    for name, nb in {**others, **exact}.items():
        cells = answer_cells(nb, answer_ids(released[name]))
        code, starts = join_cells(cells)
        if len(code) > MAX_CODE_CHARS:
            skipped.append(f"{student}/{name}: answer cells cut to {MAX_CODE_CHARS:,} characters")
            code = code[:MAX_CODE_CHARS]
        answers[name] = Answer(student, name, code, starts)
    for line in skipped:
        log("  " + line)
    return answers, skipped


def read_reference(
    folder: Path, released: dict[str, NotebookNode], log=print
) -> tuple[dict[str, list[Answer]], list[str]]:
    """The reference code in ``folder`` (searched recursively, links not followed), by the
    notebook it is compared with: a notebook named like an assignment notebook, or matching one
    by content, is compared with that one (its answer cells, or all its code cells when it has
    no nbgrader metadata); a ``.py`` file and any other notebook, with every notebook."""
    found: dict[str, list[Answer]] = {name: [] for name in released}
    skipped: list[str] = []
    for where, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for filename in sorted(files):
            path = Path(where) / filename
            rel = path.relative_to(folder).as_posix()
            if path.suffix not in REFERENCE_SUFFIXES or path.is_symlink():
                continue
            if path.stat().st_size > MAX_REFERENCE_BYTES:
                skipped.append(f"reference {rel}: skipped, over {MAX_REFERENCE_BYTES:,} bytes")
                continue
            data = path.read_bytes()
            if path.suffix == ".py":
                code = data.decode("utf-8", "replace")
                for name in released:
                    found[name].append(Answer(REFERENCE_PREFIX + rel, name, code, [(0, rel)]))
                continue
            nb, why = intake.parse(data)
            if nb is None:
                skipped.append(f"reference {rel}: skipped, {why}")
                continue
            target = path.stem if path.stem in released else intake.best_match(nb, released)
            for name in [target] if target else list(released):
                cells = answer_cells(nb, answer_ids(released[name])) or [
                    (f"cell {i + 1}", c.source) for i, c in enumerate(nb.cells)
                    if c.cell_type == "code"
                ]  # fmt: skip
                code, starts = join_cells(cells)
                found[name].append(Answer(REFERENCE_PREFIX + rel, name, code, starts))
    for line in skipped:
        log("  " + line)
    return found, skipped


def read_solutions(course: Course, released: dict[str, NotebookNode]) -> dict[str, list[Answer]]:
    """The course's solutions (``solutions/<a>/<nb>.ipynb``, the instructor's own files):
    each notebook's answer cells, as a student who hands in the solution has them."""
    found: dict[str, list[Answer]] = {name: [] for name in released}
    for name, nb in released.items():
        path = course.solutions_dir / f"{name}.ipynb"
        if path.is_file():
            cells = answer_cells(notebooks.read(path), answer_ids(nb))
            code, starts = join_cells(cells)
            owner = SOLUTION_PREFIX + path.relative_to(course.root).as_posix()
            found[name].append(Answer(owner, name, code, starts))
    return found


# --- the stub ---------------------------------------------------------------------------------


def stub_hashes(released: NotebookNode, noise: int) -> np.ndarray:
    """The fingerprints of ``released``'s answer cells as handed out, each alone and joined as
    a student's answers are: copydetect's boilerplate (its own ``_get_boilerplate_hashes``
    fingerprints the same way)."""
    cells = answer_cells(released, answer_ids(released))
    stubs = [source for _, source in cells] + [join_cells(cells)[0]]  # and across cells
    hashes = [h for s in stubs for h in fingerprint(s, noise).hashes]
    return np.unique(np.array(hashes, dtype=np.int64))


def find(
    course: Course, reference: Path | None = None, demo_class: bool | None = None, log=print
) -> Report:
    """Compare the class's answers (``autograder/class/submitted/``; the demo class's when there is
    no submission and ``demo_class`` is not False) with each other, with the course's solutions,
    and with ``reference``'s code (default: ``[similarity] reference``, if set)."""
    settings = course.similarity
    gdir = nbgrader_dir.class_dir(course, demo_class)
    if reference is None and settings.reference:
        reference = course.root / settings.reference
    if reference is not None and not reference.is_dir():
        raise FileNotFoundError(f"reference folder {reference} not found")
    report = Report(settings, reference=str(reference or ""))
    released = released_notebooks(course)
    solutions = read_solutions(course, released)
    if any(solutions.values()):
        report.solutions = course.solutions_dir.relative_to(course.root).as_posix()
    log(f"similarity of the answers in {gdir.submitted}")
    by_notebook: dict[str, list[Answer]] = {name: [] for name in released}
    for student in nbgrader_dir.list_students(gdir):
        if not STUDENT_ID.fullmatch(student):
            report.skipped.append(f"{student!r}: skipped, not a usable student id")
            continue
        report.students += 1
        folder = gdir.student_dir(gdir.submitted, student)
        answers, skipped = read_student(folder, student, released, log)
        report.skipped += skipped
        for name, answer in answers.items():
            by_notebook[name].append(answer)
    if not report.students:
        log("  no submission here: make collect imports them (make grade makes the demo class)")
    references: dict[str, list[Answer]] = {name: [] for name in released}
    if reference is not None:
        references, skipped = read_reference(reference, released, log)
        report.skipped += skipped
    for name, nb in released.items():
        stub = stub_hashes(nb, settings.noise)
        pairs, stats = compare_notebook(
            name, by_notebook[name], references[name], stub, settings, log, solutions[name]
        )
        report.pairs += [p for p in pairs if not p.b.reference]
        report.matches += [p for p in pairs if p.b.reference]
        report.stats[name] = stats
        log(f"  {name}: {stats.answers} answers ({stats.stub_only} only the stub), "
            f"{stats.references} references (the solution included), {stats.compared} pairs "
            f"compared, {stats.listed} pairs of students and {stats.matched} matches to the "
            f"solution or references at or above {settings.threshold:g}")  # fmt: skip
        for group in stats.identical[:3]:
            log(f"    identical answers: {', '.join(group[:8])}{' ...' if len(group) > 8 else ''}")
    for found in (report.pairs, report.matches):
        found.sort(key=lambda p: (-p.score, p.notebook, p.a.owner, p.b.owner))
    return report


# --- output ------------------------------------------------------------------------------------


MAX_GROUPS = 20  # groups of identical answers shown per notebook
CONTEXT_LINES = 3  # unmatched lines shown around matched code; longer runs are folded


@dataclass
class Line:
    """One line of an answer as the page shows it: its number (0: a fold of ``folded``
    unmatched lines), the label of the cell it starts (if it does), and its text in pieces,
    each matched or not."""

    number: int
    cell: str | None
    pieces: list[tuple[str, bool]]
    folded: int = 0


def lines(answer: Answer, slices: np.ndarray, context: int = CONTEXT_LINES) -> list[Line]:
    """``answer``'s code line by line, the characters inside ``slices`` (but a line's
    indentation) marked as matched; runs of unmatched lines further than ``context`` from
    matched code are folded into one line."""
    code = answer.code
    matched = np.zeros(len(code) + 1, dtype=bool)
    for start, end in np.asarray(slices, dtype=np.int64).reshape(2, -1).T:
        matched[max(start, 0) : max(end, 0)] = True
    starts = dict(answer.cells)
    out, offset = [], 0
    for number, text in enumerate(code.rstrip("\n").split("\n")):
        indent = len(text) - len(text.lstrip())
        flags = matched[offset : offset + len(text)].copy()
        flags[:indent] = False
        pieces: list[tuple[str, bool]] = []
        edges = [0, *(np.flatnonzero(np.diff(flags)) + 1).tolist(), len(text)]
        for a, b in itertools.pairwise(edges):
            if b > a:
                pieces.append((text[a:b], bool(flags[a])))
        out.append(Line(number + 1, starts.get(number), pieces))
        offset += len(text) + 1
    hits = [i for i, line in enumerate(out) if any(hit for _, hit in line.pieces)]
    keep = {j for i in hits for j in range(i - context, i + context + 1)}
    shown: list[Line] = []
    for i, line in enumerate(out):
        if i in keep:
            shown.append(line)
        elif shown and shown[-1].folded:
            shown[-1].folded += 1
            shown[-1].cell = shown[-1].cell or line.cell
        else:
            shown.append(Line(0, line.cell, [], folded=1))
    return shown


def _csv_text(value: str) -> str:
    """A cell a spreadsheet shows as text (never a formula)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def kind(pair: Pair) -> str:
    """What ``pair`` is: ``students``, or a student's match to the ``solution`` or to other
    ``reference`` code."""
    return "solution" if pair.b.solution else "reference" if pair.b.reference else "students"


def write_csv(report: Report, path: Path) -> None:
    """``similarity.csv``: every pair of students listed, highest score first, then every
    match to the solutions or reference code."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for found in (report.pairs, report.matches):
        for rank, p in enumerate(found, 1):
            shares = (f"{x:.3f}" for x in (p.score, p.share_a, p.share_b))
            owners = (_csv_text(p.a.owner), _csv_text(p.b.owner))
            writer.writerow([kind(p), rank, p.notebook, *owners, *shares, p.matched])
    notebooks.write_bytes(path, buf.getvalue().encode())


def render(report: Report, assignment: str) -> str:
    """The page (``templates/similarity.html.j2``, every value escaped by Jinja2)."""
    most = report.settings.max_pairs
    shown = {"pair": report.pairs[:most], "match": report.matches[:most]}
    return pages.render(
        TEMPLATE,
        assignment=assignment,
        report=report,
        settings=report.settings,
        pairs=[(p, lines(p.a, p.slices_a), lines(p.b, p.slices_b)) for p in shown["pair"]],
        matches=[(p, lines(p.a, p.slices_a), lines(p.b, p.slices_b)) for p in shown["match"]],
        hidden=len(report.pairs) - len(shown["pair"]),
        hidden_matches=len(report.matches) - len(shown["match"]),
        csv_name=CSV_NAME,
        max_groups=MAX_GROUPS,
    )


def write(report: Report, course: Course) -> tuple[Path, Path]:
    """Write ``similarity.html`` and ``similarity.csv`` into the course's ``out/``."""
    page, table = course.out_dir / HTML_NAME, course.out_dir / CSV_NAME
    notebooks.write_bytes(page, render(report, course.assignment).encode())
    write_csv(report, table)
    return page, table


def run(
    course: Course, reference: Path | None = None, demo_class: bool | None = None, log=print
) -> Report:
    """``make similarity``: compare, write the page and the table, print the top pairs."""
    report = find(course, reference, demo_class, log)
    page, table = write(report, course)
    threshold = f"{report.settings.threshold:g}"
    listed = {
        "pair(s) of students": report.pairs,
        "match(es) to the solution or reference code": report.matches,
    }
    for what, found in listed.items():
        for p in found[:10]:
            log(f"  {p.score:.2f}  {p.notebook}  {p.a.owner}  {p.b.owner}")
        if len(found) > 10:
            log(f"  ... {len(found) - 10} more")
        log(f"{len(found)} {what} at or above {threshold}")
    log(f"written: {page} (and {table.name})")
    log("A lead for a human, not a verdict: read both answers. No grade or flag was changed.")
    return report
