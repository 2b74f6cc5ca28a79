"""``make release``'s history: which notebooks must run again, and the record of every release.

Only the notebooks that changed since the last release run (:func:`plan_runs`): the release
history file (``autograder/judges/<a>.history.json``) records, per notebook, the digest of its
files (:func:`notebook_digest`: the solution nbgrader got, its release, its judge spec) that
last passed, and the digest of what every run depends on (:func:`dependencies_digest`:
``course_lib``, the grader's :data:`RUN_MODULES`, the Python and package versions, the cell
limit); when that changed, every notebook runs. It also records each release's locked and test
cells (:func:`record_release`), so that the intake accepts a notebook made from any release of
the term.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import nbgrader_dir, notebooks
from autograder.course.config import REPO_ROOT, Course
from autograder.course.spec import Spec
from autograder.handin import intake


def record_release(
    gdir: nbgrader_dir.GradingDir,
    released: dict[str, NotebookNode],
    log=print,
    verified: Verified | None = None,
) -> bool:
    """Append the release's locked and test cells (``intake.release_record``) to the release
    history (``intake.history_path``: ``autograder/judges/<a>.history.json``, committed) unless
    the last entry already records them, and keep ``verified`` in it (the last release's
    :class:`Verified`; None: the file's own). Return whether a release was appended."""
    path = intake.history_path(gdir)
    history = intake.History.load(path)
    verified = verified or Verified.load(path)
    record = intake.release_record(released)
    releases = list(history.releases)
    new = not releases or _canonical(releases[-1]["notebooks"]) != _canonical(record)
    if new:
        releases.append({"date": time.strftime("%Y-%m-%d %H:%M"), "notebooks": record})
    text = history_json(releases, verified if verified.notebooks else None)
    if not path.exists() or path.read_text() != text:
        notebooks.write_bytes(path, text.encode())
    if new:
        log(f"release {len(releases)} of the term recorded in {path} (commit it)")
    return new


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True)


def history_json(releases: list[dict], verified: Verified | None = None) -> str:
    """The release history file: one line per cell record, so that a release reads as a diff;
    with ``verified``, what the last release verified by running (one line per notebook)."""
    lines = [
        "{",
        ' "about": "The locked and test cells of every release of the term, appended by make '
        "release (autograder/publish/release.py); the intake accepts a cell as any release "
        'had it.",',
        f' "version": {intake.HISTORY_VERSION},',
    ]
    if verified is not None:
        lines += verified.json_lines()
    lines.append(' "releases": [')
    for r, entry in enumerate(releases):
        lines.append(f'  {{"date": {json.dumps(entry["date"])}, "notebooks": {{')
        names = list(entry["notebooks"])
        for i, name in enumerate(names):
            cells = entry["notebooks"][name]
            lines.append(f"   {json.dumps(name)}: {{")
            for k, (gid, record) in enumerate(cells.items()):
                comma = "," if k + 1 < len(cells) else ""
                lines.append(f"    {json.dumps(gid)}: {json.dumps(record)}{comma}")
            lines.append("   }" + ("," if i + 1 < len(names) else ""))
        lines.append("  }}" + ("," if r + 1 < len(releases) else ""))
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


# What every notebook's runs depend on besides its own files: the grader's modules that run
# and judge them (their paths in autograder/), course_lib, the interpreter and these packages,
# the cell limit.
RUN_MODULES = (
    "kernels/execute.py", "kernels/judge.py", "course/nbgrader_dir.py", "course/notebooks.py",
    "publish/releaseruns.py", "kernels/remote.py", "handin/restore.py", "kernels/runjudge.py",
    "course/spec.py",
)  # fmt: skip
RUN_PACKAGES = ("torch", "numpy", "nbclient", "ipykernel", "jupyter_client", "nbgrader")


def _sha256(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def dependencies_digest(course: Course) -> str:
    """The digest of what every notebook's runs depend on besides its own files: the files of
    ``course_lib`` (the one the notebooks' kernels import: this repository's), the grader's
    ``RUN_MODULES``, the Python and ``RUN_PACKAGES`` versions, and ``[grade] cell_timeout``."""
    from importlib import metadata

    lib = REPO_ROOT / "course_lib"
    files = sorted(p for p in lib.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    files += [REPO_ROOT / "autograder" / m for m in RUN_MODULES]
    versions = [sys.version]
    for package in RUN_PACKAGES:
        try:
            versions.append(f"{package}=={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} missing")
    parts = [f"{p.relative_to(REPO_ROOT)}".encode() + b"\0" + p.read_bytes() for p in files]
    setting = f"cell_timeout={course.grade.cell_timeout}"
    return _sha256(*parts, "\n".join(versions).encode(), setting.encode())


def notebook_digest(source: NotebookNode, released: NotebookNode, spec: Spec) -> str:
    """The digest of one notebook's own files that its runs read: the solution nbgrader got,
    its release and its judge spec."""
    texts = (notebooks.nbformat.writes(source), notebooks.nbformat.writes(released), spec.to_json())
    return _sha256(*(t.encode() for t in texts))


@dataclass(frozen=True)
class Verified:
    """What the last release verified by running its notebooks (kept in the release history
    file, ``"verified"``): the :func:`dependencies_digest` then, and per notebook its
    :func:`notebook_digest` and the date of the release that ran it."""

    dependencies: str = ""
    notebooks: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Verified:
        """The record in the history file ``path``; none when it has none (or is unreadable)."""
        try:
            data = json.loads(path.read_text())["verified"]
            return cls(
                str(data["dependencies"]), {str(k): dict(v) for k, v in data["notebooks"].items()}
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()

    def unchanged(self, name: str, digest: str, dependencies: str) -> bool:
        """Whether notebook ``name`` with ``digest`` ran and passed in the last release, with
        the same dependencies."""
        return (
            dependencies == self.dependencies
            and self.notebooks.get(name, {}).get("digest") == digest
        )

    def json_lines(self) -> list[str]:
        """The ``"verified"`` entry of :func:`history_json`: one line per notebook."""
        names = sorted(self.notebooks)
        lines = [' "verified": {', f'  "dependencies": {json.dumps(self.dependencies)},']
        lines.append('  "notebooks": {')
        for i, name in enumerate(names):
            comma = "," if i + 1 < len(names) else ""
            lines.append(f"   {json.dumps(name)}: {json.dumps(self.notebooks[name])}{comma}")
        return [*lines, "  }", " },"]


def plan_runs(
    names: list[str],
    digests: dict[str, str],
    dependencies: str,
    last: Verified,
    only: tuple[str, ...] = (),
    everything: bool = False,
) -> tuple[list[str], list[str], list[str]]:
    """Which notebooks run: (run, kept, left). ``run``: ``only`` when given, else every
    notebook (``everything``, or when the dependencies changed) or those whose digest the last
    release did not verify. ``kept``: unchanged since they were verified (not run).
    ``left``: changed but not in ``only`` (unverified: the release is not published)."""
    same = [n for n in names if last.unchanged(n, digests[n], dependencies)]
    if only:
        run = [n for n in names if n in only]
    elif everything:
        run = list(names)
    else:
        run = [n for n in names if n not in same]
    kept = [n for n in names if n not in run and n in same]
    left = [n for n in names if n not in run and n not in same]
    return run, kept, left
