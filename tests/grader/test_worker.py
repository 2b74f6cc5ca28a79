"""The workers' fork server imports, once per grading run, what every worker would import: nbgrader,
and the modules the assignment's judge cells import at their top level (torch, course_lib's
checks, scikit-learn's metrics for the repository's course); a module that fails to import is
left to the worker that needs it, where grading reports the error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import config, judge, nbgrader_dir, notebooks, processes, worker
from helpers import ROOT


def judges(tmp_path: Path, **sources: str) -> nbgrader_dir.GradingDir:
    """A grading folder whose assignment has one judge spec per keyword (name: judge source)."""
    folder = tmp_path / "judges" / "a3"
    folder.mkdir(parents=True)
    for name, source in sources.items():
        spec = judge.Spec(name, tests={}, judges=(judge.JudgeCell(None, source, 0),))
        (folder / f"{name}.json").write_text(spec.to_json())
    return nbgrader_dir.GradingDir(tmp_path, "a3")


def test_the_judges_top_level_imports_are_preloaded(tmp_path):
    gdir = judges(
        tmp_path,
        one="import math, numpy as np\nfrom course_lib.checks import check_close\n",
        two="from . import local\nfrom os.path import *\n\ndef later():\n    import sklearn\n",
    )
    (gdir.judges / "broken.json").write_text("{")  # grading reports it; no preload from it
    assert worker.judge_imports(gdir) == (
        "course_lib.checks", "course_lib.checks.check_close", "math", "numpy", "os.path",
    )  # fmt: skip


def test_the_repository_course_preloads_torch_and_the_checks(tmp_path):
    """The specs as grading writes them (``nbgrader_dir.generate_assignment``) from solutions/."""
    gdir = nbgrader_dir.GradingDir(tmp_path, "a3")
    gdir.judges.mkdir(parents=True)
    for name in config.load(ROOT).notebooks():
        spec = judge.spec_of(notebooks.read(ROOT / "solutions" / "a3" / f"{name}.ipynb"), name)
        (gdir.judges / f"{name}.json").write_text(spec.to_json())
    found = worker.judge_imports(gdir)
    assert {"torch", "course_lib.judging", "course_lib.checks"} <= set(found)


def test_a_module_that_fails_to_import_is_skipped(tmp_path):
    (tmp_path / "raises_on_import.py").write_text("raise RuntimeError('a broken course module')\n")
    env = {
        **os.environ,
        worker.FORK_PRELOAD: "raises_on_import,no_such_module_at_all,json",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
    }
    code = "import sys, autograder.forkpreload; print('json' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_a_worker_starts_with_the_modules_already_imported(tmp_path):
    """Through multiprocessing's real fork server, as grading starts its workers."""
    out = tmp_path / "modules.json"
    probe = (
        "import json, sys\n"
        f"open({str(out)!r}, 'w').write(json.dumps([name in sys.modules for name in "
        "('wave', 'tabnanny', 'nbgrader.preprocessors')]))\n"
    )
    worker.stop_fork_server()  # this process's server, if a test started one: start ours
    try:
        server = worker._fork_server(lambda: ("wave",))
        process = server.Process(target=exec, args=(probe,))
        process.start()
        process.join(120)
        assert process.exitcode == 0
        assert json.loads(out.read_text()) == [True, False, True]
    finally:
        worker.stop_fork_server()


def test_killing_waits_for_the_end_not_for_the_reaping():
    """A killed process whose parent has not reaped it yet (a student's zygote, whose parent
    was killed with it, waits for the machine's init) has ended: kill_all does not wait for it
    to be reaped. Here its parent reaps it only after 3 s."""
    import psutil

    code = (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        "print(pid, flush=True)\n"
        "time.sleep(3)\n"
        "os.waitpid(pid, 0)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = psutil.Process(int(parent.stdout.readline()))
        processes.kill_all([grandchild])
        assert grandchild.status() == psutil.STATUS_ZOMBIE  # ended, its parent not yet told
    finally:
        processes.kill_all([psutil.Process(parent.pid)])
    assert not psutil.pid_exists(parent.pid)  # this process's own child: reaped
