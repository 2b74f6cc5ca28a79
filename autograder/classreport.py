"""The class report: what the class learnt, and which tests and behaviours it missed.

``autograder/out/report.html`` and the PNGs next to it (``report-*.png``, matplotlib's Agg),
written by ``grading.write_reports`` (after ``make grade``, ``make merge`` and
``make feedback``) from the report rows, which carry the judge's verdicts and the grading
seconds of each notebook:

- the score distribution of each notebook and of the assignment (the regular notebooks; extra
  credit apart), as a share of the maximum, and a table of means and medians;
- per notebook, every test's pass rate (full marks) and mean score, every check's pass rate,
  and each check's most common failure messages with how many students got each (the
  messages can quote a student's output: they are escaped);
- the flags counted per notebook (missing, failed, timeout, tampered, renamed, needs-manual,
  review), and what the advisory scan noted, per student (instructor only: the ``review`` notes,
  which name a cell, a line and a rule);
- the seconds grading took per notebook (median, mean, slowest, total).

Pass rates count the notebooks the judge graded (a missing or failed notebook has no verdict:
it counts in the flags, not in the rates). The page is self-contained but for its images
(``<img src="report-....png">`` next to it): inline CSS, no script.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import notebooks, pages, report

TOP_MESSAGES = 3  # failure messages shown per check
MESSAGE_CHARS = 300
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' file: data:"
IMAGES = ("report-scores.png", "report-tests.png", "report-seconds.png")


@dataclass
class CheckStats:
    """How the class did on one check of one test."""

    description: str
    points: float
    runs: int = 0
    passed: int = 0
    messages: Counter = field(default_factory=Counter)  # failure message -> students


@dataclass
class TestStats:
    """How the class did on one test: full marks, score, and its checks."""

    grade_id: str
    points: float
    runs: int = 0
    full: int = 0
    score: float = 0.0
    errors: Counter = field(default_factory=Counter)  # what stopped the cell -> students
    checks: dict[str, CheckStats] = field(default_factory=dict)


@dataclass
class NotebookStats:
    """One notebook across the class."""

    name: str
    extra: bool
    maximum: float
    totals: list[float] = field(default_factory=list)  # handed in and graded
    auto_max: float = 0.0  # the autograded tests' points
    auto: list[float] = field(default_factory=list)  # autograded points, graded notebooks
    written: list[float] = field(default_factory=list)  # written points, when all are graded
    waiting: int = 0  # graded notebooks whose written answers wait for a grader
    flags: Counter = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    tests: dict[str, TestStats] = field(default_factory=dict)


def _short(message: str) -> str:
    message = " ".join(str(message).split())
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


def gather(rows: list[report.Row]) -> dict[str, NotebookStats]:
    """The statistics of every notebook, from the report rows."""
    stats: dict[str, NotebookStats] = {}
    for row in rows:
        nb = stats.setdefault(row.notebook, NotebookStats(row.notebook, row.extra, row.max))
        flags = [f for f in report.FLAGS if f in row.flags] or ["ok"]
        nb.flags.update(flags)
        if row.seconds is not None:
            nb.seconds.append(float(row.seconds))
        if not row.verdicts:
            continue
        nb.totals.append(row.total)
        nb.auto_max = row.autograded_max
        nb.auto.append(row.autograded)
        if "needs-manual" in row.flags:
            nb.waiting += 1
        elif row.manual_max:
            nb.written.append(row.manual)
        for gid, verdict in row.verdicts.items():
            test = nb.tests.setdefault(gid, TestStats(gid, float(verdict.get("points", 0.0))))
            test.runs += 1
            score = float(verdict.get("score", 0.0))
            test.score += score
            test.full += score >= test.points - 1e-9
            if verdict.get("error"):
                test.errors[_short(verdict["error"])] += 1
            for check in verdict.get("checks", []):
                key = str(check["description"])
                item = test.checks.setdefault(key, CheckStats(key, float(check["points"])))
                item.runs += 1
                if check["passed"]:
                    item.passed += 1
                else:
                    item.messages[_short(check.get("message") or "(no message)")] += 1
    return stats


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def assignment_totals(rows: list[report.Row]) -> tuple[list[float], float, list[float], float]:
    """Each student's regular total and the regular maximum; extra credit and its maximum."""
    students = report.by_student(rows)
    regular = [sum(r.total for r in report.regular(s)) for s in students.values()]
    extra = [sum(r.total for r in report.extra_credit(s)) for s in students.values()]
    first = next(iter(students.values()), [])
    return (
        regular,
        sum(r.max for r in report.regular(first)),
        extra,
        sum(r.max for r in report.extra_credit(first)),
    )


# --- figures ----------------------------------------------------------------------------------


def _figures(stats: dict[str, NotebookStats], rows: list[report.Row], out: Path) -> list[str]:
    """Write the PNGs; return the names of those written (none without data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        written.append(name)

    regular, most, extra, extra_most = assignment_totals(rows)
    panels = [("assignment (regular notebooks)", regular, most)]
    panels += [(f"{n.name}{' (extra credit)' if n.extra else ''}", n.totals, n.maximum)
               for n in stats.values()]  # fmt: skip
    if extra_most:
        panels.append(("extra credit, all optional parts", extra, extra_most))
    panels = [p for p in panels if p[1] and p[2]]
    if panels:
        cols = min(3, len(panels))
        lines = -(-len(panels) // cols)
        fig, axes = plt.subplots(lines, cols, figsize=(4.2 * cols, 2.8 * lines), squeeze=False)
        for ax in axes.flat[len(panels) :]:
            ax.axis("off")
        for ax, (title, values, maximum) in zip(axes.flat, panels, strict=False):
            shares = [100 * v / maximum for v in values]
            ax.hist(shares, bins=[i * 10 for i in range(11)], color="#4c78a8", edgecolor="white")
            ax.set_title(f"{title}\nmedian {statistics.median(values):g} / {maximum:g}", fontsize=9)
            ax.set_xlim(0, 100)
            ax.set_xlabel("% of the maximum", fontsize=8)
            ax.set_ylabel("students", fontsize=8)
            ax.yaxis.get_major_locator().set_params(integer=True)
        save(fig, IMAGES[0])
    tests = [(nb.name, t) for nb in stats.values() for t in nb.tests.values() if t.runs]
    if tests:
        fig, ax = plt.subplots(figsize=(8, 0.28 * len(tests) + 1.2))
        names = list(dict.fromkeys(n for n, _ in tests))
        colours = plt.get_cmap("tab10")
        labels = [t.grade_id for _, t in tests][::-1]
        rates = [100 * t.full / t.runs for _, t in tests][::-1]
        colour = [colours(names.index(n) % 10) for n, _ in tests][::-1]
        ax.barh(range(len(tests)), rates, color=colour)
        ax.set_yticks(range(len(tests)), labels, fontsize=7)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of graded notebooks with full marks on the test", fontsize=8)
        ax.set_title("pass rate of every test", fontsize=9)
        save(fig, IMAGES[1])
    timed = [(nb.name, nb.seconds) for nb in stats.values() if nb.seconds]
    if timed:
        fig, ax = plt.subplots(figsize=(1.6 * len(timed) + 2.5, 3))
        ax.boxplot([s for _, s in timed])
        ax.set_xticks(range(1, len(timed) + 1), [n for n, _ in timed], fontsize=7, rotation=15)
        ax.set_ylabel("seconds per student", fontsize=8)
        ax.set_title("grading time per notebook", fontsize=9)
        save(fig, IMAGES[2])
    return written


# --- the page (templates/classreport.html.j2) ------------------------------------------------

ALT = {
    IMAGES[0]: "score distributions per notebook and for the assignment",
    IMAGES[1]: "pass rate of every test",
    IMAGES[2]: "grading seconds per notebook",
}


def _scores(values: list[float], maximum: float) -> dict | None:
    if not values:
        return None
    full = sum(v >= maximum - 1e-9 for v in values)
    return {"n": len(values), "max": maximum, "mean": statistics.mean(values),
            "median": statistics.median(values), "lowest": min(values),
            "full": _pct(full, len(values))}  # fmt: skip


def _score_rows(stats: dict[str, NotebookStats], rows: list[report.Row]) -> list[tuple]:
    """(label, notebook or None, figures or None) per line of the score table."""
    regular, most, extra, extra_most = assignment_totals(rows)
    lines = [(("assignment", "(regular notebooks, every student)"), None, _scores(regular, most))]
    lines += [((n.name, ""), n, _scores(n.totals, n.maximum)) for n in stats.values()]
    if extra_most:
        lines.append((("extra credit", "(every student)"), None, _scores(extra, extra_most)))
    return lines


def _apart_rows(stats: dict[str, NotebookStats]) -> list[dict]:
    """Autograded and written points apart: the tests' points are final after make grade,
    the written answers' only once a grader scored them (those waiting are not averaged)."""
    found = []
    for nb in stats.values():
        n = len(nb.auto)
        full = sum(v >= nb.auto_max - 1e-9 for v in nb.auto)
        found.append({
            "name": nb.name, "n": n, "auto_max": nb.auto_max,
            "auto_mean": report.num(statistics.mean(nb.auto), 2) if n else "-",
            "full": _pct(full, n), "written_max": nb.maximum - nb.auto_max,
            "written_mean": report.num(statistics.mean(nb.written), 2) if nb.written else "-",
            "waiting": nb.waiting,
        })  # fmt: skip
    return found


def _test_rows(nb: NotebookStats) -> list[dict]:
    found = []
    for test in nb.tests.values():
        checks = [
            {
                "description": c.description,
                "points": c.points,
                "rate": c.passed / c.runs if c.runs else 0.0,
                "passed": _pct(c.passed, c.runs),
                "messages": c.messages.most_common(TOP_MESSAGES),
                "more": len(c.messages) - TOP_MESSAGES,
            }
            for c in test.checks.values()
        ]
        found.append({
            "grade_id": test.grade_id, "points": test.points, "runs": test.runs,
            "rate": test.full / test.runs if test.runs else 0.0,
            "passed": _pct(test.full, test.runs),
            "mean": test.score / test.runs if test.runs else 0.0,
            "errors": test.errors.most_common(TOP_MESSAGES), "checks": checks,
        })  # fmt: skip
    return found


def _review_rows(rows: list[report.Row]) -> list[tuple[str, str, list[str]]]:
    """The advisory scan's notes, per student and notebook."""
    found = []
    for row in rows:
        notes = [n[len(report.REVIEW_NOTE) :] for n in row.notes if report.is_review_note(n)]
        if notes:
            found.append((row.student, row.notebook, notes))
    return found


def _seconds(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"n": len(values), "median": statistics.median(values),
            "mean": statistics.mean(values), "slowest": max(values),
            "total": sum(values)}  # fmt: skip


def page(
    stats: dict[str, NotebookStats], rows: list[report.Row], images: list[str], title: str
) -> str:
    """The report's HTML (``templates/classreport.html.j2``)."""
    kinds = ["ok", *report.FLAGS]
    total = Counter()
    for nb in stats.values():
        total.update(nb.flags)
    return pages.render(
        "classreport.html.j2",
        title="Class report",
        csp=REPORT_CSP,
        class_title=title,
        students=len(report.by_student(rows)),
        graded=sum(len(n.totals) for n in stats.values()),
        images=images,
        images_named=IMAGES,
        alt=ALT,
        waiting=sum(nb.waiting for nb in stats.values()),
        scores=_score_rows(stats, rows),
        apart=_apart_rows(stats),
        notebooks=[
            {"name": nb.name, "extra": nb.extra, "tests": _test_rows(nb)} for nb in stats.values()
        ],
        kinds=kinds,
        flag_rows=[(nb.name, nb.flags) for nb in stats.values()],
        flag_total=total,
        review=_review_rows(rows),
        seconds=[(nb.name, _seconds(nb.seconds)) for nb in stats.values()],
    )


def write_report(rows: list[report.Row], out: Path, title: str) -> Path:
    """Write ``out/report.html`` and its PNGs; return the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    stats = gather(rows)
    images = _figures(stats, rows, out)
    for name in IMAGES:
        if name not in images:
            (out / name).unlink(missing_ok=True)
    path = out / "report.html"
    notebooks.write_bytes(path, page(stats, rows, images, title).encode())
    return path
