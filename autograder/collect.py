"""``make collect ZIP=...``: import an LMS download zip into ``autograder/submitted/``.

Uses nbgrader's ``zip_collect`` with its file-name collector: every file extracted from the
zip whose full path matches ``[collect] pattern`` of ``course.toml`` is copied to
``submitted/<student_id>/<assignment>/<file_id>``. The default pattern reads Canvas's names
(``doejane_12345_678901_1_gru.ipynb``: login, user id, submission id, file). A resubmission
renamed by the LMS (``1_gru-1.ipynb``) is kept under that name; ``make grade`` matches it to
its notebook by content and flags it ``renamed``.

Nothing is lost: ``submitted/`` is copied to ``backups/submitted-<time>/`` first (nbgrader
replaces the folder of every student in the zip).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from . import nbgrader_dir
from .config import Course


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> content)."""
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def collect(course: Course, zip_path: Path, log=print) -> list[str]:
    """Import ``zip_path``; return the ids of the students whose submissions changed."""
    zip_path = Path(zip_path).resolve()
    if not zip_path.is_file():
        raise FileNotFoundError(f"{zip_path} not found")
    gdir = nbgrader_dir.real(course)
    nbgrader_dir.generate_assignment(course, gdir)  # zip_collect checks names against release/
    before = snapshot(gdir.submitted)
    if before:
        backup = gdir.backups / f"submitted-{time.strftime('%Y%m%d-%H%M%S')}"
        shutil.copytree(gdir.submitted, backup)
        log(f"backed up {gdir.submitted} to {backup}")
    archive = gdir.root / "downloaded" / gdir.assignment / "archive"
    if archive.exists():
        shutil.rmtree(archive)
    archive.mkdir(parents=True)
    shutil.copy2(zip_path, archive / zip_path.name)
    proc = nbgrader_dir.nbgrader(gdir, "zip_collect", gdir.assignment, "--force")
    skipped = [
        line.split("Skipped submission with no match information provided: ")[-1]
        for line in proc.stderr.splitlines()
        if "Skipped submission with no match information" in line
    ]
    after = snapshot(gdir.submitted)
    changed = sorted({k.split("/")[0] for k in after if before.get(k) != after[k]})
    log(f"collected {len(changed)} student(s) from {zip_path.name}: {', '.join(changed) or '-'}")
    for name in skipped:
        log(f"  skipped (file name does not match the pattern in course.toml): {name}")
    log("next: make grade")
    return changed
