"""Student content made inert before any page shows it (feedback HTML, the formgrader).

The formgrader's view of a submission (``make formgrade``, served by the instructor's
logged-in Jupyter server) renders the *autograded* notebook with nbconvert templates that
trust it, and the feedback pages (``feedback.py``) show its written answers: markdown goes through
``markdown2html`` with raw HTML passed on, ``text/html`` and ``application/javascript`` outputs
are written into the page as they are, some metadata lands in unquoted attributes. Everything
in that notebook is the student's: any markdown cell (they can edit them all), the outputs of
their code, the metadata. :class:`SanitiseOutputs`, the last step of nbgrader's autograde
(``sandbox.Sandbox.configure``), runs :func:`sanitise_notebook` on it, so what is saved in
``autograded/`` (and everything made from it) holds only what follows. (Notebooks graded
before this step existed are not: grade them again, ``--regrade``.)

Markdown cells, and ``text/markdown`` outputs
    Raw HTML is shown as text: every ``<`` outside code spans, fenced or indented code and math
    (``$...$``, ``$$...$$``, ``\\begin{env}``) becomes ``&lt;``, except an autolink to a safe
    URL (``<https://...>``). Markdown itself still renders: emphasis, lists, tables, code, math,
    links and images. A link or image target is kept when it is ``http(s)``, ``mailto`` (links),
    relative or a ``#fragment`` (links), a raster ``data:image/png|jpeg|gif;base64`` or an
    ``attachment:`` (images: nothing else, so that opening a page fetches nothing a student
    chose, from any host or the instructor's own), and holds no ``<>"'`` (nor their %-escapes,
    which nbgrader's own pages echo unescaped); any other (``javascript:``, ``vbscript:``,
    ``data:text/html``, entity-obfuscated ones) becomes ``#unsafe-link``, and so does an
    ``attachment:`` image whose attachment is missing (nbconvert would fail the whole page). An
    image from elsewhere (``![plot](https://...)``) becomes a plain link to it (its alt text
    alone when the image is itself a link's text, as a Colab badge is). A ```` ```mermaid ````
    fence (whose code nbconvert writes into the page unescaped) becomes a plain ``text`` fence.
    MathJax commands that link, style or load (``\\href``, ``\\url``, ``\\style``, ``\\class``,
    ``\\cssId``, ``\\require``...) are broken up (``\\ href``). The result is then rendered with
    nbconvert's own ``markdown2html`` renderer and checked against an allow-list of the tags and
    attributes that renderer makes for plain Markdown; a text that fails (something the scanner
    above read differently from the renderer) is shown whole as a plain code block instead. Cell
    attachments are kept only as valid base64 PNG, JPEG or GIF (an attachment with none left
    becomes a blank PNG, so its ``attachment:`` link still works). A text longer than
    :data:`MAX_MARKDOWN` characters is cut there (checking costs time). A line that starts like
    a note of the grader (``[autograder] ...``, :func:`mark_grader_lines`) is marked as the
    student's.

Outputs
    ``text/plain``, ``stream`` text and ``error`` tracebacks are kept as text (nbconvert escapes
    them: ``ansi2html``), each line that starts like a note of the grader marked as the
    student's (:func:`mark_grader_lines`). ``text/html`` longer than :data:`MAX_HTML_CHARS` or
    nested deeper than :data:`MAX_DEPTH` (:func:`nesting_depth`, a linear scan that runs before
    any parser: html5lib's cost grows faster than n^1.7 with the depth) is replaced by the fixed
    note :data:`TOO_BIG`; below that it is cleaned with bleach (:data:`HTML_TAGS`,
    :func:`_html_attribute_ok`): no ``<script>``, ``<style>``, ``<iframe>``, ``<object>``,
    ``<embed>``, ``<form>``, ``<input>``, ``<svg>``, ``<math>``, ``<base>``, ``<meta>``,
    ``<link>``; no ``on*``, ``id``, ``name``, ``class``, ``data-*`` (the formgrader page runs
    jQuery and Bootstrap, whose data attributes act); ``style`` only with harmless properties
    and never ``url()``; an ``<img>`` whose source is not an inline raster image becomes a plain
    link to it (:class:`_ImagesAsLinks`). ``image/png``, ``image/jpeg`` and ``image/gif`` are
    kept when they are valid base64 of such an image. ``text/latex`` is kept unless it holds a
    MathJax command above. Everything else is dropped: ``application/javascript``,
    ``image/svg+xml`` (it may hold script), Jupyter widgets, PDF, any unknown type (the tests
    read no output of the notebook: they ask the kernel). When an output keeps nothing, a
    ``text/plain`` note says what was removed. Output metadata keeps only numeric
    ``width``/``height``, ``unconfined`` and ``alt`` of images (nbconvert writes width and
    height into *unquoted* attributes; ``isolated`` HTML would become an iframe). The grader's
    own notes (the frame of a student's own outputs, ``ownrun.py``) are made by
    :func:`grader_output` in the grading process and kept as made: no output a student's code
    prints can pass for one (:func:`_grader_made`).

Metadata
    The notebook's metadata keeps only ``kernelspec`` and ``language_info`` with plain string
    values (for highlighting; ``widgets`` would load widget scripts). A cell's keeps its
    ``nbgrader`` keys with the types nbgrader gives them (the grade id comes from the release,
    see ``intake.py``; scores and comments are the gradebook's, added at feedback time),
    ``tags`` made of word characters, the boolean ``jupyter`` flags, and a raw cell's format;
    nothing else (``transient.remove_source`` would hide a cell from the grader). Cell ids
    that are not nbformat ids are replaced; execution counts are integers or ``None``. Raw
    cells are cleaned like ``text/html``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import os
import re
import secrets
import uuid

import bleach
from bleach import html5lib_shim
from bleach.css_sanitizer import CSSSanitizer
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

# --- URLs ------------------------------------------------------------------------------------

RASTER = {  # image types kept, with the bytes every such file starts with
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
}
# A blank 1x1 PNG: stands in for an attachment that held no raster image.
BLANK_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAAB"
    "JRU5ErkJggg=="
)
UNSAFE_LINK = "#unsafe-link"
MAX_HTML_CHARS = 200_000  # characters of one HTML text cleaned (bleach: ~2 s per 100,000)
MAX_DEPTH = 100  # elements nested in one HTML text (html5lib: 1,000 cost 0.3 s, 32,000 624 s)
TOO_BIG = "[not shown: too large or too deeply nested]"
MAX_MARKDOWN = 50_000  # characters of one markdown text kept (the rest is cut)
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_DATA_IMAGE = re.compile(r"data:(image/(?:png|jpeg|gif));base64,([A-Za-z0-9+/]*={0,2})", re.I)
_URL_BREAKOUT = re.compile(r"""[<>"'`]|%(?:3c|3e|22|27|60)""", re.I)


def _raster(value: object, mime: str) -> str | None:
    """``value`` as compact base64 when it is base64 of a ``mime`` image, else None."""
    text = "".join(_text(value).split())
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
        return bool(match) and _raster(match.group(2), match.group(1).lower()) is not None
    if plain.startswith("#"):
        return True  # a place in the same page
    if _URL_BREAKOUT.search(plain):
        return False  # nbgrader's pages echo URL paths unescaped: no markup in a URL
    scheme = _SCHEME.match(plain.lower())
    if scheme is None:
        return True  # relative: a link needs a click
    return scheme.group(1) in ("http", "https", "mailto")


# --- TeX (MathJax typesets the page's text) -------------------------------------------------

_RISKY_TEX = re.compile(
    r"\\(href|url|style|class|cssId|require|data|unicode|html|toggle|mmlToken|bbox|attr)"
    r"(?![A-Za-z])"
)


def inert_tex(text: str) -> str:
    """``text`` with the MathJax commands that link, style or load broken up (``\\ href``)."""
    return _RISKY_TEX.sub(r"\\ \1", text)


# --- HTML ------------------------------------------------------------------------------------

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
    text = _text(text)
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


# What nbconvert's markdown renderer makes of plain Markdown (mistune, pygments, anchors).
_MD_TAGS = frozenset(
    "a blockquote br code dd del div dl dt em h1 h2 h3 h4 h5 h6 hr img input li ol p pre span "
    "strong table tbody td th thead tr ul".split()
)
_CLASS = re.compile(r"[\w\- ]*")


def _markdown_attribute_ok(tag: str, name: str, value: str) -> bool:
    """Whether nbconvert's Markdown renderer could have made this attribute, and it is safe."""
    if name == "class":
        return bool(_CLASS.fullmatch(value)) and "mermaid" not in value.lower()
    if tag == "a":
        return (name == "href" and safe_url(value)) or name == "title"
    if tag == "img":
        return (name == "src" and safe_url(value, image=True)) or name in ("alt", "title")
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return name == "id"
    if tag in ("td", "th"):
        return name == "style" and bool(re.fullmatch(r"text-align:\s*(left|right|center)", value))
    if tag == "input":
        return (name == "type" and value == "checkbox") or name in ("disabled", "checked")
    if tag == "ol":
        return name == "start" and value.isdigit()
    return False


_HTML_NS = html5lib_shim.namespaces["html"]


def _markup_problems(text: str, tags: frozenset[str], attribute_ok) -> list[str]:
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


# --- Markdown --------------------------------------------------------------------------------

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_QUOTE = re.compile(r"(?:[ \t]{0,3}>[ \t]?)*")
_LIST_ITEM = re.compile(r"[ \t]*([-*+]|\d{1,9}[.)])([ \t]|$)")
_INLINE = re.compile(
    r"(?P<code>(?<![\\`])`+)"
    r"|(?P<display>(?<!\\)\$\$)"
    r"|(?P<inline>(?<![$\\])\$(?!\$))"
    r"|(?P<latex>\\\\[\[(])"
    r"|(?P<env>\\begin\{(?P<name>[a-z]*\*?)\})"
    r"|(?P<lt><)"
)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\x00-\x20]*)>")
_LINK_TARGET = re.compile(r"(\]\(\s*)(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)")
_REFERENCE = re.compile(r"^( {0,3}\[[^\]\n]+\]:[ \t]*)(<[^<>\n]*>|\S+)", re.M)
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _target_ok(target: str, attachments: dict) -> bool:
    url = html.unescape(_MD_ESCAPE.sub(r"\1", target.strip("<>")))
    if url.startswith("attachment:"):
        return url[len("attachment:") :] in attachments
    return safe_url(url) or safe_url(url, image=True)


_IMAGE = re.compile(  # possessive: linear on a target that never closes
    r"(\[?)!\[([^\[\]\n]*+)\]\(\s*+(<[^<>\n]*+>|[^\s()<>]*+(?:\([^\s()]*+\)[^\s()<>]*+)*+)"
    r"(?:[ \t]++[^()\n]*+)?\)"
    r"|!(?=\[[^\[\]\n]*+\])"  # any other image: by reference, or a target read otherwise
)


def _images_as_links(text: str, attachments: dict) -> str:
    """Markdown images from anywhere but the cell's attachments or an inline raster image made
    plain links (an image inside a link's text, a badge: its alt text); any other image (by
    reference, ``![alt][ref]``, or a target the pattern does not read) made a link too."""

    def fix(match: re.Match) -> str:
        inside, alt, target = match.group(1), match.group(2), match.group(3)
        if target is None:
            return ""  # the "!" of an image: a link instead
        url = html.unescape(_MD_ESCAPE.sub(r"\1", target.strip("<>")))
        attached = url.startswith("attachment:") and url[len("attachment:") :] in attachments
        if attached or safe_url(url, image=True):
            return match.group(0)
        return f"{inside}{alt}" if inside else f"[{alt or 'image'}]({target})"

    return _IMAGE.sub(fix, text)


def _neutralise_links(text: str, attachments: dict) -> str:
    """Link and image targets (inline and reference definitions) that are not safe, replaced."""

    def fix(match: re.Match) -> str:
        ok = _target_ok(match.group(2), attachments)
        return match.group(0) if ok else match.group(1) + UNSAFE_LINK

    return _REFERENCE.sub(fix, _LINK_TARGET.sub(fix, text))


def _escape_prose(text: str, attachments: dict) -> str:
    """Markdown text outside code blocks: ``<`` escaped outside code spans and math."""
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        links = _images_as_links("".join(prose), attachments)
        out.append(inert_tex(_neutralise_links(links, attachments)))
        prose.clear()

    pos = 0
    while pos < len(text):
        match = _INLINE.search(text, pos)
        if match is None:
            prose.append(text[pos:])
            break
        prose.append(text[pos : match.start()])
        start, kind, end = match.start(), match.lastgroup, None
        if kind == "code":
            ticks = match.group("code")
            close = re.compile(rf"(?<!`){ticks}(?!`)").search(text, match.end())
            end = close.end() if close else None
        elif kind == "display":
            close = re.compile(r"(?<!\\)\$\$").search(text, match.end())
            end = close.end() if close else None
        elif kind == "inline":
            close = re.compile(r"(?<![$\\])\$").search(text, match.end() + 1)
            end = close.end() if close else None
        elif kind == "latex":
            closer = r"\\\\\]" if match.group("latex").endswith("[") else r"\\\\\)"
            close = re.compile(rf"(?<!\\){closer}").search(text, match.end())
            end = close.end() if close else None
        elif kind == "env":
            close = re.compile(re.escape(rf"\end{{{match.group('name')}}}")).search(text, start)
            end = close.end() if close else None
        if kind == "lt":
            link = _AUTOLINK.match(text, start)
            backslashed = start > 0 and text[start - 1] == "\\"
            if backslashed or (link and safe_url(link.group(1))):
                prose.append("<")
            else:
                prose.append("&lt;")
            pos = start + 1
            continue
        if end is None or (kind != "display" and re.search(r"\n[ \t]*\n", text[start:end])):
            prose.append(match.group(0))  # no closing delimiter: literal text
            pos = match.end()
            continue
        flush()
        span = text[start:end]
        out.append(span if kind == "code" else inert_tex(span))
        pos = end
    flush()
    return "".join(out)


def _unquoted(line: str) -> str:
    """``line`` without its block quote markers (``> > ``)."""
    return line[_QUOTE.match(line).end() :]


def _fence_line(line: str) -> str:
    """An opening fence; a mermaid one (nbconvert writes its code raw) made plain text."""
    match = _FENCE.match(_unquoted(line))
    info = match.group(2) if match else ""
    if info.strip().lower().startswith("mermaid"):
        return line.replace(info, " text", 1)
    return line


def _escape_markdown(source: str, attachments: dict) -> str:
    """``source`` with raw HTML shown as text (see the module docstring)."""
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    prose: list[str] = []
    in_list, blank_before = False, True

    def flush() -> None:
        out.append(_escape_prose("".join(prose), attachments))
        prose.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        bare = line.rstrip("\r\n")
        fence = _FENCE.fullmatch(_unquoted(bare))
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            flush()
            out.append(_fence_line(line))
            mark = fence.group(1)
            close = re.compile(rf"[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*")
            i += 1
            while i < len(lines) and not close.fullmatch(_unquoted(lines[i].rstrip("\r\n"))):
                out.append(lines[i])
                i += 1
            if i < len(lines):
                out.append(lines[i])
            i += 1
            blank_before = True
            continue
        indented = bare.startswith(("    ", "\t")) and bare.strip()
        if indented and blank_before and not in_list:
            flush()
            while i < len(lines) and (lines[i].startswith(("    ", "\t")) or not lines[i].strip()):
                out.append(lines[i])
                i += 1
            blank_before = True
            continue
        if _LIST_ITEM.match(bare):
            in_list = True
        elif bare.strip() and not bare[0].isspace() and blank_before:
            in_list = False
        blank_before = not bare.strip()
        prose.append(line)
        i += 1
    flush()
    return "".join(out)


def _render_markdown(source: str, attachments: dict) -> str:
    """``source`` as nbconvert's HTML exporter renders a markdown cell (its default options)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=attachments)
    return MarkdownWithMath(renderer=renderer).render(source)


def markdown_problems(source: str, attachments: dict | None = None) -> list[str]:
    """What is not inert in ``source`` once rendered (empty: safe to show)."""
    try:
        rendered = _render_markdown(source, attachments or {})
    except Exception as err:  # a missing attachment, a renderer crash: the page would fail
        return [f"render: {type(err).__name__}"]
    return _markup_problems(rendered, _MD_TAGS, _markdown_attribute_ok)


def _as_code(source: str) -> str:
    """``source`` shown whole as a plain-text code block."""
    runs = [len(m) for m in re.findall(r"`+", source)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{source.rstrip()}\n{fence}\n"


def sanitise_markdown(source: str, attachments: dict | None = None) -> str:
    """Student Markdown made inert; checked by rendering it as nbconvert will."""
    attachments = attachments or {}
    source = mark_grader_lines(_text(source))
    if len(source) > MAX_MARKDOWN:  # checking costs time: a bounded amount per text
        source = source[:MAX_MARKDOWN] + "\n\n[... cut by the autograder: too long]\n"
    escaped = _escape_markdown(source, attachments)
    if not markdown_problems(escaped, attachments):
        return escaped
    fallback = _as_code(source)
    if not markdown_problems(fallback):
        return fallback
    return "*[removed: markup that could not be shown safely]*"


# --- Notebook --------------------------------------------------------------------------------

_WORDS = re.compile(r"[\w.:\-]{1,100}")
_PLAIN = re.compile(r"[^\w .:+()/\-]")
_CELL_ID = re.compile(r"[a-zA-Z0-9\-_]{1,64}")
_MIME = re.compile(r"[\w.+\-]{1,60}/[\w.+\-]{1,100}")
NBGRADER_KEYS = {  # nbgrader cell metadata: key -> the types nbgrader gives it
    "grade": (bool,),
    "solution": (bool,),
    "locked": (bool,),
    "task": (bool,),
    "points": (int, float),
    "grade_id": (str,),
    "schema_version": (int,),
    "cell_type": (str,),
    "checksum": (str,),
}
RAW_FORMATS = {"text/html", "text/markdown", "text/latex", "text/restructuredtext", "text/plain"}


def _text(value: object) -> str:
    """A notebook string field (a string or a list of strings) as one string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def _plain(value: object) -> str:
    return _PLAIN.sub("", value)[:100] if isinstance(value, str) else ""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _lexer_ok(name: str) -> bool:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    if name.startswith("ipython"):
        return name in ("ipython", "ipython2", "ipython3")
    try:
        get_lexer_by_name(name)
    except ClassNotFound:
        return False
    return True


def _notebook_metadata(md: dict) -> NotebookNode:
    out = NotebookNode()
    spec = md.get("kernelspec")
    if isinstance(spec, dict):
        out.kernelspec = NotebookNode(
            {k: _plain(spec[k]) for k in ("name", "display_name", "language") if k in spec}
        )
    info = md.get("language_info")
    if isinstance(info, dict):
        keep = ("name", "version", "file_extension", "mimetype", "nbconvert_exporter")
        lang = NotebookNode({k: _plain(info[k]) for k in keep if isinstance(info.get(k), str)})
        lexer = _plain(info.get("pygments_lexer"))
        if lexer and _lexer_ok(lexer):
            lang.pygments_lexer = lexer
        if lang.get("name") and not _lexer_ok(lang.name):
            lang.name = "python"
        mode = info.get("codemirror_mode")
        if isinstance(mode, str):
            lang.codemirror_mode = _plain(mode)
        elif isinstance(mode, dict):
            lang.codemirror_mode = NotebookNode(name=_plain(mode.get("name")))
            if _count(mode.get("version")) is not None:
                lang.codemirror_mode.version = mode["version"]
        out.language_info = lang
    return out


def _cell_metadata(md: dict, cell_type: str) -> NotebookNode:
    out = NotebookNode()
    grader = md.get("nbgrader")
    if isinstance(grader, dict):
        out.nbgrader = NotebookNode(
            {
                k: v
                for k, v in grader.items()
                if k in NBGRADER_KEYS
                and isinstance(v, NBGRADER_KEYS[k])
                and (k not in ("points",) or not isinstance(v, bool))
            }
        )
    tags = md.get("tags")
    if isinstance(tags, list):
        out.tags = [t for t in tags if isinstance(t, str) and _WORDS.fullmatch(t)]
    jupyter = md.get("jupyter")
    if isinstance(jupyter, dict):
        flags = {k: v for k, v in jupyter.items() if k in ("source_hidden", "outputs_hidden")}
        out.jupyter = NotebookNode({k: v for k, v in flags.items() if isinstance(v, bool)})
    for key in ("editable", "deletable", "collapsed"):
        if isinstance(md.get(key), bool):
            out[key] = md[key]
    if md.get("scrolled") in (True, False, "auto"):
        out.scrolled = md["scrolled"]
    if cell_type == "raw":
        for key in ("raw_mimetype", "format"):
            if md.get(key) in RAW_FORMATS:
                out[key] = md[key]
    return out


def _attachments(value: object) -> NotebookNode:
    """Cell attachments: only valid raster images (a blank PNG where none is left)."""
    out = NotebookNode()
    if not isinstance(value, dict):
        return out
    for name, bundle in value.items():
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        images = {m: _raster(bundle[m], m) for m in RASTER if m in bundle}
        images = {m: data for m, data in images.items() if data}
        out[name] = NotebookNode(images or {"image/png": BLANK_PNG})
    return out


def _bundle(data: object) -> dict:
    """A display's MIME bundle with only inert representations (see the module docstring)."""
    kept: dict[str, str] = {}
    removed: list[str] = []
    for mime, value in data.items() if isinstance(data, dict) else []:
        if mime == "text/plain":
            kept[mime] = mark_grader_lines(_text(value))
        elif mime == "text/html":
            kept[mime] = sanitise_html(_text(value))
        elif mime == "text/markdown":
            kept[mime] = sanitise_markdown(_text(value))
        elif mime == "text/latex" and not _RISKY_TEX.search(_text(value)):
            kept[mime] = _text(value)
        elif mime in RASTER and _raster(value, mime):
            kept[mime] = _raster(value, mime)
        else:
            removed.append(mime if isinstance(mime, str) and _MIME.fullmatch(mime) else "unknown")
    if not kept:
        kept["text/plain"] = f"[removed: {', '.join(sorted(set(removed))[:5]) or 'empty'} output]"
    return kept


def _output_metadata(md: object, data: dict) -> NotebookNode:
    out = NotebookNode()
    if not isinstance(md, dict):
        return out
    for mime in RASTER:
        given = md.get(mime)
        if mime not in data or not isinstance(given, dict):
            continue
        keep = NotebookNode()
        for key in ("width", "height"):
            value = given.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                keep[key] = value
        if isinstance(given.get("unconfined"), bool):
            keep.unconfined = given["unconfined"]
        if isinstance(given.get("alt"), str):
            keep.alt = given["alt"]
        if keep:
            out[mime] = keep
    return out


def _output(out: dict) -> NotebookNode:
    kind = out.get("output_type")
    if _grader_made(out):
        return NotebookNode(out)
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        text = mark_grader_lines(_text(out.get("text")))
        return NotebookNode(output_type="stream", name=name, text=text)
    if kind == "error":
        lines = out.get("traceback") if isinstance(out.get("traceback"), list) else []
        return NotebookNode(
            output_type="error",
            ename=_text(out.get("ename")),
            evalue=mark_grader_lines(_text(out.get("evalue"))),
            traceback=[mark_grader_lines(line) for line in lines if isinstance(line, str)],
        )
    if kind in ("display_data", "execute_result"):
        data = _bundle(out.get("data"))
        node = NotebookNode(
            output_type=kind, data=data, metadata=_output_metadata(out.get("metadata"), data)
        )
        if kind == "execute_result":
            node.execution_count = _count(out.get("execution_count"))
        return node
    return NotebookNode(output_type="stream", name="stdout", text="[removed: unknown output]\n")


# --- the grader's own notes -------------------------------------------------------------------

_MADE: dict[int, tuple[str, set[str]]] = {}  # process id -> (its nonce, digests it made)


def _made() -> tuple[str, set[str]]:
    """This process's nonce and the digests of the notes it made (a forked worker starts its
    own: nothing made in another process, another student's, counts here)."""
    return _MADE.setdefault(os.getpid(), (secrets.token_hex(12), set()))


def _digest(markup: str) -> str:
    return hashlib.sha256(markup.encode("utf-8", "surrogatepass")).hexdigest()


def grader_output(markup: str, text: str, metadata: dict | None = None) -> NotebookNode:
    """A display output of the grader's: ``markup`` (HTML the grader wrote, every student
    string in it escaped or cleaned already), ``text`` its plain-text form. Kept as made by
    :func:`sanitise_notebook` in this process, and only here: no output a student's code
    makes can pass for one (its markup carries a nonce of this process and is known by its
    digest), so its label and style stay the grader's alone."""
    nonce, digests = _made()
    markup = f"<div data-a3-grader='{nonce}'>{markup}</div>"
    digests.add(_digest(markup))
    return NotebookNode(
        output_type="display_data",
        data={"text/html": markup, "text/plain": text},
        metadata=NotebookNode(metadata or {}),
    )


def _grader_made(out: dict) -> bool:
    """Whether ``out`` is an output :func:`grader_output` made in this process."""
    data = out.get("data")
    markup = data.get("text/html") if isinstance(data, dict) else None
    return (
        out.get("output_type") == "display_data"
        and isinstance(markup, str)
        and _digest(markup) in _made()[1]
    )


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (tracebacks, progress bars)."""
    return ANSI.sub("", text)


def raster(value: object, mime: str) -> str | None:
    """The base64 of a PNG, JPEG or GIF image, or None when ``value`` is not one."""
    return _raster(value, mime) if mime in RASTER else None


def clean_output(out: dict) -> NotebookNode:
    """One output made inert, as :func:`sanitise_notebook` makes every output."""
    return _output(out)


def _cell(cell: NotebookNode) -> None:
    if "id" in cell and not (isinstance(cell.id, str) and _CELL_ID.fullmatch(cell.id)):
        cell.id = uuid.uuid4().hex[:8]
    kind = cell.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        cell.cell_type = kind = "raw"
    cell.metadata = _cell_metadata(cell.get("metadata") or {}, kind)
    if kind == "code":
        cell.source = _text(cell.get("source"))
        cell.execution_count = _count(cell.get("execution_count"))
        cell.outputs = [_output(o) for o in cell.get("outputs", []) if isinstance(o, dict)]
        cell.pop("attachments", None)
        return
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    if "attachments" in cell:
        cell.attachments = _attachments(cell.attachments)
    if kind == "markdown":
        cell.source = sanitise_markdown(cell.get("source"), cell.get("attachments"))
    else:
        cell.source = sanitise_html(cell.get("source"))


def sanitise_notebook(nb: NotebookNode) -> NotebookNode:
    """``nb`` with every student-controlled markup made inert (in place); returns ``nb``."""
    nb.metadata = _notebook_metadata(nb.get("metadata") or {})
    for cell in nb.get("cells", []):
        _cell(cell)
    return nb


class SanitiseOutputs(Preprocessor):
    """nbgrader autograde step: :func:`sanitise_notebook` on the graded notebook."""

    # nbconvert runs a preprocessor only when enabled, and nbgrader registers its steps
    # without enabling them (its own preprocessors default to True, nbconvert's to False).
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        return sanitise_notebook(nb), resources
