"""Student HTML, Markdown and text made inert: URLs, TeX, HTML, Markdown, the bounds before
any parser.

What every cleaning of student content uses (``sanitise.py`` cleans a graded notebook with
it, ``feedback.py`` and ``ownrun.py`` what they show):

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
  parses it (:func:`sanitise_markdown` checks its result with it).
- :func:`mark_grader_lines`: a line that starts like a note of the grader (``[autograder]
  ...``) marked as the student's (:data:`STUDENT_MARK`).
- :func:`sanitise_markdown`: student Markdown (markdown cells and ``text/markdown`` outputs;
  ``sanitise.py`` runs it on every such text of a graded notebook). Raw HTML is shown as text:
  every ``<`` outside code spans, fenced or indented code and math (``$...$``, ``$$...$$``,
  ``\\begin{env}``) becomes ``&lt;``, except an autolink to a safe URL. Markdown itself still
  renders (emphasis, lists, tables, code, math, links, images). Link and image targets follow
  :func:`safe_url` (an image may also be an ``attachment:`` the cell has); any other becomes
  :data:`UNSAFE_LINK`, and an image from elsewhere a plain link to it (its alt text alone when
  the image is itself a link's text, as a Colab badge is). A ```` ```mermaid ```` fence (whose
  code nbconvert writes into the page unescaped) becomes a plain ``text`` fence; TeX goes
  through :func:`inert_tex`; grader-like lines through :func:`mark_grader_lines`. The result
  is rendered with nbconvert's own ``markdown2html`` and checked with :func:`markup_problems`
  against the tags and attributes that renderer makes for plain Markdown; a text that fails
  (something the scanner read differently from the renderer) is shown whole as a plain code
  block instead. A text longer than :data:`MAX_MARKDOWN` characters is cut there. Cell
  attachments are kept only as valid base64 PNG, JPEG or GIF (``sanitise.py``: an attachment
  with none left becomes a blank PNG, so its ``attachment:`` link still works).
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


# --- Markdown ----------------------------------------------------------------------------------

UNSAFE_LINK = "#unsafe-link"
MAX_MARKDOWN = 50_000  # characters of one markdown text kept (the rest is cut)

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
    return markup_problems(rendered, _MD_TAGS, _markdown_attribute_ok)


def _as_code(source: str) -> str:
    """``source`` shown whole as a plain-text code block."""
    runs = [len(m) for m in re.findall(r"`+", source)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{source.rstrip()}\n{fence}\n"


def sanitise_markdown(source: str, attachments: dict | None = None) -> str:
    """Student Markdown made inert; checked by rendering it as nbconvert will."""
    attachments = attachments or {}
    source = mark_grader_lines(text_of(source))
    if len(source) > MAX_MARKDOWN:  # checking costs time: a bounded amount per text
        source = source[:MAX_MARKDOWN] + "\n\n[... cut by the autograder: too long]\n"
    escaped = _escape_markdown(source, attachments)
    if not markdown_problems(escaped, attachments):
        return escaped
    fallback = _as_code(source)
    if not markdown_problems(fallback):
        return fallback
    return "*[removed: markup that could not be shown safely]*"
