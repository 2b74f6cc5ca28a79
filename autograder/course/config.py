"""The course settings (``course.toml`` at the repository root) and the paths derived from them.

Everything the autograder reads or writes is reached from a :class:`Course`:

    root/course.toml                    settings (this module)
    root/solutions/<a>/*.ipynb          instructor notebooks: the assignment's notebooks
    root/assignments/<a>/*.ipynb        student notebooks (written by ``release``)
    root/autograder/                    the grader: its code, nbgrader_config.py, judges/
    root/autograder/class/              nbgrader course directory of the real class
    root/autograder/demo/               nbgrader course directory of the demo class
    root/autograder/out/                grades.csv, summary.txt, the student bundle

where ``<a>`` is the assignment id. Tests point ``root`` at a temporary copy of a course.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course.limits import Limits
from autograder.course.settings import ConfigError, read_table, setting

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILE = "course.toml"
# The grader's stages: its sub-packages in autograder/, in the order a grading run meets them
# (each __init__ says what the stage does and which it hands to).
STAGES = (
    "course", "publish", "handin", "kernels", "marking", "reports", "quality", "deploy", "tools",
)  # fmt: skip
# The grader's own files in autograder/ (beside the course's data there: class/, out/,
# judges/): its modules, the templates of its pages (pages.py) and Gradescope's scripts. What a
# copy of the grader holds: the Gradescope zip (gradescope.code_files), the cluster image
# (deploy/Containerfile's COPY lines).
GRADER_CODE = (
    "*.py", *(f"{stage}/*.py" for stage in STAGES), "reports/templates/*.*", "deploy/scripts/*.sh",
)


def grader_code_files() -> list[Path]:
    """The grader's own files (:data:`GRADER_CODE`) in this repository."""
    grader = REPO_ROOT / "autograder"
    return sorted(p for pattern in GRADER_CODE for p in grader.glob(pattern))


PLACEHOLDERS = ("{{GITHUB_REPO}}", "{{BRANCH}}")

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# Owners that only ever stand for "set this": a release for students refuses them.
PLACEHOLDER_OWNERS = frozenset({"example-org", "example", "your-org", "your-name", "owner", "org"})
_BRANCH = re.compile(r"[A-Za-z0-9_./-]+")
_ASSIGNMENT = re.compile(r"[A-Za-z0-9_-]+")


__all__ = ["ConfigError"]  # settings.ConfigError, raised by load() too


@dataclass(frozen=True)
class GradeSettings:
    """The ``[grade]`` table: time limits (seconds), the number of parallel workers, whether
    the static tamper scan runs (a second line: the judge decides every point), and the
    optional notebooks with the cap on what they add (``rows.count_extra_credit``)."""

    cell_timeout: int = setting(300, "seconds one cell may run when grading", minimum=1)
    demo_cell_timeout: int = setting(90, "the same for the demo class", minimum=1)
    student_timeout: int = setting(
        1800, "wall-clock seconds for one student's whole assignment", minimum=1
    )
    jobs: int = setting(0, "parallel grading workers; 0: one per usable CPU core", minimum=0)
    tamper_scan: bool = setting(True, "the advisory scan of student code (instructor-only notes)")
    extra_credit: tuple[str, ...] = setting((), "notebooks graded as extra credit (optional)")
    extra_credit_cap: float = setting(
        2.0, "points above the regular total that extra credit may add; 0: none", minimum=0
    )

    def workers(self, jobs: int | None = None) -> int:
        """Parallel workers: ``jobs`` if given, else the setting; 0 means one per CPU core
        this process may use (:func:`usable_cpus`)."""
        n = self.jobs if jobs is None else jobs
        return n if n > 0 else usable_cpus()


def usable_cpus() -> int:
    """The CPU cores this process may use: those of its affinity mask (a Slurm allocation),
    capped by its cgroup's CPU quota (a container's or a Kubernetes pod's CPU limit, a
    Gradescope container's share), at least 1. ``os.cpu_count()`` counts the whole machine."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = None
    try:  # cgroup v2: "max 100000" or "150000 100000"
        limit, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        quota = None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        try:  # cgroup v1
            limit = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
            period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
            quota = limit / period if limit > 0 and period > 0 else None
        except (OSError, ValueError):
            quota = None
    if quota is not None:
        cpus = min(cpus, int(quota))
    return max(1, cpus)


@dataclass(frozen=True)
class FeedbackSettings:
    """The ``[feedback]`` table: what the students' feedback pages show (``feedback.py``)."""

    show_test_source: bool = setting(
        False, "show each test's checks (its code): students then read the hidden tests"
    )


@dataclass(frozen=True)
class AuditSettings:
    """The ``[audit]`` table: the mutation audit of the graded tests (``audit.py``)."""

    min_killed: float = setting(
        0.0, "an answer cell whose tests catch a smaller share fails make audit", minimum=0,
        maximum=1,
    )  # fmt: skip
    cell_timeout: int = setting(60, "seconds per cell when grading a mutant", minimum=1)
    show: int = setting(3, "surviving mutants printed per answer cell", minimum=0)


@dataclass(frozen=True)
class LmsSettings:
    """The ``[lms]`` table: the gradebook export for the LMS (``report.write_canvas``)."""

    canvas_column: str = setting("", "the assignment's column in Canvas; empty: its id")


@dataclass(frozen=True)
class SimilaritySettings:
    """The ``[similarity]`` table: the instructors' similarity report (``similarity.py``)."""

    threshold: float = setting(
        0.4, "pairs scoring at least this share are listed", minimum=0, maximum=1
    )
    noise: int = setting(25, "the shortest match counted (characters, names replaced)", minimum=5)
    common: int = setting(10, "code in more answers than this is common code", minimum=0)
    max_pairs: int = setting(100, "pairs shown on the page (the CSV lists them all)", minimum=0)
    reference: str = setting("", "a folder of reference code (from the course root); empty: none")


@dataclass(frozen=True)
class HandoutPoints:
    """One notebook's points as the handout fixes them (``[release.points]``): what its
    autograded tests and its written answers add up to. ``make release`` checks them."""

    autograded: float
    manual: float


@dataclass(frozen=True)
class Course:
    """One course offering: its settings and where its files live."""

    root: Path
    assignment: str
    github_repo: str
    branch: str
    grade: GradeSettings
    collect_pattern: str
    allowed_copies: tuple[str, ...] = ()  # [release] allowed_copies: see course.toml
    # [release.points]: notebook -> its points as the handout fixes them (see course.toml)
    points: dict[str, HandoutPoints] = field(default_factory=dict)
    sandbox: Limits = Limits()  # [sandbox]: see sandbox.py
    output_dir: Path | None = None  # reports elsewhere than autograder/out/ (a grading shard)
    feedback: FeedbackSettings = FeedbackSettings()  # [feedback]: see feedback.py
    audit: AuditSettings = AuditSettings()  # [audit]: see audit.py
    lms: LmsSettings = LmsSettings()  # [lms]: see report.write_canvas
    similarity: SimilaritySettings = SimilaritySettings()  # [similarity]: see similarity.py

    @property
    def solutions_dir(self) -> Path:
        return self.root / "solutions" / self.assignment

    @property
    def assignments_dir(self) -> Path:
        return self.root / "assignments" / self.assignment

    @property
    def grader_dir(self) -> Path:
        """The course's grading home: the grader's code and what ``make release`` commits for
        it (``nbgrader_config.py``, ``judges/``), and the folders grading writes (``class/``,
        ``demo/``, ``out/``)."""
        return self.root / "autograder"

    @property
    def class_dir(self) -> Path:
        """The nbgrader course directory of the real class (generated, gitignored): its
        submissions, gradebook, graded notebooks, feedback and records."""
        return self.grader_dir / "class"

    @property
    def demo_dir(self) -> Path:
        """The nbgrader course directory of the demo class (generated, gitignored)."""
        return self.grader_dir / "demo"

    @property
    def out_dir(self) -> Path:
        """grades.csv, summary.txt, the bundles: ``autograder/out/`` unless ``output_dir``."""
        return self.output_dir or self.grader_dir / "out"

    @property
    def bundle_path(self) -> Path:
        """The zip students download: released notebooks and an install README."""
        return self.out_dir / f"{self.assignment}-student.zip"

    def notebooks(self) -> list[str]:
        """The assignment's notebook names (no extension), discovered from ``solutions/``."""
        return sorted(p.stem for p in self.solutions_dir.glob("*.ipynb"))

    @property
    def placeholder_repo(self) -> bool:
        """Whether ``github_repo`` is a placeholder (``example-org/...``), not a real repository."""
        owner = self.github_repo.split("/")[0].lower()
        return owner in PLACEHOLDER_OWNERS or owner.startswith("example")

    @property
    def install_requirement(self) -> str:
        """What a student passes to pip to install course_lib from the course repository."""
        return f"course-lib @ git+https://github.com/{self.github_repo}@{self.branch}"

    @property
    def install_pattern(self) -> str:
        """A regular expression matching :attr:`install_requirement`, extras allowed
        (``course-lib[bert] @ ...``)."""
        url = re.escape(f"git+https://github.com/{self.github_repo}@{self.branch}")
        return rf"course-lib(\[[a-z,]+\])? @ {url}\b"

    def colab_url(self, notebook: str) -> str:
        """The Colab link of a released notebook (what the badges point to)."""
        return (
            f"https://colab.research.google.com/github/{self.github_repo}/blob/{self.branch}/"
            f"assignments/{self.assignment}/{notebook}.ipynb"
        )

    def stamp(self, text: str) -> str:
        """``text`` with the ``{{GITHUB_REPO}}`` and ``{{BRANCH}}`` placeholders filled in."""
        return text.replace("{{GITHUB_REPO}}", self.github_repo).replace("{{BRANCH}}", self.branch)


# The tables of course.toml that are settings (settings.py): name -> their class; a Course
# holds each as the attribute of that name (course.grade, course.sandbox...).
TABLES = {
    "grade": GradeSettings,
    "sandbox": Limits,
    "feedback": FeedbackSettings,
    "audit": AuditSettings,
    "lms": LmsSettings,
    "similarity": SimilaritySettings,
}


def load(root: Path | str | None = None) -> Course:
    """Read ``root/course.toml`` (``root`` defaults to this repository) and check its values."""
    root = Path(root or REPO_ROOT).resolve()
    path = root / CONFIG_FILE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as err:
        raise ConfigError(f"{path} not found: the autograder needs the course settings") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} is not valid TOML: {err}") from err
    course = data.get("course", {})
    collect = data.get("collect", {})
    allowed = data.get("release", {}).get("allowed_copies", [])
    if not isinstance(allowed, list) or not all(isinstance(x, str) for x in allowed):
        raise ConfigError(f"{path}: [release] allowed_copies must be a list of strings")
    points = _handout_points(data.get("release", {}).get("points", {}), path)

    def need(table: dict, key: str, pattern: re.Pattern, example: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise ConfigError(f"{path}: set {key} (for example {example!r}), got {value!r}")
        return value

    settings = read_table(TABLES["grade"], data, "grade", path)
    limits = read_table(TABLES["sandbox"], data, "sandbox", path)
    pattern = collect.get("pattern", "")
    try:
        groups = re.compile(pattern).groupindex
    except re.error as err:
        raise ConfigError(f"{path}: [collect] pattern is not a regular expression: {err}") from err
    if not {"student_id", "file_id"} <= set(groups):
        raise ConfigError(f"{path}: [collect] pattern must name the groups student_id and file_id")
    feedback, audit, lms, similarity = (
        read_table(TABLES[name], data, name, path)
        for name in ("feedback", "audit", "lms", "similarity")
    )
    return Course(
        root=root,
        assignment=need(course, "assignment", _ASSIGNMENT, "a3"),
        github_repo=need(course, "github_repo", _REPO, "example-org/a3-nmt-bert"),
        branch=need(course, "branch", _BRANCH, "main"),
        grade=settings,
        collect_pattern=pattern,
        allowed_copies=tuple(line.strip() for line in allowed),
        points=points,
        sandbox=limits,
        feedback=feedback,
        audit=audit,
        lms=lms,
        similarity=similarity,
    )


def _handout_points(table: object, path: Path) -> dict[str, HandoutPoints]:
    """The ``[release.points]`` table, checked: ``<notebook> = { autograded = A, manual = M }``,
    points as numbers >= 0."""
    example = "1_gru = { autograded = 1, manual = 1 }"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [release.points] must be a table of lines like {example}")
    found = {}
    for name, entry in table.items():
        values = entry.values() if isinstance(entry, dict) else ()
        if (
            not isinstance(entry, dict)
            or set(entry) != {"autograded", "manual"}
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            or min(values) < 0
        ):
            raise ConfigError(
                f"{path}: [release.points] {name} must be {{ autograded = A, manual = M }} "
                f"(points >= 0, as in {example}), got {entry!r}"
            )
        found[name] = HandoutPoints(float(entry["autograded"]), float(entry["manual"]))
    return found
