"""The canary: the solutions graded as a student first, so a broken set-up fails loudly.

A grading machine that cannot grade (the kernel cannot import ``course_lib``, a virtual
environment that belongs to another checkout, a sandbox that hides what the notebooks need,
a given cell that fails there, a course dependency missing) would otherwise give every student
zero and exit as if all were well. So before grading any student, ``make grade`` grades the
solutions (the demo class's full-marks student, ``demo.full``) exactly as it grades a student:
same intake, worker, sandbox, time limits and judge, in a course directory of its own
(``<out>/canary/class`` or ``<out>/canary/demo``, with its own gradebook) so it never
appears among the students. Every autograded point must be earned; otherwise grading stops
before any student is graded, with what failed, the cause first (what changed in the
environment since the canary last passed, a course module that no longer imports, a given
cell that raised, then the tests that failed because of it), advice that fits that cause, and
exit status 1; the next run tries again.

A canary that passed is not graded again until something it depends on changes (:func:`key`):
the assignment (solutions and judges), the cell time limit, the sandbox limits, and the
environment that grades (:func:`environment`: the Python version, the installed distributions
that grading imports with their versions, the kernel spec, ``course_lib``'s source). Its result
is kept in its folder, or, when the environment names one in ``A3_CANARY_RECORDS``, in that
folder by key (the test suite shares one); a proof that travels with the course
(``autograder/canary-proof.json``, written by ``make gradescope`` into its zip and by the zip's
``setup.sh`` in Gradescope's image) counts as a passed canary of its key too.

What the key cannot see (a file deleted inside an installed package, a module broken after the
canary ran) shows up inside a student's grading as an import error. The student's kernel is not
believed (a student may raise ``ModuleNotFoundError`` themselves): :func:`course_fault` checks
again, from the grader, in a fresh interpreter of the grading environment, that every course
module the canary found importable still imports and that the environment is still the one the
canary passed in. If not, the fault is the course's: grading stops as a failed canary does
(``grading.py``: nobody further graded, no grade of the run kept, exit 1).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import demo, nbgrader_dir, notebooks
from autograder.course.config import Course
from autograder.course.gradebook import read_scores
from autograder.course.nbgrader_dir import GradingDir
from autograder.course.spec import Spec, grade_id
from autograder.handin import intake
from autograder.marking import launcher

STUDENT = "canary"
RESULT = "canary.json"
PROOF = "canary-proof.json"  # in the course's autograder/: a passed canary that travels with it
# A folder where canary results are kept by key instead of in each course directory: the test
# suite grades many copies of the same course, and one canary per distinct key is enough.
RECORDS_ENV = "A3_CANARY_RECORDS"
SHOWN = 20  # problems a failed canary's message lists (the rest are counted, and in its record)

# What grading imports, as distributions: the course package with the extras grading installs
# (pyproject.toml's [project] name; `make setup` and Gradescope's setup.sh install these), and
# the bundled BERT (installed apart, with --no-deps). Their requirements, followed through
# every distribution they name, are the environment's distributions (never the dev tools).
DISTRIBUTION = "course-lib"
EXTRAS = ("bert", "grader")
KERNEL = "python3"  # the kernel spec the notebooks name
MISSING = "not installed"
IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")


# --- the environment that grades ---------------------------------------------------------------


def _name(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def roots() -> list[tuple[str, frozenset[str]]]:
    """The distributions grading starts from: :data:`DISTRIBUTION` with :data:`EXTRAS`."""
    return [(DISTRIBUTION, frozenset(EXTRAS))]


def bundled_model() -> str:
    """The bundled BERT's distribution name, read from ``course_lib/bert.py``'s source
    (``BUNDLED_MODEL_REQUIREMENT``) without importing it (it imports torch: seconds)."""
    import importlib.util

    from packaging.requirements import Requirement

    spec = importlib.util.find_spec("course_lib.bert")
    try:
        tree = ast.parse(Path(spec.origin).read_text())
    except (AttributeError, TypeError, OSError, SyntaxError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "BUNDLED_MODEL_REQUIREMENT" for t in node.targets
        ):
            return Requirement(ast.literal_eval(node.value)).name
    return ""


def distributions(
    start: list[tuple[str, frozenset[str]]] | None = None, paths: list[str] | None = None
) -> dict[str, str]:
    """name -> version of ``start`` (default :func:`roots`, and the bundled BERT without its
    requirements) and of every distribution their requirements name (their markers evaluated
    here, with the extras asked for), installed on ``paths`` (default ``sys.path``); a
    distribution required but absent is :data:`MISSING`."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    where = {"path": paths} if paths is not None else {}

    def installed(name: str) -> metadata.Distribution | None:  # the first on the path
        return next(iter(metadata.distributions(name=name, **where)), None)

    found: dict[str, str] = {}
    todo = list(start if start is not None else roots())
    if start is None and bundled_model():  # installed with --no-deps: its requirements are not
        model = installed(bundled_model())
        found[_name(bundled_model())] = _headers(model)[0] if model else MISSING
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (_name(name), extras) in seen:
            continue
        seen.add((_name(name), extras))
        dist = installed(name)
        if dist is None:
            found[_name(name)] = MISSING
            continue
        version, requires = _headers(dist)
        found[_name(name)] = version
        for text in requires:
            asked = _EXTRA.findall(text)  # most requirements are other extras': not parsed
            if asked and not {_name(e) for e in asked} & {_name(e) for e in extras}:
                continue
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            wanted = req.marker is None or any(
                req.marker.evaluate({"extra": extra}) for extra in (extras or {""})
            )
            if wanted:
                todo.append((req.name, frozenset(req.extras)))
    return dict(sorted(found.items()))


_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _headers(dist) -> tuple[str, list[str]]:
    """(Version, every Requires-Dist) of a distribution's metadata, read from its header alone
    (the email parser reads the long description too: seconds for a whole environment)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    version, requires = "", []
    for line in text.split("\n\n", 1)[0].splitlines():
        field, _, value = line.partition(":")
        if field == "Version":
            version = value.strip()
        elif field == "Requires-Dist":
            requires.append(value.strip())
    return version or str(dist.version), requires


def kernel_spec(name: str = KERNEL) -> dict:
    """What starts a grading kernel: the kernel spec ``name``'s command (the grading Python
    written ``{python}``, wherever it is installed), environment and language."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        return {"missing": name}
    here = {sys.executable, str(Path(sys.executable).resolve()), "python", "python3"}
    argv = ["{python}" if arg in here else arg for arg in spec.argv]
    return {"argv": argv, "env": dict(sorted(spec.env.items())), "language": spec.language}


def course_lib_digest() -> str:
    """sha256 of ``course_lib``'s Python source, by path inside the package (where it is
    installed does not count)."""
    import importlib.util

    spec = importlib.util.find_spec("course_lib")
    if spec is None or not spec.submodule_search_locations:
        return MISSING
    top = Path(list(spec.submodule_search_locations)[0])
    digest = hashlib.sha256()
    for path in sorted(top.rglob("*.py")):
        digest.update(path.relative_to(top).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def environment(paths: list[str] | None = None) -> dict:
    """The environment that grades, as a canary's key covers it (module docstring)."""
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "distributions": distributions(paths=paths),
        "kernel": kernel_spec(),
        "course_lib": course_lib_digest(),
    }


def fingerprint(env: dict) -> str:
    """sha256 of an :func:`environment` (equal environments, equal fingerprints)."""
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()


def changes(before: dict, now: dict) -> list[str]:
    """What differs between two :func:`environment` s, in words (empty when equal)."""
    found = []
    if before.get("python") != now.get("python"):
        found.append(f"Python {before.get('python')} -> {now.get('python')}")
    old, new = before.get("distributions", {}), now.get("distributions", {})
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            found.append(f"{name} {old.get(name, MISSING)} -> {new.get(name, MISSING)}")
    if before.get("kernel") != now.get("kernel"):
        found.append(f"the kernel spec {KERNEL!r} changed: {now.get('kernel')}")
    if before.get("course_lib") != now.get("course_lib"):
        found.append("course_lib's source changed")
    return found


def key(gdir: GradingDir, cell_timeout: int, limits_json: str, env: dict | None = None) -> str:
    """What a passed canary depends on (see the module docstring); ``gdir``: the class's
    course directory, its assignment generated; ``env``: :func:`environment` (default: now).
    Nothing in it names a folder, so a proof made where the zip was built holds in Gradescope's
    container when the environment there is the same."""
    env = environment() if env is None else env
    digest = hashlib.sha256()
    for part in [gdir.source_stamp.read_text().strip(), str(cell_timeout), limits_json,
                 fingerprint(env)]:  # fmt: skip
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


# --- what the course imports, checked from the grader -----------------------------------------


def course_modules(gdir: GradingDir, names: list[str]) -> list[str]:
    """The modules the course's code imports (the source notebooks' code cells and the judge
    cells; anywhere in them, not only at the top), the standard library left out."""
    sources = []
    for name in names:
        try:
            nb = notebooks.read(gdir.source / f"{name}.ipynb")
            sources += [c.source for c in nb.cells if c.cell_type == "code"]
            spec = Spec.from_json((gdir.judges / f"{name}.json").read_text())
            sources += [cell.source for cell in spec.judges]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    found: set[str] = set()
    for source in sources:
        try:  # IPython's magics and shell lines are no Python
            tree = ast.parse("\n".join(
                "" if line.lstrip().startswith(("%", "!")) else line
                for line in source.split("\n")))  # fmt: skip
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return sorted(m for m in found if m.split(".")[0] not in sys.stdlib_module_names)


_IMPORT_CHECK = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as err:
        failed[name] = f"{type(err).__name__}: {err}"[:300]
print("\\n" + json.dumps(failed))
"""


def unimportable(modules: list[str], timeout: float = 600) -> dict[str, str]:
    """module -> why it does not import, in a fresh interpreter of the grading Python with the
    grading kernel's environment (``sandbox.kernel_env``), outside any sandbox: the course's
    own modules, never student code. Empty when all import."""
    from autograder.kernels.sandbox import kernel_env

    if not modules:
        return {}
    with tempfile.TemporaryDirectory(prefix="a3-import-check-") as home:
        cmd = [sys.executable, "-c", _IMPORT_CHECK, *modules]
        try:
            proc = subprocess.run(cmd, cwd=home, env=kernel_env(home), capture_output=True,
                                  text=True, timeout=timeout)  # fmt: skip
            return json.loads(proc.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as err:
            return {name: f"the import check itself failed: {err}" for name in modules}


# --- the canary ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the canary found: ``problems`` empty when every autograded point was earned, the
    cause first (:func:`problems_of`)."""

    problems: tuple[str, ...]
    graded: bool  # False: it passed before with the same key, and was not graded again
    environment: dict = field(default_factory=dict)  # what it passed (or failed) in
    modules: tuple[str, ...] = ()  # the course modules that imported when it passed
    key: str = ""  # :func:`key`
    seconds: float = 0.0  # its grading's (when it passed before: then)
    proven: bool = False  # not graded: the course's proof (:data:`PROOF`) had its key

    @property
    def passed(self) -> bool:
        return not self.problems

    def message(self) -> str:
        shown = self.problems[:SHOWN]
        lines = "\n".join(f"  - {p}" for p in shown)
        if len(self.problems) > SHOWN:
            lines += f"\n  ... and {len(self.problems) - SHOWN} more (all in the canary's record)"
        return (
            "\nTHE CANARY FAILED: the solutions, graded exactly as a student would be, did not "
            "get every autograded point, so this machine or the course cannot grade correctly. "
            f"No student was graded (the next make grade grades them). The cause first:\n"
            f"{lines}\n{advice(self.problems)}"
        )


def advice(problems: tuple[str, ...] | list[str]) -> str:
    """What to do, for the first problem (the cause)."""
    first = problems[0] if problems else ""
    python = sys.executable
    if first.startswith("the environment changed") or any(e in first for e in IMPORT_ERRORS):
        if "course_lib" in first:
            return (
                f"What to do: the kernel cannot import course_lib from {python}: this venv is "
                "another checkout's, or course_lib is not installed in it. Install this "
                f"checkout's: {python} -m pip install -e '.[bert,grader]' (make setup does "
                "nothing while the venv exists: remove it first to rebuild it)."
            )
        return (
            "What to do: a course dependency is missing or changed in the Python that grades "
            f"({python}). Reinstall the course's requirements there: {python} -m pip install "
            "-e '.[bert,grader]' and the bundled BERT (the Makefile's setup steps), or remove "
            "the venv and run make setup again (make setup does nothing while the venv exists). "
            "On Gradescope: upload the zip again, so that setup.sh builds a fresh image."
        )
    if "ran past" in first:
        return (
            "What to do: this machine is too slow or too loaded for [grade] cell_timeout or "
            "student_timeout (course.toml): grade when it is less busy, or raise them."
        )
    if "raised" in first or "not graded" in first or "judge cell" in first:
        return (
            "What to do: a given cell or a judge fails here: run the notebook of solutions/ on "
            "this machine (make release runs them) to see the error; a sandbox setting "
            "([sandbox] hide, memory_mb) may hide what it needs."
        )
    return (
        "What to do: a test does not pass the solutions here: make release checks the solutions "
        "against their tests; a sandbox setting ([sandbox] hide, memory_mb) may hide what the "
        "notebooks need."
    )


def folder(course: Course, gdir: GradingDir) -> GradingDir:
    """The canary's own course directory, beside the class's reports."""
    root = course.out_dir / "canary" / ("demo" if gdir.demo else "class")
    root.mkdir(parents=True, exist_ok=True)
    nbgrader_dir.write_derived_config(root, gdir.root / "nbgrader_config.py", "the canary")
    return GradingDir(root, gdir.assignment, demo=gdir.demo)


def fresh(cdir: GradingDir) -> None:
    """Empty the canary's course directory but for its nbgrader config."""
    import shutil

    for path in cdir.root.iterdir():
        if path.name == "nbgrader_config.py":
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def proof_path(course: Course) -> Path:
    """Where a passed canary that travels with the course is kept (module docstring)."""
    return course.grader_dir / PROOF


def _passed_before(
    course: Course, record: Path, before: dict, stamp: str, env: dict, log=print
) -> Verdict | None:
    """The verdict of a canary that passed with the same key (in ``record``, the canary
    folder's last result ``before``, or the course's proof), without grading; None if none."""
    proof = _read(proof_path(course))
    for earlier in (_read(record), before, proof):
        if earlier.get("key") == stamp and earlier.get("passed"):
            modules, seconds = tuple(earlier.get("modules", ())), earlier.get("seconds", 0.0)
            if earlier is proof:
                log(f"  canary: not graded: this environment is the one {PROOF} proved")
            return Verdict((), False, env, modules, stamp, seconds, proven=earlier is proof)
    return None


def _grade(
    course: Course, cdir: GradingDir, names: list[str], cell_timeout: int, threads: int, log=print
) -> tuple[dict, bool, float]:
    """Generate the canary's assignment, hand in the solutions as its student and grade them:
    (the worker's result, whether it was killed, seconds)."""
    fresh(cdir)  # nbgrader refuses to change an assignment that has a submission
    nbgrader_dir.generate_assignment(course, cdir)
    released = {n: notebooks.read(cdir.release / f"{n}.ipynb") for n in names}
    src = demo.Sources(
        source={n: notebooks.read(cdir.source / f"{n}.ipynb") for n in names}, released=released
    )
    inbox = cdir.student_dir(cdir.submitted, STUDENT)
    for filename, data in demo.full(src).items():
        notebooks.write_bytes(inbox / filename, data)
    judges = {n: Spec.from_json((cdir.judges / f"{n}.json").read_text()) for n in names}
    seen, staged = intake.read_student(cdir, STUDENT, released, judges, scan=False)
    intake.stage(cdir, seen, staged)
    log(f"  canary: grading the solutions as a student first ({len(names)} notebooks)")
    result, killed, _, seconds = launcher.run(
        cdir, STUDENT, cell_timeout, course.grade.student_timeout, threads, course.sandbox
    )
    return result, killed, seconds


def _causes(broken: dict[str, str], last: dict | None, env: dict) -> list[str]:
    """The causes of a failed canary, put before its problems: what changed in the environment
    since it last passed (``last``), which course modules no longer import."""
    causes = [f"course module {m} does not import here: {why}" for m, why in broken.items()]
    changed = changes(last, env) if last else []
    if changed:
        causes.insert(0, "the environment changed since the canary last passed: "
                      + "; ".join(changed[:10]) + (f" and {len(changed) - 10} more"
                                                   if len(changed) > 10 else ""))  # fmt: skip
    return causes


def check(course: Course, gdir: GradingDir, cell_timeout: int, threads: int, log=print) -> Verdict:
    """Grade the canary for the class in ``gdir`` (unless it passed before with the same key)."""
    cdir = folder(course, gdir)
    names = course.notebooks()
    sandbox = course.sandbox
    env = environment()
    stamp = key(gdir, cell_timeout, sandbox.to_json(), env)  # the class's assignment, generated
    shared = os.environ.get(RECORDS_ENV)
    record = Path(shared) / f"{stamp}.json" if shared else cdir.root / RESULT
    before = _read(cdir.root / RESULT)  # this folder's last canary, whatever its key
    earlier = _passed_before(course, record, before, stamp, env, log)
    if earlier is not None:
        return earlier
    record.unlink(missing_ok=True)
    result, killed, seconds = _grade(course, cdir, names, cell_timeout, threads, log)
    problems = problems_of(cdir, names, result, killed)
    candidates = course_modules(cdir, names)
    broken = unimportable(candidates)
    last = before.get("environment") if before.get("passed") else before.get("last_passed")
    if problems:  # the cause first: what changed since it last passed, what no longer imports
        problems = _causes(broken, last, env) + problems
    modules = [m for m in candidates if m not in broken]
    data = {
        "key": stamp,
        "passed": not problems,
        "seconds": seconds,
        "environment": env,
        "modules": modules,
        "problems": problems,
        "last_passed": last if problems else env,
    }
    text = json.dumps(data, indent=1).encode()
    notebooks.write_bytes(record, text)
    if record != cdir.root / RESULT:
        notebooks.write_bytes(cdir.root / RESULT, text)
    if not problems:
        log(f"  canary: full marks ({seconds:.0f} s)")
    return Verdict(tuple(problems), True, env, tuple(modules), stamp, seconds)


def problems_of(cdir: GradingDir, names: list[str], result: dict, killed: bool) -> list[str]:
    """Why the canary's grading is not full marks (empty when it is): causes (the time limit,
    a judge, a notebook not graded, a cell that raised, a cell past its time) before their
    effects (the tests that failed, the gradebook's scores)."""
    causes, effects = [], []
    if killed:
        causes.append("the canary's grading ran past [grade] student_timeout")
    if result.get("judge_error"):
        causes.append(f"a judge cell failed: {result['judge_error'][:300]}")
    done = result.get("notebooks", {})
    for name in names:
        entry = done.get(name, {})
        if not entry.get("graded"):
            causes.append(f"{name}: not graded ({(entry.get('error') or 'no result')[:300]})")
            continue
        causes += given_cell_errors(cdir, name)
        for gid in entry.get("timeouts", []):
            causes.append(f"{name}: cell {gid} ran past its time limit")
        for gid, verdict in entry.get("verdicts", {}).items():
            for item in verdict.get("checks", []):
                if not item.get("passed"):
                    effects.append(f"{name} {gid}: {item.get('description')!r} failed: "
                                   f"{str(item.get('message'))[:200]}")  # fmt: skip
    # an import error is the cause of everything else
    causes.sort(key=lambda p: not any(e in p for e in IMPORT_ERRORS))
    problems = causes + effects
    if not problems:  # the gradebook must agree
        scores = read_scores(cdir.db_url, cdir.assignment, [STUDENT])
        for (_, name), cells in sorted(scores.items()):
            for cell in cells:
                if cell.auto and cell.score < cell.max - 1e-9:
                    problems.append(f"{name} {cell.grade_id}: {cell.score:g} of {cell.max:g}")
    return problems


def given_cell_errors(cdir: GradingDir, name: str) -> list[str]:
    """The cells of the canary's graded notebook that raised (the solution raises nowhere)."""
    path = cdir.student_dir(cdir.autograded, STUDENT) / f"{name}.ipynb"
    try:
        nb = notebooks.read(path)
    except Exception:
        return [f"{name}: its graded notebook cannot be read"]
    found = []
    for i, cell in enumerate(nb.cells):
        error = notebooks.cell_error(cell)
        if error:
            found.append(f"{name} {grade_id(cell) or f'cell {i}'} raised {error}")
    return found


# --- an import error inside a student's grading -----------------------------------------------


def import_error_seen(gdir: GradingDir, student: str, result: dict) -> bool:
    """Whether a student's grading met an import error anywhere (a cell's error, a request the
    kernel answered with one, a notebook that could not be graded): only a hint, the kernel's
    word, which :func:`course_fault` checks from the grader."""
    for name, entry in result.get("notebooks", {}).items():
        texts = [entry.get("error") or "", str((entry.get("first_error") or {}).get("words"))]
        for verdict in (entry.get("verdicts") or {}).values():
            texts += [str(item.get("message")) for item in verdict.get("checks", [])]
        if any(e in text for text in texts for e in IMPORT_ERRORS):
            return True
        path = gdir.student_dir(gdir.autograded, student) / f"{name}.ipynb"
        try:
            cells = json.loads(path.read_bytes())["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for i, cell in enumerate(cells):
            if i in entry.get("skipped", []):
                continue  # its outputs are the student's own run
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error" and output.get("ename") in IMPORT_ERRORS:
                    return True
    return False


def course_fault(gdir: GradingDir, student: str, result: dict, canary: Verdict) -> str:
    """Why a student's grading failed through the course's fault ("" when it did not): an
    import error seen in it (:func:`import_error_seen`) and, checked from the grader, a course
    module the canary imported that no longer imports, or an environment that is no longer the
    one the canary passed in."""
    if not import_error_seen(gdir, student, result):
        return ""
    found = [f"course module {m} does not import here: {why}"
             for m, why in unimportable(list(canary.modules)).items()]  # fmt: skip
    changed = changes(canary.environment, environment()) if canary.environment else []
    if changed:
        found.insert(0, "the environment changed since the canary passed: " + "; ".join(changed))
    if not found:
        return ""  # every course module imports: the student's own import failed
    lines = "\n".join(f"  - {p}" for p in found[:SHOWN])
    return (
        f"\nTHE GRADING ENVIRONMENT BROKE: grading {student} met an import error, and the "
        "grader finds the course's own set-up at fault, not the student:\n"
        f"{lines}\nGrading stopped: no grade of this run was kept and the students of this run "
        f"are graded again by the next make grade.\n{advice(found)}"
    )
