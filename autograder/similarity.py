"""``make similarity``: which students' answers look alike, for the instructor's eyes only.

A lead for a human, not a verdict: it changes no grade, sets no flag and writes nothing a
student sees. It reads every student's *answer cells* (the code cells nbgrader marks
``solution: true``: the code the student wrote), per notebook, and compares them pairwise, with
the course's own solutions (``solutions/<a>/``: always, the instructor has them) and with a
folder of reference code when the instructor gives one (past terms, solutions found online).
Matches to the solutions and to reference code are listed apart from the pairs of students.
Notebooks are read as JSON only (``intake.parse``): no student code runs. A notebook that
cannot be read is skipped with a line that says why; the others go on.

How two answers are compared is copydetect's (MOSS's winnowing, Schleimer, Wilkerson and Aiken
2003): the code is tokenized by Pygments, every variable and attribute name becomes ``V``,
every function name ``F``, every string ``S``, comments and blank space are dropped (so renamed
variables and new comments change nothing), and each run of ``noise`` characters of what is
left (a *k-gram*) is hashed. Every k-gram is a fingerprint (copydetect's guarantee threshold
equals the noise threshold): the same class gives the same scores on every run. Here:

- **the stub is not evidence**: the fingerprints of the released student copy's answer cells
  (``assignments/<a>/<nb>.ipynb``: the class skeleton, the docstring, ``raise
  NotImplementedError()``) are copydetect's *boilerplate*, dropped from every answer: two
  students who hand in the untouched stub share nothing;
- **code everybody writes is not evidence** (MOSS's ``-m``): a fingerprint found in the answers
  of more than ``[similarity] common`` students (more than half of them, in a class of fewer
  than twice that) is the natural way to write that line: it is not counted as a match, but it
  still counts in the size of the answer. Against the course's solutions it counts: a class
  that hands in the solution makes the solution's code common, and that code is the match;
- **the score** of a pair is copydetect's share of each answer found in the other (the matched
  tokens over the answer's tokens, the stub left out), the larger of the two (against a
  reference, the student's share). Pairs scoring at least ``[similarity] threshold`` are
  listed, highest first;
- **identical answers** (the same filtered code) are grouped apart, whatever is common: one
  answer handed in by many students is common code, which no pair shows.

Speed: each answer is fingerprinted once (copydetect's :class:`~copydetect.CodeFingerprint`,
in memory), then an inverted index (fingerprint -> the answers that have it) finds the pairs
that share one; only those, when they could reach the threshold, go to copydetect's
:func:`~copydetect.compare_files`. ``bench/similarity.py`` measures it on generated classes.

Output, next to grades.csv: ``autograder/out/similarity.html`` (the pairs, each with both
answers side by side and the matched code highlighted; one self-contained page, every string
of student code escaped by Jinja2) and ``autograder/out/similarity.csv`` (every pair listed).
"""

from __future__ import annotations

import copy
import csv
import io
import itertools
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from copydetect import CodeFingerprint, compare_files
from nbformat import NotebookNode

from . import intake, notebooks, pages
from .config import Course, SimilaritySettings
from .grading import class_dir, list_students
from .nbgrader_dir import STUDENT_ID

TEMPLATE = "similarity.html.j2"  # in templates/ (pages.py)
HTML_NAME, CSV_NAME = "similarity.html", "similarity.csv"
# kind: "students" (a pair of students), "solution" or "reference" (a student's match to it)
CSV_COLUMNS = ("kind", "rank", "notebook", "student_a", "student_b", "score", "share_a",
               "share_b", "matched_tokens")  # fmt: skip
REFERENCE_PREFIX = "reference: "
SOLUTION_PREFIX = "solution: "  # the course's own solutions (solutions/<a>/), a reference too
MAX_CODE_CHARS = 200_000  # of one student's answers to one notebook (more is not an answer)
MAX_REFERENCE_BYTES = 5_000_000  # a reference file larger than this is skipped
REFERENCE_SUFFIXES = (".py", ".ipynb")


@dataclass
class Answer:
    """One student's answer cells to one notebook, joined (or one reference file's code)."""

    owner: str  # the student id, "reference: <path in the reference folder>", "solution: ..."
    notebook: str
    code: str
    cells: list[tuple[int, str]]  # (line where a cell starts in ``code``, "cell <grade id>")
    fingerprint: CodeFingerprint | None = None
    matchable: CodeFingerprint | None = None  # the fingerprint without the common ones

    @property
    def reference(self) -> bool:
        """Whether this is reference code (the course's solutions too), not a student's."""
        return self.owner.startswith((REFERENCE_PREFIX, SOLUTION_PREFIX))

    @property
    def solution(self) -> bool:
        return self.owner.startswith(SOLUTION_PREFIX)


@dataclass
class Pair:
    """Two answers to one notebook that look alike; ``a`` is a student, ``b`` a student or a
    reference. ``slices_*``: where the matched code is in each answer (copydetect's 2 x n
    arrays of character offsets, starts then ends)."""

    notebook: str
    a: Answer
    b: Answer
    share_a: float
    share_b: float
    matched: int  # matched tokens (characters of the filtered code) of ``a``
    slices_a: np.ndarray
    slices_b: np.ndarray

    @property
    def score(self) -> float:
        return self.share_a if self.b.reference else max(self.share_a, self.share_b)


@dataclass
class NotebookStats:
    """What was compared for one notebook."""

    answers: int = 0  # students with code of their own in their answer cells
    stub_only: int = 0  # students whose answer cells hold only the stub (nothing compared)
    references: int = 0  # reference files compared with (the course's solution included)
    candidates: int = 0  # pairs sharing an uncommon fingerprint
    compared: int = 0  # of those, pairs copydetect compared (the others could not score enough)
    common: int = 0  # fingerprints found in too many answers to count
    listed: int = 0  # pairs of students listed
    matched: int = 0  # matches of a student to the solution or reference code listed
    # students whose answers are the same token for token (names, comments, layout aside),
    # by group: found whatever is common (seven students handing in one leaked answer make it
    # common code, which no pair shows)
    identical: list[list[str]] = field(default_factory=list)


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
        notebooks.grade_id(c)
        for c in released.cells
        if c.cell_type == "code" and notebooks.is_solution(c) and notebooks.grade_id(c)
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
        gid = notebooks.grade_id(cell)
        if cell.cell_type == "code" and (notebooks.is_solution(cell) or gid in ids):
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


# --- fingerprints and comparison -----------------------------------------------------------------


def fingerprint(code: str, noise: int, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    """copydetect's fingerprint of Python ``code``, in memory: every k-gram of ``noise``
    filtered characters (window 1), those of ``boilerplate`` left out."""
    return CodeFingerprint(
        "answer.py", noise, 1, boilerplate=boilerplate, language="python", fp=io.StringIO(code)
    )


def stub_hashes(released: NotebookNode, noise: int) -> np.ndarray:
    """The fingerprints of ``released``'s answer cells as handed out, each alone and joined as
    a student's answers are: copydetect's boilerplate (its own ``_get_boilerplate_hashes``
    fingerprints the same way)."""
    cells = answer_cells(released, answer_ids(released))
    stubs = [source for _, source in cells] + [join_cells(cells)[0]]  # and across cells
    hashes = [h for s in stubs for h in fingerprint(s, noise).hashes]
    return np.unique(np.array(hashes, dtype=np.int64))


def _fingerprinted(answers: list[Answer], stub: np.ndarray, noise: int, log=print) -> list[Answer]:
    """``answers`` with their fingerprints, the stub's left out; those with none (the stub
    alone, or nothing) are dropped."""
    kept = []
    for answer in answers:
        try:
            answer.fingerprint = fingerprint(answer.code, noise, stub)
        except Exception as err:  # a tokenizer failure must not stop the class
            log(f"  {answer.owner}/{answer.notebook}: skipped, not tokenized ({err!r:.200})")
            continue
        if answer.fingerprint.hashes:
            kept.append(answer)
    return kept


def common_limit(settings: SimilaritySettings, answers: int) -> int:
    """A fingerprint in more student answers than this is common code (0: none is):
    ``[similarity] common``, or half the answers in a class of fewer than twice that."""
    if settings.common <= 0:
        return answers
    return max(2, min(settings.common, answers // 2))


def compare_notebook(
    name: str,
    answers: list[Answer],
    references: list[Answer],
    stub: np.ndarray,
    settings: SimilaritySettings,
    log=print,
    solutions: list[Answer] = (),
) -> tuple[list[Pair], NotebookStats]:
    """The pairs of ``answers`` (and of an answer with a reference or a solution) scoring at
    least the threshold, and what was compared. Common code counts against ``solutions``."""
    stats = NotebookStats()
    own = _fingerprinted(answers, stub, settings.noise, log)
    refs = _fingerprinted(references, stub, settings.noise, log)
    sols = _fingerprinted(list(solutions), stub, settings.noise, log)
    stats.answers, stats.stub_only = len(own), len(answers) - len(own)
    stats.references = len(refs) + len(sols)
    same: dict[str, list[str]] = defaultdict(list)
    for answer in own:
        same[answer.fingerprint.filtered_code].append(answer.owner)
    stats.identical = sorted((g for g in same.values() if len(g) > 1), key=lambda g: (-len(g), g))

    counts = Counter(h for a in own for h in a.fingerprint.hashes)
    limit = common_limit(settings, len(own))
    common = {h for h, n in counts.items() if n > limit}
    stats.common = len(common)
    everyone = own + refs
    for item in everyone:
        item.matchable = copy.copy(item.fingerprint)
        item.matchable.hashes = item.fingerprint.hashes - common

    # Inverted index: fingerprint -> the answers that have it; a pair shares at least one.
    holders: dict[int, list[int]] = defaultdict(list)
    for i, item in enumerate(everyone):
        for h in item.matchable.hashes:
            holders[h].append(i)
    # positions[i, j]: how many fingerprint positions of i are shared with j. A match covers
    # at most `noise` tokens per position, so positions * noise / coverage bounds the share.
    positions: dict[tuple[int, int], list[int]] = {}
    n_own = len(own)
    for h, group in holders.items():
        if len(group) < 2:
            continue
        for x, i in enumerate(group):
            if i >= n_own:
                break  # references come last: never a pair of two references
            for j in group[x + 1 :]:
                pos = positions.setdefault((i, j), [0, 0])
                pos[0] += len(everyone[i].matchable.hash_idx[h])
                pos[1] += len(everyone[j].matchable.hash_idx[h])
    for solution in sols:  # every fingerprint but the stub's: common code counts here
        solution.matchable = solution.fingerprint
        for i, answer in enumerate(own):
            shared = answer.fingerprint.hashes & solution.fingerprint.hashes
            if shared:
                pos = sum(len(answer.fingerprint.hash_idx[h]) for h in shared)
                positions[(i, len(everyone))] = [pos, 0]
        everyone.append(solution)
    stats.candidates = len(positions)
    pairs = []
    k = settings.noise
    for (i, j), (pos_i, pos_j) in positions.items():
        a, b = everyone[i], everyone[j]
        bound_a = pos_i * k / a.fingerprint.token_coverage
        bound_b = 0.0 if b.reference else pos_j * k / b.fingerprint.token_coverage
        if max(bound_a, bound_b) < settings.threshold:
            continue
        stats.compared += 1
        fp_a = a.fingerprint if b.solution else a.matchable
        matched, (share_a, share_b), (slices_a, slices_b) = compare_files(fp_a, b.matchable)
        pair = Pair(name, a, b, float(share_a), float(share_b), int(matched), slices_a, slices_b)
        if pair.score >= settings.threshold:
            pairs.append(pair)
    stats.matched = sum(p.b.reference for p in pairs)
    stats.listed = len(pairs) - stats.matched
    return pairs, stats


def find(
    course: Course, reference: Path | None = None, demo_class: bool | None = None, log=print
) -> Report:
    """Compare the class's answers (``autograder/class/submitted/``; the demo class's when there is
    no submission and ``demo_class`` is not False) with each other, with the course's solutions,
    and with ``reference``'s code (default: ``[similarity] reference``, if set)."""
    settings = course.similarity
    gdir = class_dir(course, demo_class)
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
    for student in list_students(gdir):
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
