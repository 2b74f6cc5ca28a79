"""The class report (``autograder/reports/classreport.py``) and the Canvas export (``report.py``).

Unit tests on crafted rows: pass rates per test and per check, the most common failure
messages with their counts (escaped), flags counted, extra credit apart, seconds; the Canvas
gradebook-import layout with and without a roster (ours, or Canvas's own export).

End to end: ``make grade`` on a small class of the tiny course writes ``out/report.html``, its
PNGs and ``canvas.csv``; headless Chromium (as ``tests/scenarios/test_browser.py`` drives it) opens
the report: it loads, every image renders (a non-zero natural width), and nothing is logged as an
error on the console.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import nbformat
import pytest
from browser import Browser

from autograder.course import spec
from autograder.reports import classreport, feedback, report
from autograder.reports.rows import (
    FLAG_CODES,
    FLAGS,
    REVIEW,
    Row,
    count_extra_credit,
    extra_points,
    for_student,
)
from helpers import autograder, course_sources, make_course


def verdict(gid: str, points: float, checks: list[tuple[str, float, bool, str]]) -> dict:
    found = [{"description": d, "points": p, "passed": ok, "message": m} for d, p, ok, m in checks]
    return {
        "grade_id": gid,
        "points": points,
        "checks": found,
        "error": None,
        "score": sum(c["points"] for c in found if c["passed"]),
    }


def crafted_rows() -> list[Row]:
    rows = []
    bad = "shape (3, 5), expected (5, 3) <script>x</script>"
    outcomes = {"ann": (True, True), "bob": (True, False), "cid": (False, False)}
    for student, (first, second) in outcomes.items():
        row = Row(student, "1_gru", autograded_max=1.0, manual_max=1.0, seconds=12.5)
        row.verdicts = {
            "test_shape": verdict("test_shape", 0.4, [("shape", 0.4, first, "" if first else bad)]),
            "test_value": verdict(
                "test_value", 0.6, [("value", 0.6, second, "" if second else "wrong values")]
            ),
        }
        row.autograded = sum(v["score"] for v in row.verdicts.values())
        row.flags = ["needs-manual"]
        rows.append(row)
        extra = Row(student, "5_extra", extra=True, autograded_max=2.0)
        extra.flags = ["missing"] if student != "ann" else []
        if student == "ann":
            extra.verdicts = {"test_x": verdict("test_x", 2.0, [("x", 2.0, True, "")])}
            extra.autograded, extra.seconds = 2.0, 3.0
        rows.append(extra)
    return rows


def test_pass_rates_messages_and_flags():
    stats = classreport.gather(crafted_rows())
    gru = stats["1_gru"]
    assert gru.tests["test_shape"].runs == 3 and gru.tests["test_shape"].full == 2
    assert gru.tests["test_value"].full == 1
    value = gru.tests["test_value"].checks["value"]
    assert (value.runs, value.passed, value.messages["wrong values"]) == (3, 1, 2)
    assert gru.flags["needs-manual"] == 3 and stats["5_extra"].flags["missing"] == 2
    assert stats["5_extra"].extra and stats["5_extra"].totals == [2.0]
    assert gru.seconds == [12.5] * 3
    page = classreport.page(stats, crafted_rows(), [], "a test class")
    assert "2 &times; wrong values" in page
    assert "<script>x" not in page and "&lt;script&gt;x" in page
    assert "extra credit" in page and "<script" not in page.lower()


def test_review_is_counted_and_listed_for_the_instructor():
    rows = crafted_rows()
    rows[2].flags.append(REVIEW)  # bob's 1_gru
    rows[2].notes += ["renamed: a note of the intake's", "review: cell 3 line 2: uses ctypes"]
    stats = classreport.gather(rows)
    assert stats["1_gru"].flags["review"] == 1
    page = classreport.page(stats, rows, [], "a test class")
    assert "<h2>For review</h2>" in page
    assert "<td>bob</td><td>1_gru</td><td>cell 3 line 2: uses ctypes</td>" in page
    assert "a note of the intake" not in page.split("<h2>For review</h2>")[1]
    assert rows[2].as_csv()["flags"] == "needs-manual;review"
    assert "review: cell 3 line 2: uses ctypes" in rows[2].as_csv()["notes"]
    summary = report.summary_table(rows)
    assert "bob" in summary and "1:WS 5:M" in summary  # the flags as letters, per notebook
    assert "M missing, W needs-manual, S review" in summary  # and their legend
    seen = for_student(rows[2])
    assert seen.flags == ["needs-manual"] and seen.notes == ["renamed: a note of the intake's"]
    nothing = classreport.page(classreport.gather(crafted_rows()), crafted_rows(), [], "x")
    assert "nothing noted" in nothing


def test_assignment_totals_keep_extra_credit_apart():
    rows = crafted_rows()
    for row in rows:  # every written answer graded: no student pending
        row.flags = [f for f in row.flags if f != "needs-manual"]
    totals = classreport.assignment_totals(rows)
    assert (totals.most, totals.extra_most, totals.pending) == (2.0, 2.0, 0)
    assert totals.regular == [1.0, 0.4, 0.0] and totals.extra_earned == [2.0, 0.0, 0.0]
    assert totals.extra_counted == totals.extra_earned  # no cap applied: all of it counts


def test_pending_written_answers_are_not_zeros_in_the_class_report(tmp_path):
    """A notebook whose written answers wait for a grader is pending: left out of the score
    distributions, means, full marks and histograms (not counted as 0) until graded."""
    rows = crafted_rows()  # every 1_gru written answer waits; ann's is graded here
    rows[0].flags, rows[0].manual = [], 1.0  # ann: 1 (tests) + 1 (written) = 2 of 2
    stats = classreport.gather(rows)
    assert stats["1_gru"].totals == [2.0] and stats["1_gru"].waiting == 2
    assert stats["1_gru"].auto == [1.0, 0.4, 0.0]  # the tests' points are final: all kept
    totals = classreport.assignment_totals(rows)
    assert (totals.regular, totals.pending) == ([2.0], 2)
    page = classreport.page(stats, rows, [], "a test class")
    scores = page.split("<h2>Scores</h2>")[1].split("The same parts")[0]
    # 1_gru: 1 graded, 2 pending, max 2, mean 2, median 2, lowest 2, 100% full marks
    assert ("<td>1_gru</td><td class='num'>1</td><td class='num'>2</td><td class='num'>2</td>"
            "<td class='num'>2</td><td class='num'>2</td><td class='num'>2</td>"
            "<td class='num'>100%</td>") in scores  # fmt: skip
    assert "are pending below" in page
    text = report.histogram(rows)
    assert text.splitlines()[-2].endswith(" 1")  # ann at 100%, nobody at 0
    assert text.splitlines()[1].endswith(" 0") and "pending: 2 student(s)" in text
    classreport.write_report(rows, tmp_path, "a test class")  # the figures leave them out
    assert (tmp_path / classreport.IMAGES[0]).stat().st_size > 0


def test_flags_are_letters_with_a_legend():
    """The summary's flags column (about 230 characters per student for a notebook each
    waiting for a grader) is one code per notebook, with a legend; grades.csv keeps the words."""
    codes = [FLAG_CODES[f] for f in FLAGS]
    assert len(set(codes)) == len(codes) and all(len(c) == 1 for c in codes)
    assert "L" in FLAG_CODES.values()  # kept for a late hand-in
    names = ["1_gru", "2_additive_attention", "3_transformer", "4_bert", "5a_decoding",
             "5b_copying_subwords", "6a_cove", "6b_segment_attention"]  # fmt: skip
    rows = [Row("ann", n, autograded_max=1, manual_max=1, flags=["needs-manual"])
            for n in names]  # fmt: skip
    rows[2].flags.append("timeout")
    line = report.summary_table(rows).splitlines()[2]
    flags = line.split("  ")[-1]
    assert flags == "1:W 2:W 3:TW 4:W 5a:W 5b:W 6a:W 6b:W", flags  # 35 characters
    assert "flags, per notebook (by its number): T timeout, W needs-manual" in (
        report.summary_table(rows)
    )
    assert rows[2].as_csv()["flags"] == "timeout;needs-manual"  # scripts read the words
    page = classreport.page(classreport.gather(rows), rows, [], "a test class")
    flags_table = page.split("<h2>Flags</h2>")[1]
    assert "<abbr title='needs-manual'>W</abbr>" in flags_table
    assert "<b>W</b> needs-manual: written answers wait for a grader" in flags_table


def test_extra_credit_counts_up_to_the_cap():
    """[grade] extra_credit_cap: a student's optional parts count in the notebooks' order
    until the cap; grades.csv, the summary, the class report, canvas.csv and the student's
    index page show the points earned and those counted."""
    rows = []
    for student, points in {"ann": (1.5, 1.0, 0.8), "bob": (0.5, 0.0, 1.0)}.items():
        rows.append(Row(student, "1_gru", autograded=1, autograded_max=1))
        for name, got in zip(("5a_decoding", "5b_copy", "6a_cove"), points, strict=True):
            rows.append(Row(student, name, extra=True, autograded=got, autograded_max=2))
    count_extra_credit(rows, 2)
    assert [r.total for r in rows if r.extra] == [1.5, 0.5, 0.0, 0.5, 0.0, 1.0]
    assert extra_points(rows[:4]) == (3.3, 2.0)
    csv_row = rows[2].as_csv()  # ann's 5b: earned 1, counted 0.5
    assert (csv_row["extra_earned"], csv_row["extra_counted"], csv_row["total"]) == (
        "1", "0.5", "0.5"
    )  # fmt: skip
    assert rows[0].as_csv()["extra_earned"] == rows[0].as_csv()["extra_counted"] == ""
    summary = report.summary_table(rows, 2).splitlines()
    assert summary[1].split()[-1] == "+2"  # the most extra credit that counts
    assert summary[2].split()[-4:] == ["1/1", "+2", "(3.3)", "ok"]  # ann: 2 count, 3.3 earned
    assert summary[3].split()[-2:] == ["+1.5", "ok"]  # bob: 1.5 earned, all counts
    assert "at most +2 above the total" in "\n".join(summary)
    table = report.canvas_rows(rows, "a3")
    assert table[2][-1] == "3" and table[3][-1] == "2.5"  # 1 + 2 (not 3.3), 1 + 1.5
    page = feedback.student_page("ann", rows[:4], {}, 2)
    assert "<b>2</b> extra credit" in page and "earned: 3.3" in page
    assert "at most 2 point(s) above the total: you earned 3.3, and 2 count" in page
    assert "counted: 0.5" in page  # 5b's row: earned 1, 0.5 of it counts
    totals = classreport.assignment_totals(rows, 2)
    assert totals.extra_earned == [3.3, 1.5] and totals.extra_counted == [2.0, 1.5]
    assert (totals.extra_most, totals.extra_counts) == (6.0, 2.0)
    html = classreport.page(classreport.gather(rows), rows, [], "a test class", 2)
    assert "extra credit counted</b> (every student, at most 2)" in html
    count_extra_credit(rows, 0)  # 0: extra credit is shown, and adds nothing
    assert all(r.total == 0 for r in rows if r.extra)
    assert report.canvas_rows(rows, "a3")[2][-1] == "1"


def test_canvas_layout_without_and_with_a_roster(tmp_path):
    rows = crafted_rows()
    table = report.canvas_rows(rows, "Assignment 3 (4711)")
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                        "Assignment 3 (4711)"]  # fmt: skip
    assert table[1] == ["Points Possible", "", "", "", "", "2"]  # regular points only
    assert table[2] == ["ann", "", "", "ann", "", "3"]  # 1 + 2 extra credit
    assert table[3][-1] == "0.4" and len(table) == 5

    ours = tmp_path / "roster.csv"
    ours.write_text(
        "student_id,name,canvas_id,sis_user_id,section\n"
        '"ann","Lee, Ann",101,S-1,Section A\nbob,"Ray, Bob",102,S-2,Section B\n'
    )
    roster = report.read_roster(ours)
    table = report.canvas_rows(rows, "a3", roster)
    assert table[2] == ["Lee, Ann", "101", "S-1", "ann", "Section A", "3"]
    assert table[4] == ["cid", "", "", "cid", "", "0"]  # not in the roster: by login

    export = tmp_path / "canvas-export.csv"  # Canvas's own gradebook export as the roster
    export.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (55)\n"
        "    Points Possible,,,,,10\n"
        '"Doe, Jane",201,D-1,jdoe,Section A,7\n"Cid, Ada",202,,,Section B,9\n'
        '"Student, Test",999,,,,\n'
    )
    roster = report.read_roster(export)
    assert roster["jdoe"].canvas_id == "201"  # by SIS Login ID
    assert roster["cidada"].canvas_id == "202"  # by the name Canvas puts in file names
    assert "studenttest" not in roster and report.canvas_file_name("Doe, Jane") == "doejane"


# --- end to end: make grade, then the report in Chromium ---------------------------------------


IMAGES_JS = "Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])"


class ConsoleBrowser(Browser):
    """``browser.Browser`` that keeps the DevTools events (console, log, exceptions)."""

    def __init__(self, tmp: Path):
        self.events: list[dict] = []
        super().__init__(tmp)
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if "method" in message:
                self.events.append(message)
            elif message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            kind, params = event["method"], event.get("params", {})
            if kind == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("text")))
            elif kind == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(str(params.get("args")))
            elif kind == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
        return found


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("report"))
    src, gdir = course_sources(root)
    wrong = src.solved("1_sums")
    for cell in wrong.cells:
        if spec.grade_id(cell) == "mul":
            cell.source = cell.source.replace("product = a * b", "product = a + b")
    hand_in = {
        "full": {"1_sums": src.solved("1_sums"), "2_words": src.solved("2_words")},
        "wrong-mul": {"1_sums": wrong, "2_words": src.released["2_words"]},
        "only-sums": {"1_sums": wrong},
    }
    for student, files in hand_in.items():
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name, nb in files.items():
            (folder / f"{name}.ipynb").write_text(nbformat.writes(nb))
    roster = root / "autograder" / "roster.csv"
    roster.write_text('student_id,name,canvas_id,sis_user_id,section\nfull,"Full, Ann",7,,A\n')
    out = autograder(root, "grade", "--jobs", "2").stdout
    return root, out


def test_make_grade_writes_the_report_and_canvas_csv(graded_class):
    root, out = graded_class
    folder = root / "autograder" / "out"
    assert "class report:" in out and "not in roster.csv: only-sums, wrong-mul" in out
    assert {p.name for p in folder.glob("report*")} == {"report.html", *classreport.IMAGES}
    text = (folder / "report.html").read_text()
    assert "test_mul" in text and "2 &times; mul(2, 3) should be 6" in text
    # written answers wait for a grader: no canvas.csv, a provisional file and a warning
    assert not (folder / "canvas.csv").exists()
    assert "canvas-PROVISIONAL.csv is PROVISIONAL" in out
    with open(folder / "canvas-PROVISIONAL.csv", newline="") as fh:
        table = list(csv.reader(fh))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "a3"]
    assert table[1][-1] == "5"
    assert ["Full, Ann", "7", "", "full", "A", "4"] in table  # 4 of 5: written answer ungraded


def test_canvas_csv_only_when_every_grade_is_complete(tmp_path):
    def row(student, flags):
        return Row(student, "nb", autograded=1, autograded_max=1, manual_max=1, flags=flags)

    stale = tmp_path / "canvas.csv"
    stale.write_text("old, complete-looking grades\n")
    first = report.write_canvas_file([row("a", ["needs-manual"]), row("b", [])], tmp_path, "a3")
    assert first.name == "canvas-PROVISIONAL.csv" and not stale.exists()
    assert report.waiting_students([row("a", ["needs-manual"]), row("b", [])]) == ["a"]
    done = report.write_canvas_file([row("a", []), row("b", [])], tmp_path, "a3")
    assert done.name == "canvas.csv" and done.exists()
    assert not (tmp_path / "canvas-PROVISIONAL.csv").exists()


def test_report_opens_in_chromium_images_render_no_console_error(graded_class, tmp_path):
    root, _ = graded_class
    path = root / "autograder" / "out" / "report.html"
    browser = ConsoleBrowser(tmp_path)
    try:
        browser.call("Page.navigate", url=path.as_uri())
        deadline = time.time() + 60
        while browser.eval("document.readyState") != "complete":
            assert time.time() < deadline, "the report did not load"
            time.sleep(0.2)
        time.sleep(0.5)
        images = browser.eval(IMAGES_JS)
        title = browser.eval("document.title")
        text = browser.eval("document.body.innerText")
        errors = browser.errors()
        # the control: a missing image and a console error are seen
        control = tmp_path / "control.html"
        control.write_text("<img src='missing.png'><script>console.error('control')</script>")
        browser.events.clear()
        browser.visit(control.as_uri(), settle=0.5)
        control_images, control_errors = browser.eval(IMAGES_JS), browser.errors()
    finally:
        browser.close()
    assert title == "Class report" and "Tests and checks" in text
    assert sorted(src for src, _ in images) == sorted(classreport.IMAGES)
    assert all(width > 0 for _, width in images), images
    assert not errors, errors
    assert control_images == [["missing.png", 0]] and control_errors, control_errors


def test_autograded_and_waiting_written_points_apart():
    rows = crafted_rows()  # ann has every test; all three 1_gru written answers wait
    stats = classreport.gather(rows)
    gru = stats["1_gru"]
    assert (gru.auto_max, gru.auto, gru.waiting, gru.written) == (1.0, [1.0, 0.4, 0.0], 3, [])
    page = classreport.page(stats, rows, [], "a test class")
    assert "Provisional:</b> 3 graded notebook(s)" in page
    apart = page.split("autograded tests and written answers apart")[1]
    # 1_gru: 3 graded, tests max 1, mean 0.47, 33% full marks, written max 1, none graded, 3 wait
    assert ("<td>1_gru</td><td class='num'>3</td><td class='num'>1</td><td class='num'>0.47"
            "</td><td class='num'>33%</td><td class='num'>1</td><td class='num'>-</td>"
            "<td class='num'>3</td>") in apart  # fmt: skip
    for row in rows:  # the grader scored every written answer: nothing provisional
        if row.notebook == "1_gru":
            row.flags, row.manual = [], 0.5
    graded = classreport.gather(rows)
    assert graded["1_gru"].waiting == 0 and graded["1_gru"].written == [0.5] * 3
    assert "Provisional" not in classreport.page(graded, rows, [], "a test class")
