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

import html
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import notebooks, report

esc = html.escape
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


def _bar(share: float) -> str:
    width = max(0.0, min(1.0, share)) * 8
    return f"<span class='bar' style='width:{width:.2f}em'></span>"


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


# --- the page ---------------------------------------------------------------------------------


def _score_table(stats: dict[str, NotebookStats], rows: list[report.Row]) -> str:
    regular, most, extra, extra_most = assignment_totals(rows)
    lines = [
        "<table><tr><th>part</th><th class='num'>graded</th><th class='num'>max</th>"
        "<th class='num'>mean</th><th class='num'>median</th><th class='num'>lowest</th>"
        "<th class='num'>full marks</th></tr>"
    ]
    entries = [("<b>assignment</b> (regular notebooks, every student)", regular, most)]
    entries += [(esc(n.name) + (" <span class='badge'>extra credit</span>" if n.extra else ""),
                 n.totals, n.maximum) for n in stats.values()]  # fmt: skip
    if extra_most:
        entries.append(("<b>extra credit</b> (every student)", extra, extra_most))
    for label, values, maximum in entries:
        if not values:
            lines.append(f"<tr><td>{label}</td><td class='num'>0</td><td colspan='5'></td></tr>")
            continue
        full = sum(v >= maximum - 1e-9 for v in values)
        lines.append(
            f"<tr><td>{label}</td><td class='num'>{len(values)}</td>"
            f"<td class='num'>{report.num(maximum, 2)}</td>"
            f"<td class='num'>{report.num(statistics.mean(values), 2)}</td>"
            f"<td class='num'>{report.num(statistics.median(values), 2)}</td>"
            f"<td class='num'>{report.num(min(values), 2)}</td>"
            f"<td class='num'>{_pct(full, len(values))}</td></tr>"
        )
    return "".join(lines) + "</table>"


def _apart_table(stats: dict[str, NotebookStats]) -> str:
    """Autograded and written points apart: the tests' points are final after make grade,
    the written answers' only once a grader scored them (those waiting are not averaged)."""
    lines = [
        "<table><tr><th>part</th><th class='num'>graded</th><th class='num'>tests max</th>"
        "<th class='num'>tests mean</th><th class='num'>tests full marks</th>"
        "<th class='num'>written max</th><th class='num'>written mean (graded)</th>"
        "<th class='num'>written answers waiting</th></tr>"
    ]
    for nb in stats.values():
        n = len(nb.auto)
        written_max = nb.maximum - nb.auto_max
        full = sum(v >= nb.auto_max - 1e-9 for v in nb.auto)
        lines.append(
            f"<tr><td>{esc(nb.name)}</td><td class='num'>{n}</td>"
            f"<td class='num'>{report.num(nb.auto_max, 2)}</td>"
            f"<td class='num'>{report.num(statistics.mean(nb.auto), 2) if n else '-'}</td>"
            f"<td class='num'>{_pct(full, n)}</td>"
            f"<td class='num'>{report.num(written_max, 2)}</td>"
            f"<td class='num'>"
            f"{report.num(statistics.mean(nb.written), 2) if nb.written else '-'}</td>"
            f"<td class='num'>{nb.waiting}</td></tr>"
        )
    return "".join(lines) + "</table>"


def _flag_table(stats: dict[str, NotebookStats]) -> str:
    kinds = ["ok", *report.FLAGS]
    head = "".join(f"<th class='num'>{esc(k)}</th>" for k in kinds)
    lines = [f"<table><tr><th>notebook</th>{head}</tr>"]
    for nb in stats.values():
        cells = "".join(f"<td class='num'>{nb.flags.get(k, 0) or ''}</td>" for k in kinds)
        lines.append(f"<tr><td>{esc(nb.name)}</td>{cells}</tr>")
    total = Counter()
    for nb in stats.values():
        total.update(nb.flags)
    cells = "".join(f"<td class='num'><b>{total.get(k, 0) or ''}</b></td>" for k in kinds)
    lines.append(f"<tr><td><b>all</b></td>{cells}</tr>")
    return "".join(lines) + "</table>"


def _review_table(rows: list[report.Row]) -> str:
    """The advisory scan's notes, per student and notebook (none: a line saying so)."""
    lines = []
    for row in rows:
        notes = [n[len(report.REVIEW_NOTE) :] for n in row.notes if report.is_review_note(n)]
        if notes:
            lines.append(
                f"<tr><td>{esc(row.student)}</td><td>{esc(row.notebook)}</td>"
                f"<td>{'<br>'.join(esc(n) for n in notes)}</td></tr>"
            )
    if not lines:
        return "<p class='muted'>nothing noted</p>"
    head = "<table><tr><th>student</th><th>notebook</th><th>noted (cell, line, rule)</th></tr>"
    return head + "".join(lines) + "</table>"


def _seconds_table(stats: dict[str, NotebookStats]) -> str:
    lines = [
        "<table><tr><th>notebook</th><th class='num'>graded</th><th class='num'>median s</th>"
        "<th class='num'>mean s</th><th class='num'>slowest s</th><th class='num'>total s</th>"
        "</tr>"
    ]
    for nb in stats.values():
        s = nb.seconds
        if not s:
            lines.append(f"<tr><td>{esc(nb.name)}</td><td class='num'>0</td><td colspan='4'></td>")
            continue
        lines.append(
            f"<tr><td>{esc(nb.name)}</td><td class='num'>{len(s)}</td>"
            f"<td class='num'>{statistics.median(s):.1f}</td>"
            f"<td class='num'>{statistics.mean(s):.1f}</td><td class='num'>{max(s):.1f}</td>"
            f"<td class='num'>{sum(s):.0f}</td></tr>"
        )
    return "".join(lines) + "</table>"


def _tests_section(nb: NotebookStats) -> str:
    if not nb.tests:
        return f"<h3>{esc(nb.name)}</h3><p class='muted'>no graded notebook</p>"
    lines = [
        f"<h3>{esc(nb.name)}{' <span class=badge>extra credit</span>' if nb.extra else ''}</h3>",
        "<table><tr><th>test / check</th><th class='num'>points</th><th>passed</th>"
        "<th class='num'>mean</th><th>most common failures (students)</th></tr>",
    ]
    for test in nb.tests.values():
        rate = test.full / test.runs if test.runs else 0.0
        errors = "".join(
            f"<div class='msg'>{count} &times; stopped: {esc(m)}</div>"
            for m, count in test.errors.most_common(TOP_MESSAGES)
        )
        lines.append(
            f"<tr><td><b><code>{esc(test.grade_id)}</code></b></td>"
            f"<td class='num'>{report.num(test.points, 2)}</td>"
            f"<td class='nowrap'>{_bar(rate)} {_pct(test.full, test.runs)} of {test.runs}</td>"
            f"<td class='num'>{report.num(test.score / test.runs if test.runs else 0.0, 2)}</td>"
            f"<td>{errors}</td></tr>"
        )
        for check in test.checks.values():
            share = check.passed / check.runs if check.runs else 0.0
            messages = "".join(
                f"<div class='msg'>{count} &times; {esc(m)}</div>"
                for m, count in check.messages.most_common(TOP_MESSAGES)
            )
            more = len(check.messages) - TOP_MESSAGES
            if more > 0:
                messages += f"<div class='muted'>and {more} other message(s)</div>"
            lines.append(
                f"<tr><td style='padding-left:1.5em'>{esc(check.description)}</td>"
                f"<td class='num'>{report.num(check.points, 2)}</td>"
                f"<td class='nowrap'>{_bar(share)} {_pct(check.passed, check.runs)}</td><td></td>"
                f"<td>{messages}</td></tr>"
            )
    return "".join(lines) + "</table>"


def page(
    stats: dict[str, NotebookStats], rows: list[report.Row], images: list[str], title: str
) -> str:
    """The report's HTML."""
    students = report.by_student(rows)
    alt = {
        IMAGES[0]: "score distributions per notebook and for the assignment",
        IMAGES[1]: "pass rate of every test",
        IMAGES[2]: "grading seconds per notebook",
    }
    figure = {n: f"<p><img src='{n}' alt='{alt[n]}' style='max-width:100%'></p>" for n in images}
    parts = [
        f"<h1>Class report</h1><p class='muted'>{esc(title)}: {len(students)} student(s), "
        f"{sum(len(n.totals) for n in stats.values())} graded notebook(s)</p>",
        "<h2>Scores</h2>",
        figure.get(IMAGES[0], ""),
        _waiting_note(stats),
        _score_table(stats, rows),
        "<p class='muted'>Totals include the written answers, 0 until a grader scores them "
        "(make formgrade, then make feedback). The same parts, autograded tests and written "
        "answers apart:</p>",
        _apart_table(stats),
        "<h2>Tests and checks</h2><p class='muted'>passed: the share of graded notebooks with "
        "the test's full marks (per check: that passed the check); failures: the judge's "
        "messages, with how many students got each.</p>",
        figure.get(IMAGES[1], ""),
        *(_tests_section(nb) for nb in stats.values()),
        "<h2>Flags</h2>",
        _flag_table(stats),
        "<h2>For review</h2><p class='muted'>What the advisory scan noted in students' code "
        "(code that reaches the kernel or the grading machinery): for the instructor to look "
        "at, never shown to students; no points were changed.</p>",
        _review_table(rows),
        "<h2>Grading time</h2><p class='muted'>seconds per notebook and student: the kernel "
        "run in quick mode (the judge of all the student's notebooks comes after).</p>",
        figure.get(IMAGES[2], ""),
        _seconds_table(stats),
    ]
    return report.html_page("Class report", "".join(parts), csp=REPORT_CSP)


def _waiting_note(stats: dict[str, NotebookStats]) -> str:
    waiting = sum(nb.waiting for nb in stats.values())
    if not waiting:
        return ""
    return (
        f"<p class='box first'><b>Provisional:</b> {waiting} graded notebook(s) have written "
        "answers waiting for a grader; they count 0 in the totals and full marks below, and "
        "the Canvas file is canvas-PROVISIONAL.csv until every answer is graded.</p>"
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
