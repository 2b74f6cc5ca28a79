"""``make bench``: seconds per student to grade the whole assignment in quick mode.

In a scratch copy of the course, ``--students`` copies of the full-marks demo student are
graded three ways: ``make grade`` serially (JOBS=1), ``make grade`` with JOBS=2, and plain
``nbgrader autograde`` (one process for everyone, serial) as the baseline. ``make grade``
also does the intake and writes HTML feedback, which plain autograde does not. The kernel
floor is what no grading goes under: a fresh kernel running a notebook's setup cell alone (its
imports). Targets: the median notebook within 2x that floor (grading skips the cells the
tests do not need: ``spec.Spec.skipped_cells``), and a speed-up over serial above 1.6x on
two cores. CPU seconds are the whole machine's over each run (workers, kernels, everything
else): run the bench on an otherwise idle machine.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.course import config, demo, nbgrader_dir, notebooks, spec
from autograder.course.config import Course
from autograder.marking import canary, grading
from autograder.marking.records import Records


def scratch_course(course: Course, folder: Path) -> Course:
    """A copy of ``course``'s settings, solutions and nbgrader config under ``folder``."""
    (folder / "autograder").mkdir(parents=True)
    shutil.copy2(course.root / "course.toml", folder / "course.toml")
    shutil.copytree(course.solutions_dir, folder / "solutions" / course.assignment)
    shutil.copy2(course.grader_dir / "nbgrader_config.py", folder / "autograder")
    return config.load(folder)


def write_students(course: Course, gdir: nbgrader_dir.GradingDir, n: int) -> list[str]:
    """``n`` full-marks students in ``gdir.submitted``."""
    names = course.notebooks()
    src = demo.Sources(
        source={x: notebooks.read(gdir.source / f"{x}.ipynb") for x in names},
        released={x: notebooks.read(gdir.release / f"{x}.ipynb") for x in names},
    )
    students = [f"bench{i + 1:02d}" for i in range(n)]
    for student in students:
        for filename, data in demo.full(src).items():
            notebooks.write_bytes(gdir.student_dir(gdir.submitted, student) / filename, data)
    return students


def _reset(gdir: nbgrader_dir.GradingDir) -> None:
    for path in (gdir.autograded, gdir.feedback, gdir.intake, gdir.root / "logs"):
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(gdir.records, ignore_errors=True)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has spent so far (every process, busy time of all cores):
    the workers fork from a fork server and the kernels run sandboxed, so neither is a child
    this process could count. Read the differences on an otherwise idle machine."""
    import psutil

    times = psutil.cpu_times()
    return sum(getattr(times, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq"))


def time_grade(course: Course, jobs: int) -> tuple[float, float, list[float]]:
    """Wall and CPU seconds of ``grade`` with ``jobs`` workers (everyone regraded), and the
    seconds each notebook took inside the workers."""
    gdir = nbgrader_dir.real(course)
    _reset(gdir)
    start, cpu = time.perf_counter(), _machine_cpu()
    result = grading.grade(course, jobs=jobs, regrade=True, log=lambda *_: None)
    wall, cpu = time.perf_counter() - start, _machine_cpu() - cpu
    bad = [r for r in result.rows if r.flag_text not in ("ok", "needs-manual")]
    if bad:
        print(f"warning: {len(bad)} notebook(s) not graded cleanly, e.g. {bad[0].as_csv()}")
    records = Records(gdir)
    runs = [records.get(student) for student in nbgrader_dir.list_students(gdir)]
    per_notebook = [nb["seconds"] for run in runs if run for nb in run.worker["notebooks"].values()]
    return wall, cpu, per_notebook


def time_plain_nbgrader(course: Course) -> tuple[float, float]:
    """Wall and CPU seconds of plain ``nbgrader autograde`` over every student, one process."""
    gdir = nbgrader_dir.real(course)
    _reset(gdir)
    cmd = [str(Path(sys.executable).parent / "nbgrader"), "autograde", course.assignment, "--force"]
    start, cpu = time.perf_counter(), _machine_cpu()
    proc = subprocess.run(cmd, cwd=gdir.root, env=nbgrader_dir.child_env(), capture_output=True)
    wall, cpu = time.perf_counter() - start, _machine_cpu() - cpu
    if proc.returncode != 0:
        print(f"warning: plain nbgrader autograde exited {proc.returncode}")
    return wall, cpu


def kernel_floor(course: Course, gdir: nbgrader_dir.GradingDir) -> float:
    """The median over the notebooks of the seconds a fresh kernel takes to start, run the
    notebook's setup cell alone (its imports) and stop: what no grading can go under."""
    from autograder.kernels.execute import execute

    seconds = []
    with tempfile.TemporaryDirectory(prefix="grade-floor-") as tmp:
        for name in course.notebooks():
            nb = notebooks.read(gdir.source / f"{name}.ipynb")
            nb.cells = [c for c in nb.cells if spec.grade_id(c) == "setup"]
            src, dst = Path(tmp) / f"{name}.ipynb", Path(tmp) / f"{name}.out.ipynb"
            notebooks.write(nb, src)
            start = time.perf_counter()
            execute(src, dst, timeout=300)
            seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def bench(course: Course, students: int = 4) -> dict[str, float]:
    """Print and return seconds per student: serial, JOBS=2, plain nbgrader; and speed-ups."""
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        copy = scratch_course(course, Path(tmp))
        gdir = nbgrader_dir.real(copy)
        nbgrader_dir.generate_assignment(copy, gdir)
        write_students(copy, gdir, students)
        n = len(copy.notebooks())
        print(f"bench: {students} full-marks students x {n} notebooks, quick mode", flush=True)
        floor = kernel_floor(copy, gdir)
        canary.check(copy, gdir, copy.grade.cell_timeout, 1, log=lambda *_: None)  # not timed
        print(f"  kernel start-up floor (setup cell alone, median): {floor:.1f} s", flush=True)
        serial, serial_cpu, per_nb = time_grade(copy, jobs=1)
        print(f"  make grade JOBS=1: {serial:.1f} s ({serial_cpu:.0f} CPU s)", flush=True)
        parallel, parallel_cpu, _ = time_grade(copy, jobs=2)
        print(f"  make grade JOBS=2: {parallel:.1f} s ({parallel_cpu:.0f} CPU s)", flush=True)
        plain, plain_cpu = time_plain_nbgrader(copy)
        print(f"  nbgrader autograde: {plain:.1f} s ({plain_cpu:.0f} CPU s)", flush=True)
    numbers = {
        "serial_s_per_student": serial / students,
        "jobs2_s_per_student": parallel / students,
        "plain_nbgrader_s_per_student": plain / students,
        "serial_cpu_s_per_student": serial_cpu / students,
        "jobs2_cpu_s_per_student": parallel_cpu / students,
        "plain_nbgrader_cpu_s_per_student": plain_cpu / students,
        "speedup_jobs2_vs_serial": serial / parallel,
        "speedup_jobs2_vs_plain": plain / parallel,
        "median_s_per_notebook": statistics.median(per_nb) if per_nb else 0.0,
        "kernel_floor_s": floor,
    }
    print(
        "\n| grading, quick mode | wall s per student | CPU s per student |\n|---|---|---|\n"
        f"| make grade, JOBS=1 | {numbers['serial_s_per_student']:.1f} "
        f"| {numbers['serial_cpu_s_per_student']:.1f} |\n"
        f"| make grade, JOBS=2 | {numbers['jobs2_s_per_student']:.1f} "
        f"| {numbers['jobs2_cpu_s_per_student']:.1f} |\n"
        f"| plain nbgrader autograde, serial | {numbers['plain_nbgrader_s_per_student']:.1f} "
        f"| {numbers['plain_nbgrader_cpu_s_per_student']:.1f} |\n"
        f"\nspeed-up JOBS=2 vs JOBS=1: {numbers['speedup_jobs2_vs_serial']:.2f}x; "
        f"vs plain nbgrader: {numbers['speedup_jobs2_vs_plain']:.2f}x; "
        f"median notebook: {numbers['median_s_per_notebook']:.1f} s "
        f"({numbers['median_s_per_notebook'] / max(floor, 1e-9):.1f}x the kernel floor of "
        f"{floor:.1f} s); "
        f"machine load now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    return numbers
