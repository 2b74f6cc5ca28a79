"""The HTML pages the grader writes, from the Jinja2 templates in ``templates/``.

Rendered with autoescape on: every value a page shows is escaped unless the code hands it over
as ``markupsafe.Markup``, which only HTML the grader made inert itself is (a student's Markdown
rendered and checked by ``feedback.render_markdown``). Pages are self-contained: inline CSS
(``templates/page.css``), no script, no external asset, and a Content-Security-Policy.

    page.html.j2         the frame of every page below (title, CSP, CSS); each extends it
    student.html.j2      a student's index page (``feedback.student_page``)
    feedback.html.j2     a notebook's feedback page (``feedback.notebook_page``)
    classreport.html.j2  the class report (``classreport.page``)
    similarity.html.j2   the similarity report, a page of its own (``similarity.render``)
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent / "templates"
# Pages made from student content load nothing and run nothing, whatever slipped through.
STRICT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# The formgrader (make formgrade, formgrade_server.py), whose pages show student content: the
# same policy for what a student can put in a page (nothing remote, no frame or plugin, images
# only inline, so a source a student chose is never fetched: no tracking pixel, no request to
# the TA's own machine, whatever its spelling), and nbgrader's own scripts, styles and API
# calls, from the server itself. MathJax, which nbgrader loads from a CDN, is left out.
FORMGRADER_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'self' 'unsafe-inline'; font-src 'self' data:; img-src data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'"
)


def num(x: float, digits: int | None = None) -> str:
    """A number of points as people write it (2, 0.5, 1.25); ``digits``: rounded first."""
    return f"{x if digits is None else round(x, digits):g}"


@functools.cache
def environment() -> jinja2.Environment:
    """The one Jinja2 environment of the grader's pages (``num`` as a filter)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = num
    return env


def render(template: str, **values) -> str:
    """``templates/<template>`` rendered with ``values``."""
    return environment().get_template(template).render(**values)
