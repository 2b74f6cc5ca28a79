"""``deploy/slurm-grade.sh`` run unchanged on a real single-node Slurm cluster.

The cluster is private to this module: Debian's ``munged``, ``slurmctld`` and ``slurmd`` (22.05;
``make slurm-tools`` installs them as root on Debian/Ubuntu, and this module runs it when they
are missing), started without systemd in the background, with their own config, state and log
folders, munge key and socket in a temporary folder, ports on 127.0.0.1 chosen free, one node
(``localhost``) that declares 2 CPUs and 2 GB, less than the script's ``#SBATCH`` lines ask
(4 CPUs, 3 GB per CPU; the merge 8 GB): its jobs run only if the overrides on the command line
(``deploy/slurm-grade.sh N --cpus-per-task=...``) and in ``A3_MERGE_OPTIONS`` are obeyed. Every
daemon started is stopped at the end, whatever happened. Not root (slurmd runs jobs as other
users only as root), or no apt-get to install them: skipped, with the reason.

The class: four students of the tiny fixture course's demo (two per shard of 2), as real
submissions in a copy of the repository (its Makefile, script and grader code; the venv of
this run), as a cluster's shared file system holds it. The same class graded by one
``make grade`` in another copy is what the cluster must give. The cluster's first run finds
shard 0's folder blocked (a file where the folder goes): that task fails, the other grades,
the merge after them runs anyway (``afterany``) and names the shard to run again; then
``deploy/slurm-grade.sh 2 --array=0``, as the script's header and the README say, runs that
shard alone and the merge after it: grades.csv and the gradebook are one ``make grade``'s.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.course import config, demo, nbgrader_dir
from helpers import ENV, ROOT, gradebook_rows, grades, make_course

pytestmark = [pytest.mark.slurm, pytest.mark.long]

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel")
STUDENTS = ["s1-full", "s3-partial", "s6-tampered", "s7-deleted"]  # shards 0, 0, 1, 1 of 2
NODE_CPUS, NODE_MEMORY_MB = 2, 2048
SHARD_OPTIONS = ["--cpus-per-task=1", "--mem-per-cpu=900M", "--time=00:30:00"]
MERGE_OPTIONS = "--time=00:20:00 --cpus-per-task=1 --mem=1G"
JOB_TIMEOUT = 900  # seconds for one submission's jobs (they take about a minute alone)


# --- the cluster ---------------------------------------------------------------------------


def slurm_tools() -> None:
    """The daemons and clients, installed by ``make slurm-tools`` when missing; skips the module
    (with the reason) where they cannot be installed or run."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("Slurm test: needs root on Linux (slurmd runs jobs as root here)")
    missing = [c for c in DAEMONS + CLIENTS if not shutil.which(c)]
    if missing and shutil.which("apt-get"):
        subprocess.run(["make", "--no-print-directory", "slurm-tools"], cwd=ROOT, check=False)
        missing = [c for c in DAEMONS + CLIENTS if not shutil.which(c)]
    if missing:
        pytest.skip(f"Slurm test: {', '.join(missing)} not installed (see make slurm-tools)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A one-node Slurm cluster in ``folder`` (munge, controller, node), in the background."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.procs: list[subprocess.Popen] = []
        for sub in ("munge", "state", "spool", "log"):
            (folder / sub).mkdir(parents=True)
        (folder / "munge").chmod(0o700)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.socket = folder / "munge" / "munge.socket"
        self.conf = folder / "slurm.conf"
        settings = {
            "ClusterName": "a3test",
            "SlurmctldHost": "localhost(127.0.0.1)",
            "SlurmctldPort": free_port(),
            "SlurmdPort": free_port(),
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.socket}",
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "StateSaveLocation": folder / "state",
            "SlurmdSpoolDir": folder / "spool",
            "SlurmctldPidFile": folder / "slurmctld.pid",
            "SlurmdPidFile": folder / "slurmd.pid",
            "SlurmctldLogFile": folder / "log" / "slurmctld.log",
            "SlurmdLogFile": folder / "log" / "slurmd.log",
            "ProctrackType": "proctrack/linuxproc",  # no cgroups, no systemd
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_CPU",
            "MpiDefault": "none",
            "ReturnToService": 2,
            "MinJobAge": 3600,  # finished jobs stay in scontrol's view for the checks
            "SlurmdParameters": "config_overrides",  # the node is what is declared here
        }
        lines = [f"{key}={value}" for key, value in settings.items()]
        lines += [
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={NODE_CPUS} "
            f"RealMemory={NODE_MEMORY_MB} State=UNKNOWN",
            "PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        munge, log = self.folder / "munge", self.folder / "log"
        self._spawn(
            "munged", "--foreground", "--force", f"--socket={self.socket}",
            f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
            f"--seed-file={munge / 'munged.seed'}", f"--log-file={log / 'munged.log'}",
        )  # fmt: skip
        self._wait(lambda: self.socket.exists(), "munged made no socket")
        self._spawn("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._spawn("slurmd", "-D", "-N", "localhost", "-f", str(self.conf))
        self._wait(lambda: self.node_state() == "idle", "the node is not idle")

    def _spawn(self, *cmd: str) -> None:
        with open(self.folder / "log" / f"{cmd[0]}.out", "w") as out:
            self.procs.append(subprocess.Popen(cmd, env=ENV, stdout=out, stderr=subprocess.STDOUT))

    def _wait(self, ready, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                pytest.fail(f"Slurm cluster: {what} ({', '.join(dead)} exited)\n{self.logs()}")
            time.sleep(0.2)

    def slurm(self, *cmd: str, cwd: Path | None = None, env: dict | None = None) -> str:
        """What ``cmd`` (a Slurm client, or the script) printed; it must succeed."""
        env = {**(env or ENV), "SLURM_CONF": str(self.conf)}
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{cmd}: {proc.stdout}{proc.stderr}"
        return proc.stdout

    def node_state(self) -> str:
        """The node's state as sinfo says it; empty while the controller does not answer."""
        cmd = ["sinfo", "-h", "-o", "%T"]
        env = {**ENV, "SLURM_CONF": str(self.conf)}
        return subprocess.run(cmd, env=env, capture_output=True, text=True).stdout.strip()

    @staticmethod
    def slurm_queue(env: dict) -> str:
        """squeue's jobs, one a line (empty: none, or no answer)."""
        return subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout

    def wait_idle(self, timeout: float = JOB_TIMEOUT) -> None:
        """Until no job is queued or running."""
        self._wait(lambda: not self.slurm("squeue", "-h").strip(), "jobs still queued", timeout)

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job``'s fields of one job (or array task, ``<array>_<i>``)."""
        text = self.slurm("scontrol", "-o", "show", "job", job_id)
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def logs(self) -> str:
        logs = sorted((self.folder / "log").iterdir())
        return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in logs)

    def stop(self) -> None:
        """Cancel what is still queued or running (a test that failed midway), then end the
        daemons this cluster started."""
        if self.node_state():  # the controller answers
            env = {**ENV, "SLURM_CONF": str(self.conf)}
            subprocess.run(["scancel", "--quiet", "--user", "root"], env=env, timeout=60)
            deadline = time.monotonic() + 60
            while self.slurm_queue(env) and time.monotonic() < deadline:
                time.sleep(0.5)
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --- the class -----------------------------------------------------------------------------


def repository(root: Path) -> Path:
    """The tiny course at ``root`` with four students handed in, laid out as this repository is
    on a cluster: its Makefile (the venv of this run, ``VENV``), the script, the grader's code."""
    make_course(root)
    for name in ("Makefile", "pyproject.toml", "deploy/slurm-grade.sh"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    stamp = Path(sys.prefix) / ".setup-done"  # make grade depends on setup: done, not again
    os.utime(root / "pyproject.toml", (stamp.stat().st_mtime - 1,) * 2)
    for path in config.grader_code_files():
        (root / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / path.relative_to(ROOT))
    course = config.load(root)
    gdir = nbgrader_dir.real(course)
    nbgrader_dir.generate_assignment(course, gdir)
    for student in demo.build(course, gdir):
        if student.student_id not in STUDENTS:
            shutil.rmtree(gdir.submitted / student.student_id)
    assert sorted(p.name for p in gdir.submitted.iterdir()) == STUDENTS
    return root


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    slurm_tools()
    started = time.monotonic()
    cluster = Cluster(Path(tmp_path_factory.mktemp("slurm")))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        print(f"slurm: the module took {time.monotonic() - started:.0f} s")


def test_slurm_array_and_merge_give_one_make_grades(cluster, tmp_path):
    started = time.monotonic()
    whole = repository(tmp_path / "whole")
    sharded = repository(tmp_path / "sharded")
    env = {**ENV, "VENV": str(Path(sys.prefix)), "A3_MERGE_OPTIONS": MERGE_OPTIONS}
    one_run = subprocess.Popen(  # one make grade, meanwhile
        ["make", "--no-print-directory", "grade", "JOBS=2"],
        cwd=whole,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    shards = sharded / "autograder" / "out" / "shards"
    shards.mkdir(parents=True)
    (shards / "0-of-2").write_text("in the way: shard 0 cannot make its folder\n")
    script = ["deploy/slurm-grade.sh", "2", *SHARD_OPTIONS]

    printed = cluster.slurm(*script, cwd=sharded, env=env)
    array = re.search(r"as job (\d+)", printed).group(1)
    cluster.wait_idle()
    print(f"slurm: first submission done at {time.monotonic() - started:.0f} s")
    first, second = cluster.job(f"{array}_0"), cluster.job(f"{array}_1")
    assert first["JobState"] == "FAILED" and second["JobState"] == "COMPLETED", cluster.logs()
    for task in (first, second):  # the command line's resources, not the #SBATCH lines'
        assert (task["NumCPUs"], task["TimeLimit"]) == ("1", "00:30:00"), task
        assert task["MinMemoryCPU"] == "900M", task
    merge_log = next(shards.glob("slurm-merge-*.log")).read_text()
    assert "shard(s) 0/2 not finished" in merge_log, merge_log
    assert not (sharded / "autograder" / "out" / "grades.csv").exists()

    (shards / "0-of-2").unlink()
    printed = cluster.slurm(*script, "--array=0", cwd=sharded, env=env)
    again = re.search(r"as job (\d+)", printed).group(1)
    cluster.wait_idle()
    print(f"slurm: second submission done at {time.monotonic() - started:.0f} s")
    assert cluster.job(f"{again}_0")["JobState"] == "COMPLETED", cluster.logs()
    assert "ArrayTaskId=1" not in cluster.slurm("scontrol", "-o", "show", "job", again)
    merges = sorted(shards.glob("slurm-merge-*.log"), key=lambda p: int(p.stem.split("-")[-1]))
    assert "merged from 2 shards" in merges[-1].read_text(), merges[-1].read_text()

    out, _ = one_run.communicate(timeout=JOB_TIMEOUT)
    assert one_run.returncode == 0, out[-3000:]
    print(f"slurm: make grade done at {time.monotonic() - started:.0f} s")
    assert sorted({s for s, _ in grades(whole)}) == STUDENTS
    assert grades(sharded) == grades(whole)  # every column: scores, flags, files, cells
    assert gradebook_rows(sharded / "autograder" / "class") == gradebook_rows(
        whole / "autograder" / "class"
    )
