"""Nothing a student wrote runs in a browser: the real pipeline, checked in headless Chromium.

One student of the tiny course (tests/fixtures/course) hands in a notebook full of payloads:
a written answer with ``<script>``, ``<img onerror>``, ``javascript:`` links and a mermaid
block, an edited markdown cell, and a cell of their own that displays HTML with scripts, an
object's ``_repr_html_``, JavaScript, SVG with ``onload``, an iframe, Markdown with HTML,
image metadata that breaks out of its attribute, isolated HTML, a CSS ``url()``. (They use
``display(bundle, raw=True)``, which makes the same outputs as ``IPython.display.HTML`` and
friends: importing those is flagged by the tamper scan.) Each payload, if it ran, would ask a
"beacon" HTTP server on 127.0.0.1 for ``/hit?p=<name>``. Images are payloads too (issue 37):
Markdown images and ``<img>`` in the student's own outputs (those of a cell grading skips) from
the beacon, by name and as ``2130706433`` and ``0x7f000001`` (loopback spelt otherwise): a page
that opens must fetch none of them. The own outputs also print lines like the grader's notes
(``[autograder] This cell was run when grading ... Autograder: 1 / 1 points``): no page may show
one as the grader's.

``make grade`` grades it (sandbox, sanitising, feedback). Then Chromium opens, through the
DevTools protocol (clicking every ``javascript:`` link it finds): the student's feedback pages
(file://) and the formgrader's pages for the submission, served by ``jupyter lab`` in the
course directory, logged in, as ``make formgrade`` serves them (with its Content-Security-
Policy). The beacon must get nothing.

The positive control: the same notebook run without the autograder (nbclient, here) replaces
the graded copy, nbgrader's own ``generate_feedback`` makes its feedback page and nbgrader's own
formgrader (no policy, no escaping) shows it at the same URL; then every payload that nbgrader's
templates let run must reach the beacon, or the harness is blind and the test fails.

Chromium is Debian's ``chromium`` (``make setup`` installs it as root on Debian/Ubuntu, see
``make browser-tools``; ``CHROMIUM=/path`` picks another): without it the test fails.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import nbformat
import pytest
from browser import Browser

from autograder.course import nbgrader_dir, notebooks, spec
from helpers import autograder, course_sources, make_course

pytestmark = pytest.mark.slow

STUDENT = "x1-hostile"
ANSWER_TEXT = "Because counting a then b"  # the start of the written answer, as shown
# Payloads nbgrader's templates run when nothing is sanitised (the control must see them all).
LIVE = {
    "md-script", "md-img", "md-link", "md-link-entity", "md-mermaid", "md-other",
    "html-script", "repr-html", "javascript", "svg-inline", "iframe", "markdown-output",
    "png-width", "isolated", "html-link", "css-url",
    "md-img-remote", "md-img-decimal", "own-img", "own-img-decimal", "own-img-hex",
}  # fmt: skip
# Also in the notebook, inert even unsanitised: SVG shown as an <img>, escaped text.
INERT_ANYWAY = {"svg", "stream", "error"}


# --- the beacon ------------------------------------------------------------------------------


class Beacon:
    """An HTTP server on 127.0.0.1 that records the ``p`` of every request it gets."""

    def __init__(self):
        self.hits: list[str] = []
        self.lock = threading.Lock()
        beacon = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                query = parse_qs(urlparse(self.path).query)
                with beacon.lock:
                    beacon.hits.append(query.get("p", [self.path])[0])
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def js(self, name: str) -> str:
        """JavaScript that hits the beacon: no spaces (it must survive an unquoted attribute),
        and no value (a ``javascript:`` link with a value replaces the page)."""
        return f"void(document.createElement('img').src='{self.url(name)}')"

    def url(self, name: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/hit?p={name}"

    def take(self) -> set[str]:
        with self.lock:
            hits, self.hits = set(self.hits), []
        return hits

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- Chromium over the DevTools protocol -----------------------------------------------------


# --- the hostile submission ------------------------------------------------------------------


def hostile(nb: nbformat.NotebookNode, beacon: Beacon) -> nbformat.NotebookNode:
    """The solved 1_sums with every payload in it (still full marks)."""
    js = beacon.js
    for cell in nb.cells:
        if spec.grade_id(cell) == "why_commutative":  # the written answer
            cell.source += (
                f"\n\n<script>{js('md-script')}</script>\n\n"
                f'<img src=x onerror="{js("md-img")}">\n\n'
                f"[see the proof](javascript:{js('md-link')}) or "
                f"[this one](jav&#x61;script:{js('md-link-entity')})\n\n"
                f'```mermaid\ngraph TD\n<img src=x onerror="{js("md-mermaid")}">\n```\n\n'
                f"![a pixel]({beacon.url('md-img-remote')}) and "
                f"![my plot]({beacon.url('md-img-decimal', '2130706433')})\n"
            )
        elif cell.cell_type == "markdown" and cell.source.startswith("## Summary"):
            cell.source += f'\n\n<details open ontoggle="{js("md-other")}">more</details>'
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{js("svg")}"><rect/></svg>'
    shim = "window.$=window.$||function(){};"  # the feedback page has no jQuery: JS needs $
    shown = f"<b>shown</b><script>{js('repr-html')}</script>"
    displays = [  # (MIME bundle, output metadata), each shown with display(..., raw=True)
        ({"text/html": f"<script>{shim}{js('html-script')}</script>", "text/plain": "H"}, {}),
        ({"application/javascript": js("javascript"), "text/plain": "<Javascript>"}, {}),
        ({"image/svg+xml": svg, "text/plain": "<SVG>"}, {}),
        ({"text/html": f"<svg onload={js('svg-inline')}></svg>"}, {}),
        ({"text/html": f'<iframe srcdoc="<script>{js("iframe")}</script>"></iframe>'}, {}),
        ({"text/markdown": f'<img src=x onerror="{js("markdown-output")}">'}, {}),
        ({"image/png": "bm90IGEgcG5n"}, {"image/png": {"width": f"1 onerror={js('png-width')}"}}),
        ({"text/html": f"<script>{js('isolated')}</script>"}, {"text/html": {"isolated": True}}),
        ({"text/html": f'<a href="javascript:{js("html-link")}">a link</a>'}, {}),
        ({"text/html": f'<p style="background:url({beacon.url("css-url")})">styled</p>'}, {}),
    ]
    lines = [
        "class Shown:",
        "    def _repr_html_(self):",
        f"        return {shown!r}",
        "",
        "",
        "display(Shown())",
        *(f"display({data!r}, raw=True, metadata={meta!r})" for data, meta in displays),
        f"print({'<script>' + js('stream') + '</script>'!r})",
        f"raise ValueError({'<img src=x onerror=' + js('error') + '>'!r})",
    ]
    code = "\n".join(lines)
    at = next(i for i, c in enumerate(nb.cells) if c.source.startswith("print("))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(code))
    return nb


def executed(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` run as it is, outputs and all (the positive control: nothing sanitised)."""
    from nbclient import NotebookClient

    nb = nbformat.from_dict(nb)
    NotebookClient(nb, kernel_name="python3", timeout=60, allow_errors=True).execute()
    return nb


SCROLL_TO_OWN_OUTPUT = """
([...document.querySelectorAll('pre, div, span')].reverse()
  .find(e => e.textContent.includes("the student's own")) || document.body)
  .scrollIntoView({block: "center"})
"""
OWN_TEXT = "2 + 3 = 5 and 2 * 3 = 6   <- printed in the student's own run\n"
FORGED = (
    "[autograder] This cell was run when grading (the tests need it).\nAutograder: 1 / 1 points\n"
)
# A forged note shown as the grader's (the real verdicts of test cells say "Autograder: ...").
UNMARKED = re.compile(r"^\W*\[autograder\] This cell was run", re.M)


def own_outputs(beacon: Beacon) -> list:
    """What the student's own run printed in the cell grading skips: text, lines like the
    grader's, and images from the beacon (by name, and loopback as one number or in hex)."""
    imgs = "".join(
        f'<img src="{beacon.url(name, host)}" alt="{name}">'
        for name, host in (("own-img", "127.0.0.1"), ("own-img-decimal", "2130706433"),
                           ("own-img-hex", "0x7f000001"))
    )  # fmt: skip
    return [
        nbformat.v4.new_output("stream", name="stdout", text=OWN_TEXT),
        nbformat.v4.new_output("stream", name="stdout", text=FORGED),
        nbformat.v4.new_output("display_data", data={"text/html": imgs, "text/plain": "imgs"}),
    ]


# --- the formgrader --------------------------------------------------------------------------


class Formgrader:
    """``jupyter lab`` in the course directory, as ``make formgrade`` starts it, with a token
    (``plain``: nbgrader's own, its pages unescaped: the control)."""

    headers: dict[str, str] = {}  # of the last page got

    def __init__(self, gdir: Path, tmp: Path, plain: bool = False):
        # Port 0: the server takes a free port itself and writes it in its runtime folder,
        # which is this test's own, so the test talks to its own server and no other (a port
        # chosen here and passed on could be taken by another test's process meanwhile).
        self.port, self.token = 0, "test-token-" + os.urandom(8).hex()
        runtime = tmp / "jupyter-runtime"
        cmd = nbgrader_dir.formgrade_command(
            nbgrader_dir.GradingDir(gdir, "a3"),
            "--no-browser", "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
        )  # fmt: skip
        if plain:
            cmd[1:3] = ["-m", "jupyterlab"]
        env = {
            **nbgrader_dir.child_env(),  # as make formgrade: the autograder importable
            "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
            "JUPYTER_RUNTIME_DIR": str(runtime),
        }
        self.log = open(tmp / "jupyter.log", "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(cmd, cwd=gdir, env=env, stdout=self.log, stderr=self.log)
        info = runtime / f"jpserver-{self.proc.pid}.json"  # written once the server listens
        deadline = time.time() + 120
        while not self.port or self.get("/api/status")[0] != 200:
            if not self.port and info.exists():
                with contextlib.suppress(ValueError):  # half written: read it again
                    self.port = int(json.loads(info.read_text())["port"])
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                pytest.fail(f"jupyter lab did not start: {(tmp / 'jupyter.log').read_text()}")
            time.sleep(0.5)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def get(self, path: str) -> tuple[int, str]:
        """GET ``path``: its status and body (its headers in ``self.headers``)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            headers={"Authorization": f"token {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                self.headers = dict(resp.headers)
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, ""
        except OSError:
            return 0, ""

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def submission_id(gdir: Path, notebook: str) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{gdir / 'gradebook.db'}") as gradebook:
        return gradebook.find_submission_notebook(notebook, "a3", STUDENT).id


# --- the test --------------------------------------------------------------------------------


@pytest.fixture
def beacon():
    server = Beacon()
    yield server
    server.close()


def test_no_student_script_runs_in_feedback_or_formgrader(tmp_path, beacon):
    browser = Browser(tmp_path)  # first: no Chromium, no grading
    try:
        _check(tmp_path, beacon, browser)
    finally:
        browser.close()


def _check(tmp_path: Path, beacon: Beacon, browser: Browser) -> None:
    root = make_course(tmp_path / "course")
    src, grading = course_sources(root)
    gdir = grading.root
    submission = hostile(src.solved("1_sums"), beacon)
    for cell in submission.cells:  # the student's own run printed this (grading skips the cell)
        if cell.source.startswith('print("2 + 3 ='):
            cell.outputs = own_outputs(beacon)
    folder = gdir / "submitted" / STUDENT / "a3"
    folder.mkdir(parents=True)
    (folder / "1_sums.ipynb").write_text(nbformat.writes(submission))
    (folder / "2_words.ipynb").write_text(nbformat.writes(src.solved("2_words")))
    autograder(root, "grade", "--jobs", "1")

    graded = gdir / "autograded" / STUDENT / "a3" / "1_sums.ipynb"
    cell = next(c for c in notebooks.read(graded).cells if "class Shown" in c.source)
    kinds = {o.output_type for o in cell.outputs}
    kinds |= {mime for o in cell.outputs for mime in o.get("data", {})}
    assert {"text/html", "text/markdown", "stream", "error"} <= kinds, kinds  # it ran
    assert not kinds & {"application/javascript", "image/svg+xml"}, kinds  # sanitised

    feedback = gdir / "feedback" / STUDENT / "a3"
    pages = {p.name: p.as_uri() for p in sorted(feedback.glob("*.html"))}
    assert set(pages) == {"1_sums.html", "2_words.html", "index.html"}
    server = Formgrader(gdir, tmp_path)
    try:
        sid = submission_id(gdir, "1_sums")
        status, body = server.get(f"/formgrader/submissions/{sid}/")
        assert status == 200 and ANSWER_TEXT in body, status
        assert "img-src data:" in server.headers.get("Content-Security-Policy", ""), server.headers
        pages["formgrader submission"] = server.url(f"/formgrader/submissions/{sid}/")
        for path in ("gradebook/a3/1_sums", f"manage_students/{STUDENT}/a3"):
            pages[f"formgrader {path}"] = server.url(f"/formgrader/{path}")
        # a crafted link: nbgrader echoes the path into its page (escaped by formgrade_server)
        crafted = urllib.parse.quote(f'<img src=x onerror="{beacon.js("crafted-link")}">', safe="")
        pages["formgrader crafted link"] = server.url(f"/formgrader/manage_students/{crafted}")

        seen = {}
        for name, url in pages.items():
            seen[name] = browser.visit(url)
            browser.blank()  # after it, so that a late hit still counts for this page
            seen[name]["hits"] = beacon.take()
        for name in ("1_sums.html", "formgrader submission"):
            assert ANSWER_TEXT in seen[name]["text"], f"{name} did not show the submission"
            assert "<script>void(" in seen[name]["text"], f"{name}: the answer's HTML, as text"
            assert OWN_TEXT.strip() in seen[name]["text"], f"{name}: the student's own output"
            assert not UNMARKED.search(seen[name]["text"]), f"{name}: a student line as a note"
            assert "[printed by the student] [autograder] This cell" in seen[name]["text"]
            assert "[printed by the student] Autograder: 1 / 1 points" in seen[name]["text"]
        assert (
            "The student's own output, from the notebook they handed in; the autograder did "
            "not run this cell" in seen["formgrader submission"]["text"]
        )
        assert "Your own results for this question" in seen["1_sums.html"]["text"]
        shots = os.environ.get("A3_SCREENSHOTS")  # docs/: the formgrader with the own output
        if shots:
            browser.call("Emulation.setDeviceMetricsOverride", width=1000, height=640,
                         deviceScaleFactor=1, mobile=False)  # fmt: skip
            browser.visit(pages["formgrader submission"])
            browser.eval(SCROLL_TO_OWN_OUTPUT)
            shot = browser.call("Page.captureScreenshot", format="png")["data"]
            Path(shots, "formgrader-own-outputs.png").write_bytes(base64.b64decode(shot))
        ran = {name: sorted(page["hits"]) for name, page in seen.items() if page["hits"]}
        assert not ran, f"student scripts ran: {ran}"
        clickable = {name: page["clicked"] for name, page in seen.items() if page["clicked"]}
        assert not clickable, f"javascript: links left: {clickable}"

    finally:
        server.close()
    # The control: the same notebook, unsanitised (its own outputs as handed in), through the
    # same pages: nbgrader's own feedback and nbgrader's own formgrader (no policy, no escaping).
    control = executed(submission)
    for cell in control.cells:
        if cell.source.startswith('print("2 + 3 ='):
            cell.outputs = own_outputs(beacon)
    notebooks.write(control, graded)
    nbgrader_dir.nbgrader(grading, "generate_feedback", "a3", "--student", STUDENT, "--force")
    plain = Formgrader(gdir, tmp_path, plain=True)
    try:
        urls = {"1_sums.html": pages["1_sums.html"],
                "formgrader submission": plain.url(f"/formgrader/submissions/{sid}/")}  # fmt: skip
        for name, url in urls.items():
            page = browser.visit(url)
            browser.blank()
            hits = beacon.take()
            assert ANSWER_TEXT in page["text"]
            missed = LIVE - hits
            assert not missed, f"control, {name}: {sorted(missed)} did not run ({sorted(hits)})"
            assert not hits & INERT_ANYWAY, hits
        # The control of the crafted link: nbgrader's own server runs it.
        browser.visit(plain.url(f"/formgrader/manage_students/{crafted}"))
        browser.blank()
        assert "crafted-link" in beacon.take(), "control: the crafted link did not run unescaped"
    finally:
        plain.close()
