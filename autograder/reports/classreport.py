"""The class report: what the class learnt, and which tests and behaviours it missed.

``autograder/out/report.html`` and the PNGs next to it (``report-*.png``, matplotlib's Agg),
written by ``report.write_reports`` (after ``make grade``, ``make merge`` and
``make feedback``) from the report rows, which carry the judge's verdicts and the grading
seconds of each notebook:

- the score distribution of each notebook and of the assignment (the regular notebooks; extra
  credit apart, earned and counted after ``[grade] extra_credit_cap``), as a share of the
  maximum, and a table of means and medians. A notebook whose written answers wait for a
  grader is *pending*: counted apart, and left out of the distributions, means and full marks
  until graded (its autograded points are final: the tests' table has them); a student with
  one pending is pending in the assignment's line;
- per notebook, every test's pass rate (full marks) and mean score, every check's pass rate,
  and each check's most common failure messages with how many students got each (the
  messages can quote a student's output: they are escaped);
- the flags counted per notebook (by their letters, ``rows.FLAG_CODES``, with a legend:
  missing, failed, timeout, tampered, renamed, needs-manual, review), and what the advisory
  scan noted, per student (instructor only: the ``review`` notes,
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

from autograder.course import notebooks
from autograder.reports import pages
from autograder.reports.rows import (
    FLAG_HELP,
    FLAGS,
    REVIEW_NOTE,
    Row,
    by_student,
    extra_credit,
    extra_points,
    flag_code,
    is_review_note,
    pending,
    regular,
)

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
    totals: list[float] = field(default_factory=list)  # graded, written answers included
    auto_max: float = 0.0  # the autograded tests' points
    auto: list[float] = field(default_factory=list)  # autograded points, graded notebooks
    written: list[float] = field(default_factory=list)  # written points, when all are graded
    waiting: int = 0  # graded notebooks pending: written answers wait (not in totals)
    flags: Counter = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    tests: dict[str, TestStats] = field(default_factory=dict)


def _short(message: str) -> str:
    message = " ".join(str(message).split())
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


def gather(rows: list[Row]) -> dict[str, NotebookStats]:
    """The statistics of every notebook, from the report rows."""
    stats: dict[str, NotebookStats] = {}
    for row in rows:
        nb = stats.setdefault(row.notebook, NotebookStats(row.notebook, row.extra, row.max))
        flags = [f for f in FLAGS if f in row.flags] or ["ok"]
        nb.flags.update(flags)
        if row.seconds is not None:
            nb.seconds.append(float(row.seconds))
        if not row.verdicts:
            continue
        nb.auto_max = row.autograded_max
        nb.auto.append(row.autograded)
        if "needs-manual" in row.flags:
            nb.waiting += 1  # pending: its total waits for the written answers
        else:
            nb.totals.append(row.earned)
            if row.manual_max:
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


@dataclass
class Totals:
    """The class's totals per student: the regular notebooks, and extra credit earned and
    counted (after the cap), each only for students with no written answer pending there."""

    regular: list[float]
    most: float  # the regular notebooks' points
    pending: int  # students with a regular notebook's written answers waiting
    extra_earned: list[float]
    extra_counted: list[float]
    extra_most: float  # the optional parts' points
    extra_counts: float  # the most extra credit that counts: extra_most, or the cap if lower
    extra_pending: int


def assignment_totals(rows: list[Row], extra_cap: float | None = None) -> Totals:
    """Each student's regular total and extra credit (earned, counted), leaving out students
    whose written answers wait for a grader (counted as pending), with the maximums."""
    students = list(by_student(rows).values())
    regulars = [regular(s) for s in students]
    optional = [extra_credit(s) for s in students]
    done = [o for o in optional if not pending(o)]
    first = students[0] if students else []
    extra_most = sum(r.max for r in extra_credit(first))
    return Totals(
        regular=[sum(r.total for r in s) for s in regulars if not pending(s)],
        most=sum(r.max for r in regular(first)),
        pending=sum(pending(s) for s in regulars),
        extra_earned=[extra_points(o)[0] for o in done],
        extra_counted=[extra_points(o)[1] for o in done],
        extra_most=extra_most,
        extra_counts=extra_most if extra_cap is None else min(extra_most, extra_cap),
        extra_pending=len(optional) - len(done),
    )


# --- figures ----------------------------------------------------------------------------------


def _score_panels(stats: dict[str, NotebookStats], t: Totals) -> list[tuple]:
    """(title, scores, maximum, pending) of each score histogram that has data: the assignment,
    each notebook, the extra credit counted."""
    panels = [("assignment (regular notebooks)", t.regular, t.most, t.pending)]
    panels += [(f"{n.name}{' (extra credit)' if n.extra else ''}", n.totals, n.maximum,
                n.waiting) for n in stats.values()]  # fmt: skip
    if t.extra_counts:
        panels.append(("extra credit counted", t.extra_counted, t.extra_counts, t.extra_pending))
    return [p for p in panels if p[1] and p[2]]


def _histograms(plt, panels: list[tuple]):
    """The score distributions: one histogram (% of the maximum) per panel, three a row."""
    cols = min(3, len(panels))
    lines = -(-len(panels) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(4.2 * cols, 2.8 * lines), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, (title, values, maximum, waiting) in zip(axes.flat, panels, strict=False):
        shares = [100 * v / maximum for v in values]
        ax.hist(shares, bins=[i * 10 for i in range(11)], color="#4c78a8", edgecolor="white")
        later = f", {waiting} pending" if waiting else ""
        ax.set_title(f"{title}\nmedian {statistics.median(values):g} / {maximum:g}{later}",
                     fontsize=9)  # fmt: skip
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of the maximum", fontsize=8)
        ax.set_ylabel("students", fontsize=8)
        ax.yaxis.get_major_locator().set_params(integer=True)
    return fig


def _pass_rates(plt, tests: list[tuple[str, TestStats]]):
    """The pass rate of every test, (notebook, test) pairs, a bar each, coloured by notebook."""
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
    return fig


def _timings(plt, timed: list[tuple[str, list[float]]]):
    """The grading seconds per student of each notebook, a box each."""
    fig, ax = plt.subplots(figsize=(1.6 * len(timed) + 2.5, 3))
    ax.boxplot([s for _, s in timed])
    ax.set_xticks(range(1, len(timed) + 1), [n for n, _ in timed], fontsize=7, rotation=15)
    ax.set_ylabel("seconds per student", fontsize=8)
    ax.set_title("grading time per notebook", fontsize=9)
    return fig


def _figures(stats: dict[str, NotebookStats], totals: Totals, out: Path) -> list[str]:
    """Write the PNGs; return the names of those written (none without data). Pending
    notebooks and students are left out (the panel's title counts them)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = [
        (IMAGES[0], _histograms, _score_panels(stats, totals)),
        (IMAGES[1], _pass_rates,
         [(nb.name, t) for nb in stats.values() for t in nb.tests.values() if t.runs]),
        (IMAGES[2], _timings, [(nb.name, nb.seconds) for nb in stats.values() if nb.seconds]),
    ]  # fmt: skip
    written: list[str] = []
    for name, draw, data in figures:
        if not data:
            continue
        fig = draw(plt, data)
        fig.tight_layout()
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        written.append(name)
    return written


# --- the page (templates/classreport.html.j2) ------------------------------------------------

ALT = {
    IMAGES[0]: "score distributions per notebook and for the assignment",
    IMAGES[1]: "pass rate of every test",
    IMAGES[2]: "grading seconds per notebook",
}


def _scores(values: list[float], maximum: float, waiting: int = 0) -> dict | None:
    if not values:
        return {"n": 0, "pending": waiting} if waiting else None
    full = sum(v >= maximum - 1e-9 for v in values)
    return {"n": len(values), "pending": waiting, "max": maximum,
            "mean": statistics.mean(values), "median": statistics.median(values),
            "lowest": min(values), "full": _pct(full, len(values))}  # fmt: skip


def _score_rows(stats: dict[str, NotebookStats], t: Totals, extra_cap: float | None) -> list:
    """(label, notebook or None, figures or None) per line of the score table."""
    every = "(regular notebooks, every student)"
    lines = [(("assignment", every), None, _scores(t.regular, t.most, t.pending))]
    lines += [((n.name, ""), n, _scores(n.totals, n.maximum, n.waiting)) for n in stats.values()]
    if t.extra_most:
        cap = "" if extra_cap is None else f", at most {pages.num(extra_cap)}"
        lines += [
            (("extra credit earned", "(every student)"), None,
             _scores(t.extra_earned, t.extra_most, t.extra_pending)),
            (("extra credit counted", f"(every student{cap})"), None,
             _scores(t.extra_counted, t.extra_counts, t.extra_pending)),
        ]  # fmt: skip
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
            "auto_mean": pages.num(statistics.mean(nb.auto), 2) if n else "-",
            "full": _pct(full, n), "written_max": nb.maximum - nb.auto_max,
            "written_mean": pages.num(statistics.mean(nb.written), 2) if nb.written else "-",
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


def _review_rows(rows: list[Row]) -> list[tuple[str, str, list[str]]]:
    """The advisory scan's notes, per student and notebook."""
    found = []
    for row in rows:
        notes = [n[len(REVIEW_NOTE) :] for n in row.notes if is_review_note(n)]
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
    stats: dict[str, NotebookStats], rows: list[Row], images: list[str], title: str,
    extra_cap: float | None = None,
) -> str:  # fmt: skip
    """The report's HTML (``templates/classreport.html.j2``; ``extra_cap``: ``[grade]
    extra_credit_cap``)."""
    kinds = ["ok", *FLAGS]
    total = Counter()
    for nb in stats.values():
        total.update(nb.flags)
    return pages.render(
        "classreport.html.j2",
        title="Class report",
        csp=REPORT_CSP,
        class_title=title,
        students=len(by_student(rows)),
        graded=sum(len(n.auto) for n in stats.values()),
        images=images,
        images_named=IMAGES,
        alt=ALT,
        waiting=sum(nb.waiting for nb in stats.values()),
        scores=_score_rows(stats, assignment_totals(rows, extra_cap), extra_cap),
        apart=_apart_rows(stats),
        notebooks=[
            {"name": nb.name, "extra": nb.extra, "tests": _test_rows(nb)} for nb in stats.values()
        ],
        kinds=kinds,
        codes={"ok": "ok", **{f: flag_code(f) for f in FLAGS}},
        legend=[(flag_code(f), f, FLAG_HELP[f]) for f in FLAGS],
        flag_rows=[(nb.name, nb.flags) for nb in stats.values()],
        flag_total=total,
        review=_review_rows(rows),
        seconds=[(nb.name, _seconds(nb.seconds)) for nb in stats.values()],
    )


def write_report(rows: list[Row], out: Path, title: str, extra_cap: float | None = None) -> Path:
    """Write ``out/report.html`` and its PNGs; return the page's path (``extra_cap``: ``[grade]
    extra_credit_cap``, stated with the extra credit counted)."""
    out.mkdir(parents=True, exist_ok=True)
    stats = gather(rows)
    images = _figures(stats, assignment_totals(rows, extra_cap), out)
    for name in IMAGES:
        if name not in images:
            (out / name).unlink(missing_ok=True)
    path = out / "report.html"
    notebooks.write_bytes(path, page(stats, rows, images, title, extra_cap).encode())
    return path
