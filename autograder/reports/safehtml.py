"""Student HTML and text made inert: URLs, TeX, HTML, the bounds before any parser.

The pieces every cleaning of student content shares (``sanitise.py`` cleans a graded notebook
with them, ``safemarkdown.py`` its Markdown, ``feedback.py`` and ``ownrun.py`` what they show):

- :func:`safe_url`: a link target is kept when it is ``http(s)``, ``mailto``, relative or a
  ``#fragment`` and holds no ``<>"'`` (nor their %-escapes, which nbgrader's own pages echo
  unescaped); an image source only when it is an inline raster image (a base64 PNG, JPEG or
  GIF, :func:`raster`), so that opening a page fetches nothing a student chose, from any host
  or the instructor's own.
- :func:`inert_tex`: MathJax commands that link, style or load (``\\href``, ``\\url``,
  ``\\style``, ``\\class``, ``\\cssId``, ``\\require``...) broken up (``\\ href``).
- :func:`sanitise_html`: ``text/html`` longer than :data:`MAX_HTML_CHARS` or nested deeper
  than :data:`MAX_DEPTH` (:func:`nesting_depth`, a linear scan that runs before any parser:
  html5lib's cost grows faster than n^1.7 with the depth) is replaced by the fixed note
  :data:`TOO_BIG`; below that it is cleaned with bleach (:data:`HTML_TAGS`,
  :func:`_html_attribute_ok`): no ``<script>``, ``<style>``, ``<iframe>``, ``<object>``,
  ``<embed>``, ``<form>``, ``<input>``, ``<svg>``, ``<math>``, ``<base>``, ``<meta>``,
  ``<link>``; no ``on*``, ``id``, ``name``, ``class``, ``data-*`` (the formgrader page runs
  jQuery and Bootstrap, whose data attributes act); ``style`` only with harmless properties
  and never ``url()``; an ``<img>`` whose source is not an inline raster image becomes a plain
  link to it (:class:`_ImagesAsLinks`).
- :func:`markup_problems`: what in rendered HTML is outside an allow-list, parsed as a browser
  parses it (``safemarkdown.py`` checks its result with it).
- :func:`mark_grader_lines`: a line that starts like a note of the grader (``[autograder]
  ...``) marked as the student's (:data:`STUDENT_MARK`).
"""

from __future__ import annotations

import base64
import binascii
import html
import re

import bleach
from bleach import html5lib_shim
from bleach.css_sanitizer import CSSSanitizer

# --- URLs ------------------------------------------------------------------------------------

RASTER = {  # image types kept, with the bytes every such file starts with
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
}
MAX_HTML_CHARS = 200_000  # characters of one HTML text cleaned (bleach: ~2 s per 100,000)
MAX_DEPTH = 100  # elements nested in one HTML text (html5lib: 1,000 cost 0.3 s, 32,000 624 s)
TOO_BIG = "[not shown: too large or too deeply nested]"
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_DATA_IMAGE = re.compile(r"data:(image/(?:png|jpeg|gif));base64,([A-Za-z0-9+/]*={0,2})", re.I)
_URL_BREAKOUT = re.compile(r"""[<>"'`]|%(?:3c|3e|22|27|60)""", re.I)


def text_of(value: object) -> str:
    """A notebook string field (a string or a list of strings) as one string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def raster(value: object, mime: str) -> str | None:
    """``value`` as compact base64 when it is base64 of a ``mime`` image (PNG, JPEG or GIF),
    else None."""
    if mime not in RASTER:
        return None
    text = "".join(text_of(value).split())
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return text if raw.startswith(RASTER[mime]) else None


def safe_url(url: str, image: bool = False) -> bool:
    """Whether a link (``image``: an image source) may point at ``url``, as a browser reads it
    (entities decoded, whitespace and control characters dropped). An image source must be an
    inline raster image: any other is a request as the page opens, to a host the student chose
    (a tracking pixel) or to the instructor's own machine (``localhost`` has many spellings:
    ``2130706433``, ``0x7f000001``...), so none is allowed, whatever its spelling."""
    plain = re.sub(r"[\x00-\x20\x7f]+", "", html.unescape(url))
    if image:
        match = _DATA_IMAGE.fullmatch(plain)
        return bool(match) and raster(match.group(2), match.group(1).lower()) is not None
    if plain.startswith("#"):
        return True  # a place in the same page
    if _URL_BREAKOUT.search(plain):
        return False  # nbgrader's pages echo URL paths unescaped: no markup in a URL
    scheme = _SCHEME.match(plain.lower())
    if scheme is None:
        return True  # relative: a link needs a click
    return scheme.group(1) in ("http", "https", "mailto")


# --- TeX (MathJax typesets the page's text) -------------------------------------------------

RISKY_TEX = re.compile(
    r"\\(href|url|style|class|cssId|require|data|unicode|html|toggle|mmlToken|bbox|attr)"
    r"(?![A-Za-z])"
)


def inert_tex(text: str) -> str:
    """``text`` with the MathJax commands that link, style or load broken up (``\\ href``)."""
    return RISKY_TEX.sub(r"\\ \1", text)


HTML_TAGS = frozenset(
    "a abbr b bdi bdo blockquote br caption center cite code col colgroup dd del details dfn "
    "div dl dt em figcaption figure h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q rp "
    "rt ruby s samp small span strike strong sub summary sup table tbody td tfoot th thead "
    "time tr tt u ul var wbr".split()
)
_CSS = CSSSanitizer()  # bleach's allow-list of properties (no position, no url-valued ones)
_CSS_BAD = re.compile(r"url\s*\(|image|expression|\\|@|var\s*\(|/\*", re.I)
_NUMBER = re.compile(r"\s*\d{1,5}(\.\d+)?\s*(%|px)?\s*")
# Elements removed with their content before bleach (which would keep their text).
_DROPPED = re.compile(
    r"<(script|style|template|noscript|iframe|object|noembed|noframes|xmp|textarea|title)\b", re.I
)


def _html_attribute_ok(tag: str, name: str, value: str) -> bool:
    """bleach's attribute filter for student HTML (``value`` as written, entities and all)."""
    if name in ("title", "lang", "dir"):
        return True
    if name == "style":
        return not _CSS_BAD.search(html.unescape(value))
    if tag == "a":
        return name == "href" and safe_url(value)
    if tag == "img":
        if name == "src":  # any link-safe source: _ImagesAsLinks makes the remote ones links
            return safe_url(value, image=True) or safe_url(value)
        return name == "alt" or (name in ("width", "height") and bool(_NUMBER.fullmatch(value)))
    if tag in ("td", "th"):
        if name in ("colspan", "rowspan"):
            return value.strip().isdigit()
        return name in ("align", "valign")
    if tag in ("table", "col", "colgroup"):
        return name in ("border", "cellpadding", "cellspacing", "align", "span", "width")
    if tag == "ol":
        return name in ("start", "type", "reversed")
    if tag == "details":
        return name == "open"
    return False


# --- the student's words that look like the grader's -----------------------------------------

STUDENT_MARK = "[printed by the student] "
_GRADER_LIKE = re.compile(
    r"^(?=[ \t>*_#`~|-]*[\[(<{]?[ \t]*(?:auto|nb)[ \t_.-]*grad(?:er|ing)\b)",
    re.I | re.M,
)


def mark_grader_lines(text: str) -> str:
    """``text`` with every line that starts like a note of the grader (``[autograder] ...``,
    ``Autograder: 1 / 1 points``) marked as the student's (:data:`STUDENT_MARK`)."""
    return _GRADER_LIKE.sub(STUDENT_MARK, text)


class _ImagesAsLinks(html5lib_shim.Filter):
    """After bleach's sanitizer: an ``<img>`` whose source is not an inline raster image
    becomes a link to it, ``[image: alt]``; text that starts like a note of the grader is
    marked (:func:`mark_grader_lines`)."""

    def __iter__(self):
        for token in super().__iter__():
            kind = token["type"]
            if kind in ("StartTag", "EmptyTag") and token["name"] == "img":
                attrs = token.get("data") or {}
                src = attrs.get((None, "src"), "")
                if not safe_url(src, image=True):
                    alt = attrs.get((None, "alt"), "") or src or "an image"
                    if src:
                        yield {"type": "StartTag", "name": "a", "data": {(None, "href"): src}}
                    yield {"type": "Characters", "data": f"[image: {alt}]"}
                    if src:
                        yield {"type": "EndTag", "name": "a"}
                    continue
            elif kind == "Characters":
                token = {**token, "data": mark_grader_lines(token["data"])}
            yield token


_CLEANER = bleach.Cleaner(
    tags=HTML_TAGS,
    attributes=_html_attribute_ok,
    protocols={"http", "https", "mailto", "data"},
    strip=True,
    strip_comments=True,
    css_sanitizer=_CSS,
    filters=[_ImagesAsLinks],
)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^<>]*?(/?)>")
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# Closed by the next one of their kind or their parent: they never nest by themselves.
_IMPLIED = frozenset(
    "p li dt dd td th tr option optgroup rp rt thead tbody tfoot colgroup caption".split()
)


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deeply the elements of the HTML ``text`` nest at their deepest, scanned without a
    parser (linear; at most ``limit + 1``: the scan stops there). An element left open counts
    until its closing tag; an end tag of an element that is not open is ignored (as html5lib
    ignores it); an over-estimate for markup that closes elements implicitly."""
    stack: list[str] = []
    open_count: dict[str, int] = {}
    deepest = 0
    for match in _TAG.finditer(text):
        name = match.group(2).lower()
        if name in _VOID or name in _IMPLIED or match.group(3):
            continue
        if not match.group(1):
            stack.append(name)
            open_count[name] = open_count.get(name, 0) + 1
            deepest = max(deepest, len(stack))
            if deepest > limit:
                break
        elif open_count.get(name):
            while stack:
                top = stack.pop()
                open_count[top] -= 1
                if top == name:
                    break
    return deepest


def within_bounds(text: str) -> bool:
    """Whether the HTML ``text`` is small and flat enough to be parsed (see the module
    docstring): :data:`MAX_HTML_CHARS` and :data:`MAX_DEPTH`, checked in linear time."""
    return len(text) <= MAX_HTML_CHARS and nesting_depth(text) <= MAX_DEPTH


def sanitise_html(text: str) -> str:
    """Student HTML (an output, a raw cell) with only inert tags and attributes left; the
    fixed note :data:`TOO_BIG` when it is too large or too deeply nested to parse."""
    text = text_of(text)
    if not within_bounds(text):
        return f"<p>{html.escape(TOO_BIG)}</p>"
    return inert_tex(_CLEANER.clean(_drop_elements(text)))


def _drop_elements(text: str) -> str:
    """``text`` without the :data:`_DROPPED` elements that are closed (cosmetic: bleach, after
    it, is what makes the rest inert). Linear: each search starts where the last ended."""
    out, pos = [], 0
    while (start := _DROPPED.search(text, pos)) is not None:
        close = re.compile(rf"</{start.group(1)}\s*>", re.I).search(text, start.end())
        if close is None:
            break
        out.append(text[pos : start.start()])
        pos = close.end()
    out.append(text[pos:])
    return "".join(out)


_HTML_NS = html5lib_shim.namespaces["html"]


def markup_problems(text: str, tags: frozenset[str], attribute_ok) -> list[str]:
    """What in the HTML ``text`` is not allowed, parsed as a browser parses it (html5lib)."""
    parser = html5lib_shim.BleachHTMLParser(
        tags=None, strip=False, consume_entities=False, namespaceHTMLElements=False
    )
    problems = []
    for token in html5lib_shim.getTreeWalker("etree")(parser.parseFragment(text)):
        kind = token["type"]
        if kind in ("Comment", "Doctype"):
            problems.append(kind)
        elif kind in ("StartTag", "EmptyTag"):
            tag = token["name"]
            if tag not in tags or token.get("namespace") not in (None, _HTML_NS):
                problems.append(f"<{tag}>")
                continue
            for (_, name), value in token["data"].items():
                if not attribute_ok(tag, name, html.unescape(value)):
                    problems.append(f"<{tag} {name}>")
    return problems


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (tracebacks, progress bars)."""
    return ANSI.sub("", text)
