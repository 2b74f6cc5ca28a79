"""``make grade``: grade every submission (the demo class when there is none) and report.

One run, for the course directory ``gdir`` (``autograder/class/`` or ``autograder/demo/``):

1. ``nbgrader generate_assignment`` when the solutions changed (gradebook backed up first);
   for the demo class, write its submissions (``demo.py``);
2. intake every student (``intake.intake_class``): broken, renamed and tampered notebooks are
   sorted out before anything runs, and what will be graded is staged in ``intake/`` and
   hashed, with the student's own outputs bounded, never parsed (``ownrun.attach``); each
   student's intake has a deadline (``intake.INTAKE_SECONDS``: past it, only that student
   fails);
3. skip students whose staged notebooks, assignment and time limit have not changed since
   their last complete grading (:func:`to_grade`; re-running is idempotent and cheap:
   ``--regrade`` forces);
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
   histogram (``report.write_reports``; ``make feedback`` runs this step alone:
   ``rewrite_reports``).
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from autograder.course import demo, nbgrader_dir
from autograder.course.config import Course, usable_cpus
from autograder.course.gradebook import zero_notebooks
from autograder.course.nbgrader_dir import GradingDir
from autograder.handin import intake
from autograder.marking import canary, launcher
from autograder.marking.records import Records, StudentRun
from autograder.reports import report
from autograder.reports.rows import Row, class_rows


class ClassPart(Protocol):
    """A part of the class graded alone: which students it owns, and its name in titles (a
    cluster's shard, ``shards.Shard``: grading needs no more of it, so it imports no shards)."""

    def owns(self, student: str) -> bool: ...


@dataclass
class GradeResult:
    """What ``grade`` returns."""

    gdir: GradingDir
    rows: list[Row]
    graded: list[str]
    skipped: list[str]
    seconds: float

    incomplete: list[str] = field(default_factory=list)  # grader crashed: grade them again
    unanswered: bool = False  # tests asked, and no kernel of any student answered: the set-up
    canary: str = ""  # why the canary failed (then no student was graded): see canary.py


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
    gdir = nbgrader_dir.class_dir(course, demo_class)
    plan = make_plan(course, gdir, jobs, cell_timeout, regrade, students)
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


def roll(plan: Plan, log=print) -> tuple[list[str], list[str]]:
    """Everyone who handed in (of ``plan.shard`` when there is one), and of them the students
    to grade (``plan.students``; each asked for with no submission is logged)."""
    handed_in = nbgrader_dir.list_students(plan.gdir)
    everyone = [s for s in handed_in if plan.shard is None or plan.shard.owns(s)]
    chosen = everyone if not plan.students else [s for s in everyone if s in plan.students]
    for unknown in set(plan.students or []) - set(everyone):
        log(f"  no submission for student {unknown!r}")
    return everyone, chosen


def to_grade(
    plan: Plan, taken: dict[str, tuple[str, dict]], records: Records
) -> tuple[dict[str, StudentRun], list[str]]:
    """Step 3: of the students ``intake.intake_class`` took (by student: fingerprint, intake),
    the runs to grade (not recorded yet), and the students unchanged since their last
    complete grading (``plan.regrade``: none)."""
    runs: dict[str, StudentRun] = {}
    skipped: list[str] = []
    for student, (fingerprint, seen) in taken.items():
        before = records.get(student)
        if before and before.complete and before.fingerprint == fingerprint and not plan.regrade:
            skipped.append(student)
        else:
            runs[student] = StudentRun(fingerprint, seen)
    return runs, skipped


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
    everyone, chosen = roll(plan, log)
    taken, invalid = intake.intake_class(course, gdir, chosen, limit)
    runs, skipped = to_grade(plan, taken, records)
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
    rows = class_rows(course, gdir, everyone, limit, invalid, records)
    report.write_reports(course, gdir, rows, plan.title, sandbox_lines(course), log)
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


def rewrite_reports(course: Course, demo_class: bool | None = None, log=print) -> list[Row]:
    """``make feedback``: the reports and every feedback page written again from the gradebook
    and the last grading run, grading nothing (after manual grading in formgrader: the written
    answers' grades and comments appear). ``demo_class`` None: as ``grade`` decides."""
    gdir = nbgrader_dir.class_dir(course, demo_class)
    limit = default_cell_timeout(course, gdir)
    with exclusive(gdir):
        everyone = nbgrader_dir.list_students(gdir)
        refused = intake.refused_ids(everyone)
        rows = class_rows(course, gdir, everyone, limit, refused, Records(gdir))
        title = f"{class_title(gdir)} (from the gradebook)"
        report.write_reports(course, gdir, rows, title, sandbox_lines(course), log)
    return rows
