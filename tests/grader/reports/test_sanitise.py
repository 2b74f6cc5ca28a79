"""Student markup made inert (autograder/reports/sanitise.py, safehtml.py): one
test per kind of payload.

Each test puts a payload into a notebook next to legitimate content, sanitises it as the
autograde step does, renders it with nbgrader's own templates (the feedback page and the
formgrader's view of a submission) and checks both: the payload only survives as text
(:func:`live`), and the legitimate content still renders (:func:`assert_legit`). Every payload
calls ``beacon(...)``; the browser test (test_browser.py) runs the same kinds in Chromium.
"""

from __future__ import annotations

import base64
import html
import re
import time
from pathlib import Path

import nbformat
import pytest
from bleach import html5lib_shim
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from autograder.reports import gradernotes, safehtml, sanitise
from autograder.reports.safehtml import (
    markdown_problems,
    safe_url,
    sanitise_html,
    sanitise_markdown,
)
from autograder.reports.sanitise import SanitiseOutputs, sanitise_notebook
from helpers import ROOT

# A 1x1 PNG (valid base64 of a real PNG: kept byte for byte).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
LEGIT_MARKDOWN = (
    "## Results\n\n"
    "| model | loss |\n|---|:-:|\n| GRU | $0.5$ |\n\n"
    "Inline math $x^2 < y$ and a [link](https://example.com/a?b=1) and **bold**.\n\n"
    "```python\nprint('<b>bold</b>')\n```\n"
)
JS = "beacon('{}')"
HTML_BOLD = "<b>html bold</b>"


def legit_cells() -> list:
    return [
        new_markdown_cell(LEGIT_MARKDOWN),
        new_code_cell(
            "plot()",
            execution_count=3,
            outputs=[
                new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
                new_output("execute_result", data={"text/html": HTML_BOLD}, execution_count=3),
            ],
        ),
    ]


def answer(source: str) -> nbformat.NotebookNode:
    """A written answer (graded markdown solution), as the formgrader shows it."""
    meta = {"grade": True, "solution": True, "locked": False, "grade_id": "why", "points": 1}
    return new_markdown_cell(source, metadata={"nbgrader": {**meta, "schema_version": 3}})


def display(data: dict, metadata: dict | None = None) -> nbformat.NotebookNode:
    output = new_output("display_data", data, metadata=metadata or {})
    return new_code_cell("show()", outputs=[output])


def notebook(*cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[*legit_cells(), *cells])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.language_info = {"name": "python", "pygments_lexer": "ipython3"}
    return nb


# --- rendering with nbgrader's templates -----------------------------------------------------


def render(nb: nbformat.NotebookNode, template: str) -> str:
    """``nb`` as nbgrader renders it: ``feedback`` (GenerateFeedback) or ``formgrade``."""
    import nbgrader
    from nbconvert.exporters import HTMLExporter

    nb = nbformat.from_dict(nb)
    for cell in nb.cells:  # what GetGrades adds at feedback time
        if "nbgrader" in cell.metadata:
            cell.metadata.nbgrader.update(score=0, comment=None)
    base = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    css = base / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    exporter = HTMLExporter(
        template_name=template,
        extra_template_basedirs=[str(base / "templates")],
        extra_template_paths=[str(css)],
    )
    resources = {
        "nbgrader": {"notebook": "1_sums", "score": 0, "max_score": 1, "late_penalty": 0},
        "base_url": "",
        "submission_id": "abc",
        "index": 0,
        "total": 1,
        "notebook_id": "1_sums",
        "assignment_id": "a3",
        "student": "s1",
        "notebook_path": "autograded/s1/a3/1_sums.ipynb",
    }
    return exporter.from_notebook_node(nb, resources=resources)[0]


def live(page: str) -> list[str]:
    """Where a ``beacon(`` payload would act in ``page``, parsed as a browser parses it: in a
    script, an event handler, a URL, a style, or inside an element that runs or embeds
    content. Text (and alt/title attributes) is inert."""
    parser = html5lib_shim.BleachHTMLParser(
        tags=None, strip=False, consume_entities=False, namespaceHTMLElements=False
    )
    found, stack = [], []
    embedding = {"script", "style", "iframe", "object", "embed", "svg", "math", "template"}
    for token in html5lib_shim.getTreeWalker("etree")(parser.parseFragment(page)):
        kind = token["type"]
        if kind in ("StartTag", "EmptyTag"):
            if kind == "StartTag":
                stack.append(token["name"])
            for (_, name), value in token["data"].items():
                if "beacon" in html.unescape(value) and name not in ("alt", "title"):
                    found.append(f"<{token['name']} {name}={value[:60]!r}>")
            if token["name"] in embedding - {"script", "style"}:
                found.append(f"<{token['name']}>")
        elif kind == "EndTag" and stack:
            stack.pop()
        elif kind == "Characters" and "beacon" in token["data"]:
            if set(stack) & embedding:
                found.append(f"in <{stack[-1]}>: {token['data'][:60]!r}")
        elif kind == "Comment" and "beacon" in token["data"]:
            found.append("comment")  # conditional comments, or a parser disagreeing
    return found


def urls(page: str) -> list[str]:
    """Every link, image, frame or form target in ``page``, entities decoded."""
    parser = html5lib_shim.BleachHTMLParser(
        tags=None, strip=False, consume_entities=False, namespaceHTMLElements=False
    )
    found = []
    for token in html5lib_shim.getTreeWalker("etree")(parser.parseFragment(page)):
        for (_, name), value in token.get("data", {}).items() if "name" in token else []:
            if name in ("href", "src", "action", "formaction", "data", "srcdoc", "content"):
                found.append(html.unescape(value))
    return found


def assert_legit(page: str) -> None:
    """The legitimate content of :func:`legit_cells` still renders."""
    assert f'src="data:image/png;base64,{PNG}"' in page  # the plot
    assert "<table>" in page and "<td>GRU</td>" in page  # the markdown table
    assert "$x^2 &lt; y$" in page and "$0.5$" in page  # math, for MathJax
    assert "&lt;b&gt;bold&lt;/b&gt;" in page  # code shown as code
    assert '<a href="https://example.com/a?b=1">link</a>' in page
    assert "<strong>bold</strong>" in page and "<b>html bold</b>" in page


def check(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Sanitise ``nb`` (through the autograde step), render it both ways, assert the payload
    is inert and the legitimate content survives; return the pages."""
    nb, _ = SanitiseOutputs()(nb, {})  # as an exporter calls it (only when enabled)
    nbformat.validate(nb)
    pages = {t: render(nb, t) for t in ("feedback", "formgrade")}
    for template, page in pages.items():
        assert not live(page), f"{template}: {live(page)}"
        assert_legit(page)
    return pages


def test_live_finds_payloads_in_unsanitised_pages():
    """The checker itself: the same payloads, not sanitised, are found in both templates."""
    nb = notebook(
        answer(f"<script>{JS.format('md')}</script>"),
        display({"application/javascript": JS.format("js"), "text/plain": "js"}),
        display({"image/png": "x"}, {"image/png": {"width": f"1 onerror={JS.format('w')}"}}),
    )
    for template in ("feedback", "formgrade"):
        found = live(render(nb, template))
        assert len(found) >= 3, found


# --- one test per payload --------------------------------------------------------------------


def test_script_tag_in_markdown():
    pages = check(notebook(answer(f"Because <script>{JS.format('script')}</script> it is.")))
    assert "&lt;script&gt;beacon" in pages["formgrade"]  # shown, as text


def test_img_onerror_in_markdown():
    nb = notebook(new_markdown_cell(f'<img src=x onerror="{JS.format("img")}"> and <b>b</b>'))
    pages = check(nb)
    assert "&lt;img src=x onerror=" in pages["feedback"]


def test_javascript_link_in_markdown():
    source = "\n\n".join(
        [
            f"[plain](javascript:{JS.format('a')})",
            f"[entities](jav&#x61;script&#58;{JS.format('b')})",
            f"[spaced]( JaVaScRiPt:{JS.format('c')} )",
            f"[ref][r]\n\n[r]: javascript:{JS.format('d')}",
            f"<javascript:{JS.format('e')}>",
            "[vb](vbscript:msgbox(1)) [data](data:text/html;base64,PHNjcmlwdD4=)",
            "[ok](https://example.org) <https://example.net>",
        ]
    )
    pages = check(notebook(answer(source)))
    for page in pages.values():
        schemes = {u.split(":")[0].strip().lower() for u in urls(page) if ":" in u}
        assert schemes <= {"https", "data"}, schemes  # data: the plot
        assert "#unsafe-link" in urls(page)
        assert '<a href="https://example.org">ok</a>' in page
        assert '<a href="https://example.net">https://example.net</a>' in page


def test_javascript_link_in_html_output():
    link = f'<a href="javascript:{JS.format("a")}">a</a><a href="jav&#x09;ascript:{JS}">b</a>'
    pages = check(notebook(display({"text/html": link + '<a href="https://ok.org">ok</a>'})))
    assert '<a href="https://ok.org">ok</a>' in pages["feedback"]


def test_repr_html_with_script():
    """An object's ``_repr_html_`` (display(obj) gives text/html next to text/plain)."""
    evil = f"<div><script>{JS.format('repr')}</script><img src=x onerror={JS}><b>kept</b></div>"
    pages = check(notebook(display({"text/html": evil, "text/plain": "<Evil>"})))
    assert "<b>kept</b>" in pages["formgrade"]


def test_javascript_output_is_dropped():
    """``IPython.display.Javascript``: application/javascript is dropped, text/plain kept."""
    nb = notebook(
        display({"application/javascript": JS.format("js"), "text/plain": "<Javascript object>"}),
        display({"application/javascript": JS.format("alone")}),
    )
    pages = check(nb)
    assert "&lt;Javascript object&gt;" in pages["feedback"]
    assert "[removed: application/javascript output]" in pages["feedback"]


def test_svg_with_onload():
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" onload="{JS.format("svg")}"><rect/></svg>'
    nb = notebook(
        display({"image/svg+xml": svg, "text/plain": "<SVG>"}),
        display({"text/html": svg + "<p>after</p>"}),
        new_markdown_cell(
            "![a](attachment:a.svg)",
            attachments={"a.svg": {"image/svg+xml": base64.b64encode(svg.encode()).decode()}},
        ),
    )
    pages = check(nb)
    assert "image/svg+xml" not in pages["feedback"] and "<p>after</p>" in pages["feedback"]
    assert f'src="data:image/png;base64,{sanitise.BLANK_PNG}"' in pages["feedback"]


def test_iframe_object_embed_form():
    payload = (
        f'<iframe srcdoc="<script>{JS.format("iframe")}</script>"></iframe>'
        f'<object data="javascript:{JS.format("o")}"></object><embed src="x.swf">'
        f'<form action="javascript:{JS.format("f")}"><button>go</button></form>'
        '<base href="https://evil.org/"><meta http-equiv="refresh" content="0;url=https://e">'
        '<link rel="stylesheet" href="https://evil.org/x.css"><p>text</p>'
    )
    pages = check(notebook(display({"text/html": payload})))
    for page in pages.values():
        assert not [u for u in urls(page) if "evil" in u or "javascript" in u or u == "x.swf"]
        assert "http-equiv" not in page and "<p>text</p>" in page


def test_style_with_url():
    payload = (
        '<div style="background: url(http://127.0.0.1/hit); color: red">a</div>'
        '<p style="background-image: u\\72l(http://x/)">b</p>'
        "<style>body { background: url(http://127.0.0.1/hit) }</style>"
        '<span style="color: blue; position: fixed; top: 0">c</span>'
    )
    out = sanitise_html(payload)
    assert "url" not in out and "72l" not in out and "position" not in out
    assert "<div>a</div>" in out and '<span style="color: blue;">c</span>' in out
    check(notebook(display({"text/html": payload})))


def test_html_in_markdown_output():
    """``IPython.display.Markdown`` (text/markdown) is made inert like a markdown cell."""
    payload = f'<img src=x onerror="{JS.format("md-out")}"> **kept** [x](javascript:{JS})'
    pages = check(notebook(display({"text/markdown": payload, "text/plain": "<Markdown>"})))
    assert "<strong>kept</strong>" in pages["feedback"]


def test_mermaid_fence():
    """nbconvert writes a mermaid block's code into the page as it is."""
    payload = f'```mermaid\ngraph TD\nA["<img src=x onerror={JS}>"] --> B\n```'
    pages = check(notebook(answer(payload)))
    assert 'class="mermaid"' not in pages["feedback"] and "graph TD" in pages["feedback"]


def test_mathjax_commands_that_link_style_or_load_are_broken_up():
    """MathJax typesets the page's text: a command that links, styles or loads is broken up
    (``\\ href``) wherever MathJax reads it (Markdown prose and math, HTML outputs); a LaTeX
    output that holds one is dropped; code shows it as written (MathJax skips code)."""
    text = (
        r"$\href{javascript:alert(1)}{x}$ and $$\style{background:url(https://e.org)}{y}$$ "
        r"\require{action} but `\href{https://example.org}{z}` in code"
    )
    nb = notebook(
        answer(text),
        display({"text/html": r"<p>$\cssId{a}{b}$</p>", "text/plain": "html"}),
        display({"text/latex": r"$\unicode{x}$", "text/plain": "latex"}),
    )
    for page in check(nb).values():
        for command in ("href{javascript", "style{", "require{", "cssId{", "unicode{"):
            assert "\\" + command not in page, command
        assert r"$\ href{javascript:alert(1)}{x}$" in page and r"\ require{action}" in page
        assert r"<code>\href{https://example.org}{z}</code>" in page


def test_error_and_stream_text_are_escaped():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": f"<script>{JS}</script>"},
        {"output_type": "stream", "name": "stdin", "text": f"<img src=x onerror={JS}>"},
        {
            "output_type": "error",
            "ename": f"<b>{JS}</b>",
            "evalue": f"<img src=x onerror={JS}>",
            "traceback": [f"\x1b[31m<img src=x onerror={JS}>\x1b[0m", ["not a str"]],
        },
    ]
    nb = notebook(new_code_cell("raise"))
    nb.cells[-1].outputs = nbformat.from_dict(outputs)  # not valid nbformat: made valid
    pages = check(nb)
    assert "&lt;script&gt;beacon" in pages["feedback"]
    assert "&lt;img src=x onerror=beacon" in pages["feedback"]


def test_metadata_injection():
    """Notebook, cell and output metadata, ids and counts a template reads."""
    nb = notebook(
        display(
            {"image/png": "bm90IGEgcG5n"},  # not a PNG: the image would fail to load
            {"image/png": {"width": f"1 onerror={JS}", "height": 5, "alt": f"<{JS}>"}},
        ),
        display({"text/html": "<b>x</b>"}, {"text/html": {"isolated": True}}),
        display({"image/png": PNG}, {"image/png": {"width": "9 onerror=x", "height": 7}}),
    )
    nb.metadata.title = f"</title><script>{JS}</script>"
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": JS}}
    nb.metadata.language_info.pygments_lexer = "no-such-lexer"
    nb.metadata.kernelspec.display_name = f'"><script>{JS}</script>'
    cell = nb.cells[0]
    cell.metadata.update(
        tags=[f'"><script>{JS}</script>', "ok-tag"],
        transient={"remove_source": True},
        magics_language="no-such",
        nbgrader={"grade_id": "why", "solution": "yes", "comment": f"<script>{JS}</script>"},
    )
    cell.id = f'"><script>{JS}</script>'
    nb.cells[1].execution_count = f"<img src=x onerror={JS}>"
    nb.cells[1].outputs[1].execution_count = "<b>1</b>"
    sanitise_notebook(nb)
    assert set(nb.metadata) == {"kernelspec", "language_info"}
    assert "pygments_lexer" not in nb.metadata.language_info
    assert not set('<>"') & set(nb.metadata.kernelspec.display_name)
    assert nb.cells[0].metadata == {"tags": ["ok-tag"], "nbgrader": {"grade_id": "why"}}
    assert nb.cells[1].execution_count is None and nb.cells[1].outputs[1].execution_count is None
    bad_png, isolated, png = (c.outputs[0] for c in nb.cells[2:5])
    assert "image/png" not in bad_png.data and "width" not in str(bad_png.metadata)
    assert isolated.metadata == {}
    assert png.metadata == {"image/png": {"height": 7}}
    pages = check(nb)
    assert 'src="data:image/png;base64,' + PNG + '"' in pages["feedback"]
    assert "height=7" in pages["feedback"].replace('"', "")


def test_widgets_and_unknown_outputs_are_dropped():
    nb = notebook(
        display(
            {
                "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                "text/plain": "IntSlider(value=1)",
            }
        ),
        display({"application/x-evil": JS, "application/pdf": "JVBERi0="}),
        new_code_cell("x"),
        new_raw_cell(f"<script>{JS}</script><b>raw</b>", metadata={"raw_mimetype": "text/html"}),
    )
    nb.cells[4].outputs = [nbformat.from_dict({"output_type": "weird", "data": JS})]
    sanitise_notebook(nb)
    assert nb.cells[2].outputs[0].data == {"text/plain": "IntSlider(value=1)"}
    note = nb.cells[3].outputs[0].data["text/plain"]
    assert note == "[removed: application/pdf, application/x-evil output]"
    assert nb.cells[4].outputs[0].text == "[removed: unknown output]\n"
    assert nb.cells[5].source == "<b>raw</b>"
    check(nb)


# --- legitimate content, edge cases ----------------------------------------------------------


BADGE = re.compile(r"\[!\[([^\]]*)\]\([^)]*\)\]")  # a remote image as a link's text


def test_course_markdown_is_unchanged():
    """Every markdown cell of the course's notebooks (and the tiny test course) renders as
    before: code spans with ``<SOS>``, math, links; a badge (a remote image) as its link."""
    paths = sorted((ROOT / "solutions" / "a3").glob("*.ipynb"))
    paths += sorted((ROOT / "tests" / "fixtures" / "course" / "solutions" / "a3").glob("*.ipynb"))
    count = 0
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                expected = BADGE.sub(r"[\1]", cell.source)
                assert sanitise_markdown(cell.source) == expected, (path.name, cell.source)
                count += 1
    assert count > 10


def test_legit_markdown_kept_exactly():
    source = (
        "1. first with `x <b> y` code\n2. second\n   - nested $a<b$\n\nA paragraph.\n\n"
        "    indented <code> block\n\n> ```\n> quoted <i> fence\n> ```\n\n"
        "~~~\nraw <div> in a tilde fence\n~~~\n\n"
        "Escaped \\<b> stays text, ``double `tick` <i>`` code, \\\\(x < 1\\\\) and $$\n"
        "\\frac{a}{b} < c\n$$\n\n\\begin{align} a &< b \\end{align}\n\n"
        "- [x] done task\n\n[img](https://example.com/i.png) ![png](data:image/png;base64,"
        + PNG
        + ")\n"
    )
    assert sanitise_markdown(source) == source
    assert not markdown_problems(source)


def test_raw_html_escaped_outside_code_only():
    out = sanitise_markdown("a <b>bold</b> `<i>` b")
    assert out == "a &lt;b>bold&lt;/b> `<i>` b"


def test_unrenderable_markdown_is_shown_as_text():
    """A missing attachment (nbconvert would fail the whole page) or markup the scanner reads
    differently from the renderer: the cell is shown whole as a code block."""
    missing = sanitise_markdown("![x](attachment:gone.png)")
    assert missing == "[x](#unsafe-link)"
    assert not markdown_problems(missing)
    tricky = "- a\n\n        ```\n  <img src=x onerror=alert(1)>\n"  # a fence only to the scanner
    out = sanitise_markdown(tricky)
    assert out.startswith("````text\n") and not markdown_problems(out)
    assert "<img" not in safehtml._render_markdown(out, {})


def test_long_markdown_is_fast():
    """A huge or pathological cell costs linear time, not the grader's whole time limit."""
    start = time.perf_counter()
    sanitise_markdown("".join("`" * n + "x" for n in range(1, 600)))
    sanitise_markdown("<a " * 200_000)
    sanitise_html("<script>" * 100_000)
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize(
    ("url", "image", "ok"),
    [
        ("https://example.com/x", False, True),
        ("mailto:a@b.c", False, True),
        ("#section", False, True),
        ("figure.png", False, True),
        ("figure.png", True, False),  # an image from the instructor's own server
        ("http://localhost:8888/logout", True, False),
        ("http://127.0.0.1:8888/formgrader?path=/tmp", True, False),
        ("http://localhost:8888/lab", False, True),
        ("https://example.com/pixel.png", True, False),  # a tracking pixel: any host
        ("http://2130706433:8888/lab", True, False),  # loopback, spelt as one number
        ("http://0x7f000001:8888/lab", True, False),
        ("#section", True, False),  # the page itself, fetched again
        (f"data:image/png;base64,{PNG}", True, True),
        (f"data:image/png;base64,{PNG}", False, False),
        ("data:image/svg+xml;base64,PHN2Zz4=", True, False),
        ("data:image/png;base64,PHN2Zz4=", True, False),  # not a PNG
        ("javascript:alert(1)", False, False),
        (" java\tscript:alert(1)", False, False),
        ("jav&#x61;script:alert(1)", False, False),
        ("vbscript:x", False, False),
        ("/formgrader/manage_students/%3Cscript%3E", False, False),
        ('x" onmouseover="alert(1)', False, False),
    ],
)
def test_safe_url(url, image, ok):
    assert safe_url(url, image=image) is ok


def test_step_runs_when_registered_as_nbgrader_registers_it():
    """nbgrader registers its autograde steps without enabling them: ours must run anyway."""
    from nbconvert.exporters import NotebookExporter

    exporter = NotebookExporter()
    exporter.register_preprocessor(SanitiseOutputs)
    nb = notebook(display({"application/javascript": JS.format("js"), "text/plain": "JS"}))
    out = nbformat.reads(exporter.from_notebook_node(nb)[0], as_version=4)
    assert out.cells[-1].outputs[0].data == {"text/plain": "JS"}


def test_forged_records_are_dropped_like_any_unknown_output():
    """The tests read nothing of the notebook's outputs (they ask the kernel); an output of the
    old probes' type is one more unknown output, dropped with a note."""
    record = {"key": "out", "value": {"dtype": "float32", "data": [1.5, "<script>x</script>"]}}
    nb = notebook(display({"application/vnd.a3.probe+json": record}))
    pages = check(nb)
    assert nb.cells[-1].outputs[0].data == {
        "text/plain": "[removed: application/vnd.a3.probe+json output]"
    }
    assert "<script>x" not in pages["feedback"] and "&lt;script&gt;x" not in pages["feedback"]


# --- remote images, grader-like lines, deep HTML (issue 37) ---------------------------------


def test_remote_images_become_plain_links():
    """Only inline raster images stay images: any other source (any host, the instructor's
    own machine in any spelling) is a link, so opening a page fetches nothing."""
    for src in ("https://tracker.example/p.png", "http://2130706433:8888/x", "//0x7f000001/x"):
        out = sanitise_markdown(f"see ![plot]({src}) and ![][ref]\n\n[ref]: {src}")
        assert f"[plot]({src})" in out and "![" not in out, out
        assert "<img" not in safehtml._render_markdown(out, {})
        cleaned = sanitise_html(f'<p><img src="{src}" alt="my plot"></p>')
        assert "<img" not in cleaned and "[image: my plot]" in cleaned, cleaned
    inline = f'<img src="data:image/png;base64,{PNG}">'
    assert "<img" in sanitise_html(inline)
    assert sanitise_markdown(f"![p](data:image/png;base64,{PNG})").startswith("![p]")


def test_lines_like_the_graders_are_marked_as_the_students():
    fake = "[autograder] This cell was run when grading\nAutograder: 1 / 1 points\nok\n"
    out = sanitise._output({"output_type": "stream", "name": "stdout", "text": fake})
    assert out.text.splitlines() == [
        safehtml.STUDENT_MARK + "[autograder] This cell was run when grading",
        safehtml.STUDENT_MARK + "Autograder: 1 / 1 points",
        "ok",
    ]
    html_out = sanitise_html("<pre>  [Autograder] all tests passed</pre>")
    assert safehtml.STUDENT_MARK + "[Autograder] all tests" in html_out
    assert sanitise_markdown("nbgrader: full marks").startswith(safehtml.STUDENT_MARK)
    assert sanitise_markdown("Grading was hard") == "Grading was hard"  # words, not notes


def test_grader_notes_are_kept_only_when_this_process_made_them():
    made = gradernotes.grader_output("<div style='border:3px solid'>label</div>", "label")
    assert sanitise._output(dict(made)) == made  # kept as made, style and all
    forged = {"output_type": "display_data", "data": dict(made.data), "metadata": {}}
    forged["data"]["text/html"] = made.data["text/html"].replace("label", "Label")
    assert "border" not in sanitise._output(forged).data["text/html"]


def test_deep_or_large_html_is_refused_before_any_parser_in_linear_time():
    """32,000 nested <div>s cost html5lib 624 s (issue 37); the bounds are checked by a linear
    scan first, and what fails them is a fixed note."""
    assert safehtml.nesting_depth("<div>" * 5 + "</div>" * 5) == 5
    assert safehtml.nesting_depth("<p>a<p>b<br><img src=x><li>c") == 0  # never nest alone
    assert safehtml.nesting_depth("<div></span>" * 50) == 50  # a stray end tag closes nothing
    assert safehtml.nesting_depth("<b>x" * 10_000) == safehtml.MAX_DEPTH + 1  # stops there
    flat = "<table>" + "<tr><td>1</td><td>2</td></tr>" * 2000 + "</table>"  # a DataFrame
    assert safehtml.within_bounds(flat) and "<td>2</td>" in sanitise_html(flat)
    note = f"<p>{safehtml.TOO_BIG}</p>"
    start = time.perf_counter()
    assert sanitise_html("<div>" * 32_000 + "x" + "</div>" * 32_000) == note
    assert sanitise_html("<b>" * 150 + "x") == note
    assert sanitise_html("<div>" * 4_000_000) == note  # 20 MB
    assert time.perf_counter() - start < 5  # linear: a fraction of a second here
