"""``make grade``: grade every submission (the demo class when there is none) and report.

One run, for the course directory ``gdir`` (``autograder/class/`` or ``autograder/demo/``):

1. ``nbgrader generate_assignment`` when the solutions changed (gradebook backed up first);
   for the demo class, write its submissions (``demo.py``);
2. intake every student (``intake.py``): broken, renamed and tampered notebooks are sorted
   out before anything runs, and what will be graded is staged in ``intake/`` and hashed,
   with the student's own outputs bounded, never parsed (``ownrun.attach``); each student's
   intake has a deadline (:data:`INTAKE_SECONDS`: past it, only that student fails);
3. skip students whose staged notebooks, assignment and time limit have not changed since
   their last complete grading (re-running is idempotent and cheap: ``--regrade`` forces);
4. grade the canary (``canary.py``: the solutions as a student, in a folder of their own) and
   stop before any student when it does not get every autograded point (a broken set-up);
   back up the gradebook, then grade the others, ``jobs`` at a time: one child process per
   student (``worker.py``), so workers never share a student (nbgrader over one SQLite
   gradebook is safe for disjoint students) and a student can only ever cost their own
   grade. A worker past ``student_timeout`` is killed with its kernels; what it did not
   finish is scored 0 and flagged. An import error in a student's grading that the grader
   finds to be the course's (``canary.course_fault``: a course module no longer imports)
   stops the run as a failed canary does: nobody further graded, the gradebook put back as it
   was before the run, the run's students graded again next time, exit 1;
5. after each student, write their record (``records.py``: one file per student, atomically),
   so a crash mid-run keeps every earlier student's grades and records;
6. read the scores from the gradebook and write ``autograder/out/grades.csv``,
   ``canvas.csv``, ``summary.txt``, the class report (``report.html``, ``classreport.py``) and
   every student's feedback pages (``feedback.py``), and print the summary table and a
   histogram (``write_reports``; ``make feedback`` runs this step alone: ``rewrite_reports``).
"""

from __future__ import annotations

import contextlib
import hashlib
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from autograder.course import demo, nbgrader_dir, notebooks
from autograder.course.config import Course, usable_cpus
from autograder.course.gradebook import Scores, read_scores, zero_notebooks
from autograder.course.nbgrader_dir import STUDENT_ID, GradingDir
from autograder.course.spec import Spec, read_specs
from autograder.handin import intake
from autograder.marking import canary, launcher, worker
from autograder.marking.records import Records, StudentRun
from autograder.reports import ownrun, report


class ClassPart(Protocol):
    """A part of the class graded alone: which students it owns, and its name in titles (a
    cluster's shard, ``shards.Shard``: grading needs no more of it, so it imports no shards)."""

    def owns(self, student: str) -> bool: ...


@dataclass
class GradeResult:
    """What ``grade`` returns."""

    gdir: GradingDir
    rows: list[report.Row]
    graded: list[str]
    skipped: list[str]
    seconds: float

    incomplete: list[str] = field(default_factory=list)  # grader crashed: grade them again
    unanswered: bool = False  # tests asked, and no kernel of any student answered: the set-up
    canary: str = ""  # why the canary failed (then no student was graded): see canary.py


UNUSABLE_ID = "student id (folder name) not usable: letters, digits, ._@+- only"


def list_students(gdir: GradingDir) -> list[str]:
    """Every folder in ``submitted/`` that holds anything (not hidden ones: ``make collect``
    stages into ``.collect-*``)."""
    if not gdir.submitted.is_dir():
        return []
    return sorted(
        p.name
        for p in gdir.submitted.iterdir()
        if p.is_dir() and not p.name.startswith(".") and any(p.iterdir())
    )


def rows_for(
    student: str, run: StudentRun | None, specs: dict[str, Spec],
    scores: Scores, cell_timeout: int, problem: str = "", extra: tuple[str, ...] = (),
) -> list[report.Row]:  # fmt: skip
    """The report rows of one student, from what the intake and worker saw and the gradebook
    (``extra``: the notebooks graded as extra credit)."""
    rows = []
    taken = intake.StudentIntake.from_dict(run.intake) if run else None
    for name, spec in specs.items():
        row = report.empty_row(student, spec, extra=name in extra)
        rows.append(row)
        if taken is None:
            row.flags.append("failed")
            row.notes.append(problem or "not graded")
            continue
        seen = taken.notebooks[name]
        row.file, row.flags, row.notes = seen.file, list(seen.flags), list(seen.notes)
        done = run.worker.get("notebooks", {}).get(name, {})
        row.seconds = done.get("seconds")
        if seen.staged and not done.get("graded"):
            row.flags.append("failed")
            if run.killed:
                row.flags.append("timeout")
                row.notes.append("grading stopped: the student's time limit ran out")
            else:
                row.notes.append(done.get("error") or "the grader stopped before this notebook")
        if done.get("timeouts"):
            row.flags.append("timeout")
            row.notes.append(f"stopped after {cell_timeout} s: {', '.join(done['timeouts'])}")
        if done.get("graded") and run.worker.get("judge_error"):
            row.flags.append("failed")
            row.notes.append("the judge failed (a fault of the course): run make grade again")
        if not (seen.staged and done.get("graded")):
            continue
        row.verdicts = dict(done.get("verdicts", {}))
        row.first_error = done.get("first_error")
        row.skipped = list(done.get("skipped", []))
        if done.get("rerun"):  # graded again with every cell run (worker.needs_second_try)
            row.notes.append(worker.RERUN_NOTE)
        for gid, verdict in done.get("verdicts", {}).items():
            for item in verdict["checks"]:
                if not item["passed"]:
                    row.lost.append((gid, item["description"], item["points"], item["message"]))
        for cell in scores.get((student, name), []):
            row.cells[cell.grade_id] = (cell.score, cell.max)
            if cell.auto:
                row.autograded += cell.score
            else:
                row.manual += cell.score
            if cell.needs_manual and "needs-manual" not in row.flags:
                row.flags.append("needs-manual")
    for note in taken.notes if taken else []:
        rows[0].notes.append(note)
    return rows


def class_rows(
    course: Course, gdir: GradingDir, everyone: list[str], cell_timeout: int,
    problems: dict[str, str],
) -> list[report.Row]:  # fmt: skip
    """The report rows of ``everyone``: their records joined with the gradebook's scores
    (``problems``: why a student has no record, e.g. :data:`UNUSABLE_ID`), extra credit
    capped by ``[grade] extra_credit_cap`` (every output reads the rows made here)."""
    specs = read_specs(gdir.judges, course.notebooks())
    records = Records(gdir)
    scores = read_scores(gdir.db_url, gdir.assignment, everyone)
    rows: list[report.Row] = []
    for student in everyone:
        rows += rows_for(student, records.get(student), specs, scores, cell_timeout,
                         problems.get(student, ""), course.grade.extra_credit)  # fmt: skip
    return report.count_extra_credit(rows, course.grade.extra_credit_cap)


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class Plan:
    """What one ``grade`` run does."""

    gdir: GradingDir  # its demo flag: the demo class or submissions
    cell_timeout: int
    workers: int
    regrade: bool = False
    students: list[str] | None = None  # None: everyone
    shard: ClassPart | None = None  # grade only the students of this shard (see shards.py)

    @property
    def title(self) -> str:
        title = class_title(self.gdir)
        if self.gdir.demo:
            title += " (no submissions in autograder/class/submitted/)"
        return f"{title}, shard {self.shard}" if self.shard else title


def grade(
    course: Course,
    jobs: int | None = None,
    cell_timeout: int | None = None,
    demo_class: bool | None = None,
    regrade: bool = False,
    students: list[str] | None = None,
    log=print,
) -> GradeResult:
    """Grade the class (see the module docstring). ``demo_class`` None: the demo class when no
    real submission exists. ``students``: grade only these (the report still lists everyone).
    One shard of the class: ``shards.grade``."""
    plan = make_plan(course, class_dir(course, demo_class), jobs, cell_timeout, regrade, students)
    announce(course, plan, log)
    with exclusive(plan.gdir):
        return grade_plan(course, plan, log)


def make_plan(
    course: Course,
    gdir: GradingDir,
    jobs: int | None = None,
    cell_timeout: int | None = None,
    regrade: bool = False,
    students: list[str] | None = None,
    shard: ClassPart | None = None,
) -> Plan:
    """The plan of a grading run in ``gdir`` (the defaults: the course's settings)."""
    return Plan(
        gdir=gdir,
        cell_timeout=cell_timeout or default_cell_timeout(course, gdir),
        workers=course.grade.workers(jobs),
        regrade=regrade,
        students=students,
        shard=shard,
    )


def class_dir(course: Course, demo_class: bool | None = None) -> GradingDir:
    """The course directory of the class to grade: the demo class's when ``demo_class``, or
    when it is None and nobody handed anything in."""
    real = nbgrader_dir.real(course)
    use_demo = demo_class if demo_class is not None else not list_students(real)
    return nbgrader_dir.demo(course) if use_demo else real


def class_title(gdir: GradingDir) -> str:
    return "the DEMO class" if gdir.demo else "submissions"


def default_cell_timeout(course: Course, gdir: GradingDir) -> int:
    return course.grade.demo_cell_timeout if gdir.demo else course.grade.cell_timeout


def announce(course: Course, plan: Plan, log=print) -> None:
    """The first lines of a grading run: what, where, how, and the sandbox."""
    log(f"grading {plan.title} in {plan.gdir.root}: {plan.workers} worker(s), "
        f"{plan.cell_timeout} s per cell")  # fmt: skip
    for line in sandbox_lines(course):
        log("  " + line)


@contextlib.contextmanager
def exclusive(gdir: GradingDir):
    """Hold ``gdir``'s grading lock: two runs at once would grade the same students."""
    import fcntl

    gdir.root.mkdir(parents=True, exist_ok=True)
    with open(gdir.root / ".grading.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another `make grade` is running in {gdir.root}") from None
        yield


INTAKE_SECONDS = 60  # one student's intake (a second or two): past it, that student fails


class IntakeTimeout(Exception):
    """One student's intake ran past :data:`INTAKE_SECONDS`."""


@contextlib.contextmanager
def intake_deadline(seconds: float):
    """Raise :class:`IntakeTimeout` in the block after ``seconds`` (SIGALRM: in the main
    thread only; elsewhere no limit, and the intake's bounds keep it linear)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise IntakeTimeout

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def timed_out(student: str, names: list[str]) -> intake.StudentIntake:
    """The intake of a student whose intake ran past :data:`INTAKE_SECONDS`: nothing graded,
    every notebook ``failed`` (only this student's grade pays)."""
    seen = intake.StudentIntake(student, {n: intake.NotebookIntake(n) for n in names})
    for entry in seen.notebooks.values():
        entry.flag("failed", f"reading the submission took over {INTAKE_SECONDS} s: not graded")
    return seen


def intake_class(
    course: Course, plan: Plan, chosen: list[str], records: Records
) -> tuple[dict[str, StudentRun], list[str], dict[str, str]]:
    """Steps 2-3: intake and stage every student of ``chosen``. Returns the runs to grade
    (their fingerprints and intakes, not recorded yet), the students unchanged since their last
    complete grading, and the ids grading refuses (:data:`UNUSABLE_ID`)."""
    gdir = plan.gdir
    names = course.notebooks()
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    judges = read_specs(gdir.judges, names)
    assignment_hash = gdir.source_stamp.read_text().strip()
    runs: dict[str, StudentRun] = {}
    skipped: list[str] = []
    invalid: dict[str, str] = {}
    for student in chosen:
        if not STUDENT_ID.fullmatch(student):
            invalid[student] = UNUSABLE_ID
            continue
        try:  # a deadline per student: one hand-in can only cost its own grade
            with intake_deadline(INTAKE_SECONDS):
                seen, staged = intake.read_student(
                    gdir,
                    student,
                    released,
                    judges,
                    scan=course.grade.tamper_scan,
                    optional=course.grade.extra_credit,
                )
                handed_in = gdir.student_dir(gdir.submitted, student)
                for name, nb in staged.items():  # own outputs of tagged cells: bounded only
                    ownrun.attach(nb, handed_in / seen.notebooks[name].file, judges[name])
        except IntakeTimeout:
            seen, staged = timed_out(student, names), {}
        seen.fingerprint = intake.stage(gdir, seen, staged)
        fingerprint = _fingerprint(assignment_hash, str(plan.cell_timeout), seen.fingerprint)
        before = records.get(student)
        if before and before.complete and before.fingerprint == fingerprint and not plan.regrade:
            skipped.append(student)
        else:
            runs[student] = StudentRun(fingerprint, seen.to_dict())
    return runs, skipped, invalid


def grade_students(
    course: Course, plan: Plan, runs: dict[str, StudentRun], records: Records,
    refused: dict | None, threads: int, log=print, proven: canary.Verdict | None = None,
) -> str:  # fmt: skip
    """Steps 4-5: grade the students of ``runs``, ``plan.workers`` at a time (``refused``: the
    result of every student when kernels cannot be isolated, ``sandbox.refusal``); each
    student's run in ``runs`` and their record are replaced as they finish. Returns "" or, when
    a student's grading failed through the course's fault (``canary.course_fault``, against the
    canary that passed, ``proven``), why: then nobody further is graded, the workers still
    running are stopped, and no student of the run is recorded from then on."""
    gdir, names = plan.gdir, course.notebooks()
    fault: list[str] = []

    def one(student: str) -> None:
        pending = runs[student]
        if fault:  # the course cannot grade: nobody further
            return
        if refused is not None:  # no kernel starts: every notebook failed, NOT_ISOLATED
            result, killed, code, seconds = {**refused, "student": student}, False, None, 0.0
        else:
            result, killed, code, seconds = launcher.run(
                gdir, student, plan.cell_timeout, course.grade.student_timeout, threads,
                course.sandbox,
            )  # fmt: skip
        why = canary.course_fault(gdir, student, result, proven) if proven and not fault else ""
        if why or fault:  # not the student's fault: not recorded, graded again next time
            if why and not fault:
                fault.append(why)
                launcher.kill_running()
            log(f"  {student:24} {seconds:7.1f} s  not graded: the course's fault (below)")
            return
        if killed or not result.get("done"):
            unfinished = [n for n in names if not result["notebooks"].get(n, {}).get("graded")]
            zero_notebooks(gdir.db_url, gdir.assignment, student, unfinished)
        run = StudentRun(pending.fingerprint, pending.intake, result, killed, code, seconds)
        records.put(student, run)
        runs[student] = run
        status = "killed (time limit)" if killed else ("done" if run.complete else f"exit {code}")
        status = status if refused is None else "not graded (no isolation)"
        log(f"  {student:24} {seconds:7.1f} s  {status}")

    with ThreadPoolExecutor(max_workers=plan.workers) as pool:
        futures = [pool.submit(one, s) for s in runs]
        try:
            for future in futures:
                future.result()
        except BaseException:  # Ctrl-C or a bug: stop every worker and its kernels
            for future in futures:
                future.cancel()
            launcher.kill_running()
            raise
    return fault[0] if fault else ""


def restore_gradebook(gdir: GradingDir, backup) -> None:
    """Put ``backup`` (``nbgrader_dir.backup_gradebook``'s copy) back as ``gdir``'s gradebook
    (SQLite's online backup, the other way)."""
    import sqlite3

    if backup is None:
        return
    src = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    dst = sqlite3.connect(gdir.gradebook)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def grade_plan(course: Course, plan: Plan, log=print) -> GradeResult:
    """The grading run of ``plan`` (steps 1-6 of the module docstring)."""
    start = time.perf_counter()
    gdir, limit = plan.gdir, plan.cell_timeout
    threads = max(1, usable_cpus() // plan.workers)
    if nbgrader_dir.generate_assignment(course, gdir):
        log("  nbgrader generate_assignment: assignment (re)loaded into the gradebook")
    if plan.gdir.demo:
        demo.build(course, gdir)
    names = course.notebooks()
    records = Records(gdir)
    everyone = [s for s in list_students(gdir) if plan.shard is None or plan.shard.owns(s)]
    chosen = everyone if not plan.students else [s for s in everyone if s in plan.students]
    for unknown in set(plan.students or []) - set(everyone):
        log(f"  no submission for student {unknown!r}")

    runs, skipped, invalid = intake_class(course, plan, chosen, records)
    todo = list(runs)

    from autograder.kernels.sandbox import refusal

    refused = refusal(course.sandbox, names) if todo else None  # None: kernels can be isolated
    verdict = None
    if todo and refused is None:
        verdict = canary.check(course, gdir, limit, threads, log)
        if not verdict.passed:  # nothing recorded: every student's last grading stands
            log(verdict.message())
            seconds = round(time.perf_counter() - start, 1)
            return GradeResult(gdir, [], [], skipped, seconds, canary=verdict.message())
    for student, run in runs.items():
        records.put(student, run)

    if todo:
        launcher.sweep_scratch()
        backup = nbgrader_dir.backup_gradebook(gdir, "grade")
        if backup:
            log(f"  gradebook backed up to {backup}")
        log(f"  grading {len(todo)} student(s), {len(skipped)} unchanged since last time")
        fault = grade_students(course, plan, runs, records, refused, threads, log, verdict)
        if fault:  # as a failed canary: no grade of this run kept, everyone graded again
            restore_gradebook(gdir, backup)
            for student in todo:
                records.put(student, StudentRun(runs[student].fingerprint, runs[student].intake))
            log(fault)
            seconds = round(time.perf_counter() - start, 1)
            return GradeResult(gdir, [], [], skipped, seconds, canary=fault)
    else:
        log(f"  all {len(skipped)} student(s) unchanged since last time: nothing to grade")

    incomplete = [s for s in todo if not runs[s].complete]
    if incomplete:
        log(f"  not graded to the end (see {gdir.root / 'logs'}): {', '.join(incomplete)}")
    unanswered = no_replies([runs[s] for s in todo])
    if unanswered:
        log(UNANSWERED)
    rows = class_rows(course, gdir, everyone, limit, invalid)
    write_reports(course, gdir, rows, title=plan.title, log=log)
    seconds = round(time.perf_counter() - start, 1)
    return GradeResult(gdir, rows, todo, skipped, seconds, incomplete, unanswered)


UNANSWERED = (
    "\nTHE GRADING SET-UP IS BROKEN: the tests asked the students' kernels, and not one kernel "
    "of any student answered (the kernel could not import course_lib.grading.dispatch: is the venv "
    "this checkout's? run make setup). These grades are not real; run make grade again once fixed."
)


def no_replies(runs: list[StudentRun]) -> bool:
    """Whether tests asked kernels and none of them, for any student, ever answered (a broken
    set-up, never one student's fault)."""
    sessions = [
        nb.get("session", {})
        for run in runs
        for nb in run.worker.get("notebooks", {}).values()
        if nb.get("graded")
    ]
    asked = [s for s in sessions if s.get("requests") or s.get("broken")]
    return bool(asked) and not any(s.get("answered") for s in asked)


def sandbox_lines(course: Course) -> list[str]:
    """What the grading sandbox enforces on this machine, in words (see sandbox.py)."""
    from autograder.kernels.sandbox import probe

    return probe().describe(course.sandbox)


def write_reports(
    course: Course, gdir: GradingDir, rows: list[report.Row], title: str, log=print
) -> None:
    """grades.csv, canvas.csv, summary.txt, the class report (report.html and its PNGs) and
    every student's feedback pages; print the summary and histogram."""
    from autograder.reports import classreport, feedback

    course.out_dir.mkdir(parents=True, exist_ok=True)
    report.write_csv(rows, course.out_dir / "grades.csv")
    roster_file = course.grader_dir / "roster.csv"
    roster = report.read_roster(roster_file) if roster_file.exists() else {}
    unknown = sorted({r.student for r in rows} - set(roster)) if roster else []
    if unknown:
        log(f"  not in {roster_file.name}: {', '.join(unknown)} (canvas.csv names them by login)")
    column = course.lms.canvas_column or course.assignment
    canvas = report.write_canvas_file(rows, course.out_dir, column, roster)
    waiting = report.waiting_students(rows)
    if waiting:
        log(f"  {len(waiting)} student(s) have written answers waiting for a grader: "
            f"{canvas.name} is PROVISIONAL (those answers count 0); make formgrade, then "
            "make feedback, writes canvas.csv once every answer is graded")  # fmt: skip
    cap = course.grade.extra_credit_cap
    feedback.write_feedback(gdir, rows, course.feedback.show_test_source, cap)
    classreport.write_report(rows, course.out_dir, title, cap)
    text = "\n\n".join(
        [
            f"Grades of {title}",
            report.summary_table(rows, cap),
            report.histogram(rows),
            "\n".join(sandbox_lines(course)),
            f"grades: {course.out_dir / 'grades.csv'} (Canvas: {canvas.name})\n"
            f"class report: {course.out_dir / 'report.html'}\nfeedback: {gdir.feedback}/"
            f"<student>/{gdir.assignment}/index.html\nwritten answers: make formgrade, then "
            "make feedback",
        ]
    )
    notebooks.write_bytes(course.out_dir / "summary.txt", (text + "\n").encode())
    log(text)


def rewrite_reports(course: Course, demo_class: bool | None = None, log=print) -> list[report.Row]:
    """``make feedback``: the reports and every feedback page written again from the gradebook
    and the last grading run, grading nothing (after manual grading in formgrader: the written
    answers' grades and comments appear). ``demo_class`` None: as ``grade`` decides."""
    gdir = class_dir(course, demo_class)
    limit = default_cell_timeout(course, gdir)
    with exclusive(gdir):
        everyone = list_students(gdir)
        unusable = {s: UNUSABLE_ID for s in everyone if not STUDENT_ID.fullmatch(s)}
        rows = class_rows(course, gdir, everyone, limit, unusable)
        title = class_title(gdir)
        write_reports(course, gdir, rows, title=f"{title} (from the gradebook)", log=log)
    return rows
