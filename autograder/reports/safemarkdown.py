"""Student Markdown made inert: markdown cells and ``text/markdown`` outputs.

:func:`sanitise_markdown` (``sanitise.py`` runs it on every such text of a graded notebook).

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
attachments are kept only as valid base64 PNG, JPEG or GIF (``sanitise.py``: an attachment
with none left becomes a blank PNG, so its ``attachment:`` link still works). A text longer than
:data:`MAX_MARKDOWN` characters is cut there (checking costs time). A line that starts like
a note of the grader (``[autograder] ...``, ``safehtml.mark_grader_lines``) is marked as the
student's.
"""

from __future__ import annotations

import html
import re

from autograder.reports.safehtml import (
    inert_tex,
    mark_grader_lines,
    markup_problems,
    safe_url,
    text_of,
)

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
