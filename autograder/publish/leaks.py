"""The release's leak checks: nothing instructor-only in a student notebook (``releasechecks.py``).

What a check compares is a line *normalised*: its comment cut (a ``#`` outside quotes), its
whitespace collapsed, so ``x = f(y)  # the trick`` and ``x  =  f(y)`` are the same line. A
released cell is read line by line, Markdown too (a line, the line without its list or quote
marker, and each inline code span).

What it refuses in a released notebook:

- a marker line (or a misspelt marker) that nbgrader would not have acted on;
- a *distinctive* line of any notebook's solution regions, in any released notebook: one
  that is not trivial (:func:`trivial`: blank, a comment, an import, a bare name such as
  ``return x``, ``train_batches,`` or ``self.bert = bert``, a call without arguments such as
  ``plt.show()``, a signature, brackets, under ``MIN_LINE_CHARS``), not an idiom of the
  course's given code
  (:func:`idioms`: it stands in the given code of ``IDIOM_NOTEBOOKS`` notebooks or more),
  and not allowed by ``[release] allowed_copies`` (the line itself, or the first line of
  its solution region: the region is shown elsewhere on purpose);
- a line of a notebook's hidden tests or instructor-only cells (at least
  ``MIN_SECRET_CHARS`` long, and not in its public text) in its own release;
- a sentence of any notebook's reference answers or instructor-only Markdown;
- most of a solution region in a row (``COPY_RUN`` lines and ``COPY_SHARE`` of it).

Assumption: a solution line that stands in the given code of a single notebook (its own or
another) is a leak unless ``allowed_copies`` names it, since nothing in the notebooks tells a
line pasted into a given cell from one the given code holds on purpose; an idiom that the given
code of several notebooks uses (``with torch.no_grad():``) gives nothing away. So a line
pasted into the given code of two notebooks or more passes as an idiom.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from nbformat import NotebookNode

from autograder.course import notebooks, spec
from autograder.course.spec import is_instructor_only

# Lines shorter than this (after stripping) are too generic to call a hidden-test leak.
MIN_SECRET_CHARS = 16
MIN_LINE_CHARS = 8  # a normalised solution line shorter than this ("i += 1") is trivial
MIN_SENTENCE_CHARS = 40  # a sentence of a reference answer this long is never a coincidence
# A copied answer: at least COPY_RUN lines of one solution region, and COPY_SHARE of its
# lines, in a row in a released cell.
COPY_RUN = 3
COPY_SHARE = 0.6
IDIOM_NOTEBOOKS = 2  # a line in the given code of this many notebooks is the course's idiom
# A marker, or a misspelt one ("BEGIN SOLUTON"), that nbgrader would not have acted on.
_MARKER = re.compile(r"\b(BEGIN|END)\s+(SOL|HID)", re.IGNORECASE)
_IMPORT = re.compile(r"(import\s|from\s+\S+\s+import\s)")
_SIGNATURE = re.compile(r"(async\s+def|def|class)\s")
# A bare (dotted) name or literal, maybe after a keyword or assigned, maybe with a trailing
# , : or ; ("return x", "train_batches,", "else:", "pass", "if freeze:", "self.bert = bert",
# "param.requires_grad = False"), once its "()" are dropped.
_BARE = re.compile(
    r"((return|yield|raise|del|assert|await|if|elif|while|not)\s+|[\w.]+\s*\W?=\s*)?"
    r"[\w.\"']*\s*[,:;]?"
)
_MD_MARKER = re.compile(r"^\s*(>\s*)*([-*+]|\d+[.)])?\s+")
_CODE_SPAN = re.compile(r"`([^`]+)`")


def normalised(line: str) -> str:
    """``line`` without its comment (a ``#`` outside quotes), whitespace collapsed."""
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif ch == "#":
            line = line[:i]
            break
        elif ch in "'\"":
            quote = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        i += 1
    return " ".join(line.split())


def trivial(line: str) -> bool:
    """Whether a normalised line gives nothing away: blank or short, an import, a bare name
    or literal (maybe returned, or followed by ``,`` or ``:``), a call without arguments
    (``plt.show()``, ``super().__init__()``), a signature, or brackets alone."""
    return (
        len(line) < MIN_LINE_CHARS
        or not re.search(r"[A-Za-z0-9]", line)
        or bool(_IMPORT.match(line) or _SIGNATURE.match(line))
        or bool(_BARE.fullmatch(line.replace("()", "")))
    )


def cell_lines(cell: NotebookNode) -> Iterator[str]:
    """The normalised lines a released cell shows; for Markdown also each line without its
    list or quote marker, and each inline code span."""
    for line in cell.source.split("\n"):
        found = {normalised(line)}
        if cell.cell_type == "markdown":
            found.add(normalised(_MD_MARKER.sub("", line)))
            found |= {normalised(span) for span in _CODE_SPAN.findall(line)}
        yield from sorted(found - {""})


def specific_lines(lines: list[str]) -> list[str]:
    """The lines of ``lines`` long enough to be specific to a solution (:data:`MIN_SECRET_CHARS`),
    stripped."""
    return [line.strip() for line in lines if len(line.strip()) >= MIN_SECRET_CHARS]


def secret_lines(source: NotebookNode) -> set[str]:
    """Lines of ``source``'s solutions, hidden tests and instructor-only cells (judges,
    reference answers) that give something away: long enough to be specific, and not also in
    the notebook's public (released) text; normalised."""
    public: set[str] = set()
    secret: set[str] = set()
    for cell in source.cells:
        if is_instructor_only(cell):
            secret |= set(specific_lines(cell.source.split("\n")))
            continue
        parts = notebooks.regions(cell)
        public |= {normalised(line) for line in parts.public}
        secret |= set(specific_lines(sum(parts.solutions, []) + parts.hidden))
    found = {normalised(line) for line in secret} - public
    return {line for line in found if len(line) >= MIN_SECRET_CHARS and not trivial(line)}


@dataclass(frozen=True)
class SolutionLine:
    """Where a distinctive solution line comes from: its notebook and solution cell."""

    notebook: str
    cell: str  # the solution cell's grade id


def idioms(sources: dict[str, NotebookNode]) -> set[str]:
    """Normalised lines that stand in the given code (code cells' public lines, instructor-only
    cells left out) of at least ``IDIOM_NOTEBOOKS`` of ``sources``."""
    seen: dict[str, set[str]] = defaultdict(set)
    for name, nb in sources.items():
        for cell in nb.cells:
            if cell.cell_type == "code" and not is_instructor_only(cell):
                for line in notebooks.regions(cell).public:
                    seen[normalised(line)].add(name)
    return {line for line, names in seen.items() if len(names) >= IDIOM_NOTEBOOKS}


def distinctive_lines(
    sources: dict[str, NotebookNode], allowed_copies: tuple[str, ...] = ()
) -> dict[str, SolutionLine]:
    """Normalised line -> where it comes from, for every distinctive line of the solution
    regions of ``sources`` (see the module's docstring)."""
    allowed = {normalised(line) for line in allowed_copies}
    regions = [
        (SolutionLine(name, spec.grade_id(cell) or f"cell {i}"), lines)
        for name, nb in sources.items()
        for i, cell in enumerate(nb.cells)
        if not is_instructor_only(cell)
        for lines in _normalised_regions(cell)
    ]
    for _, lines in regions:  # a region shown on purpose: each of its lines is shown
        if lines and lines[0] in allowed:
            allowed |= set(lines)
    allowed |= idioms(sources)
    found: dict[str, SolutionLine] = {}
    for where, lines in regions:
        for line in lines:
            if not (trivial(line) or line in allowed):
                found.setdefault(line, where)
    return found


def _normalised_regions(cell: NotebookNode) -> list[list[str]]:
    """Each solution region of ``cell``: its normalised lines, blank ones left out."""
    regions = ([normalised(line) for line in r] for r in notebooks.regions(cell).solutions)
    return [[line for line in r if line] for r in regions]


def secret_sentences(source: NotebookNode) -> set[str]:
    """Sentences of ``source``'s instructor-only and answer Markdown (whitespace normalised,
    at least ``MIN_SENTENCE_CHARS`` long): a reference answer reflowed into a student cell."""
    found: set[str] = set()
    for cell in source.cells:
        if cell.cell_type != "markdown":
            continue
        if is_instructor_only(cell):
            text = cell.source
        elif spec.is_solution(cell):
            text = "\n".join(sum(notebooks.regions(cell).solutions, []))
        else:
            continue
        found |= {s for s in sentences_of(text) if len(s) >= MIN_SENTENCE_CHARS}
    return found


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text``, whitespace collapsed (split after ``.``, ``!`` or ``?``)."""
    flat = " ".join(text.split())
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", flat) if s.strip()]


def solution_blocks(source: NotebookNode) -> list[list[str]]:
    """The specific lines of each solution region of ``source`` with at least ``COPY_RUN``."""
    blocks = [specific_lines(r) for cell in source.cells for r in notebooks.regions(cell).solutions]
    return [b for b in blocks if len(b) >= COPY_RUN]


def longest_run(lines: list[str], block: list[str]) -> int:
    """The longest run of consecutive ``lines`` that all belong to ``block``."""
    wanted = set(block)
    run = longest = 0
    for line in lines:
        run = run + 1 if line in wanted else 0
        longest = max(longest, run)
    return longest


def _allow_hint(what: str) -> str:
    return f"if that is on purpose, add {what} to [release] allowed_copies in course.toml"


def check_no_secrets(
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    allowed_copies: tuple[str, ...] = (),
) -> list[str]:
    """Problems: what the module's docstring lists, in every cell (Markdown too) of every
    notebook of ``released``. ``sources``: the full solution notebooks (instructor-only cells
    included); ``allowed_copies``: lines, or first lines of solution regions, shown
    elsewhere on purpose."""
    allowed = {normalised(line) for line in allowed_copies}
    secrets = {name: secret_lines(nb) for name, nb in sources.items()}
    solution = distinctive_lines(sources, allowed_copies)
    sentences = {s: name for name, nb in sources.items() for s in secret_sentences(nb)}
    blocks = {
        name: [b for b in solution_blocks(nb) if normalised(b[0]) not in allowed]
        for name, nb in sources.items()
    }
    problems = []
    for name, nb in released.items():
        for i, cell in enumerate(nb.cells):
            lines = [line.strip() for line in cell.source.split("\n")]
            specific = specific_lines(lines)
            copied: set[str] = set()  # lines a copied block reports
            for owner, owned in blocks.items():
                for block in owned:
                    run = longest_run(specific, block)
                    if run >= max(COPY_RUN, COPY_SHARE * len(block)):
                        copied |= {normalised(line) for line in block}
                        problems.append(
                            f"{name} cell {i}: {run} lines in a row of a solution of {owner}; "
                            + _allow_hint("the solution's first line")
                            + f": {block[0]!r}"
                        )
            problems += [
                f"{name} cell {i}: marker left in the release: {line}"
                for line in lines
                if _MARKER.search(line)
            ]
            for line in cell_lines(cell):
                if line in copied or _MARKER.search(line):
                    continue
                copied.add(line)  # each line once per cell
                if line in solution:
                    where = solution[line]
                    problems.append(
                        f"{name} cell {i}: solution or hidden-test line left: {line!r} (a line "
                        f"of {where.notebook} {where.cell}); {_allow_hint('the line')}"
                    )
                elif line in secrets.get(name, set()):
                    problems.append(f"{name} cell {i}: solution or hidden-test line left: {line}")
            for sentence in sentences_of(cell.source):
                if sentence in sentences:
                    problems.append(
                        f"{name} cell {i}: a sentence of an instructor-only answer of "
                        f"{sentences[sentence]} is in the release: {sentence[:80]!r}"
                    )
            if cell.get("outputs"):
                problems.append(f"{name} cell {i}: output left in the release")
    return problems
