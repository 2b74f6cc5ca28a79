"""How two answers to one notebook are compared (``make similarity``, ``similarity.py``).

The comparison is copydetect's (MOSS's winnowing, Schleimer, Wilkerson and Aiken
2003): the code is tokenized by Pygments, every variable and attribute name becomes ``V``,
every function name ``F``, every string ``S``, comments and blank space are dropped (so renamed
variables and new comments change nothing), and each run of ``noise`` characters of what is
left (a *k-gram*) is hashed. Every k-gram is a fingerprint (copydetect's guarantee threshold
equals the noise threshold): the same class gives the same scores on every run. Here:

- **the stub is not evidence**: the fingerprints of the released student copy's answer cells
  (``assignments/<a>/<nb>.ipynb``: the class skeleton, the docstring, ``raise
  NotImplementedError()``) are copydetect's *boilerplate*, dropped from every answer: two
  students who hand in the untouched stub share nothing;
- **code everybody writes is not evidence** (MOSS's ``-m``): a fingerprint found in the answers
  of more than ``[similarity] common`` students (more than half of them, in a class of fewer
  than twice that) is the natural way to write that line: it is not counted as a match, but it
  still counts in the size of the answer. Against the course's solutions it counts: a class
  that hands in the solution makes the solution's code common, and that code is the match;
- **the score** of a pair is copydetect's share of each answer found in the other (the matched
  tokens over the answer's tokens, the stub left out), the larger of the two (against a
  reference, the student's share). Pairs scoring at least ``[similarity] threshold`` are
  listed, highest first;
- **identical answers** (the same filtered code) are grouped apart, whatever is common: one
  answer handed in by many students is common code, which no pair shows.

Speed: each answer is fingerprinted once (copydetect's :class:`~copydetect.CodeFingerprint`,
in memory), then an inverted index (fingerprint -> the answers that have it) finds the pairs
that share one; only those, when they could reach the threshold, go to copydetect's
:func:`~copydetect.compare_files`. ``bench/similarity.py`` measures it on generated classes.
"""

from __future__ import annotations

import copy
import io
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from copydetect import CodeFingerprint, compare_files

from autograder.course.config import SimilaritySettings

REFERENCE_PREFIX = "reference: "
SOLUTION_PREFIX = "solution: "  # the course's own solutions (solutions/<a>/), a reference too


@dataclass
class Answer:
    """One student's answer cells to one notebook, joined (or one reference file's code)."""

    owner: str  # the student id, "reference: <path in the reference folder>", "solution: ..."
    notebook: str
    code: str
    cells: list[tuple[int, str]]  # (line where a cell starts in ``code``, "cell <grade id>")
    fingerprint: CodeFingerprint | None = None
    matchable: CodeFingerprint | None = None  # the fingerprint without the common ones

    @property
    def reference(self) -> bool:
        """Whether this is reference code (the course's solutions too), not a student's."""
        return self.owner.startswith((REFERENCE_PREFIX, SOLUTION_PREFIX))

    @property
    def solution(self) -> bool:
        return self.owner.startswith(SOLUTION_PREFIX)


@dataclass
class Pair:
    """Two answers to one notebook that look alike; ``a`` is a student, ``b`` a student or a
    reference. ``slices_*``: where the matched code is in each answer (copydetect's 2 x n
    arrays of character offsets, starts then ends)."""

    notebook: str
    a: Answer
    b: Answer
    share_a: float
    share_b: float
    matched: int  # matched tokens (characters of the filtered code) of ``a``
    slices_a: np.ndarray
    slices_b: np.ndarray

    @property
    def score(self) -> float:
        return self.share_a if self.b.reference else max(self.share_a, self.share_b)


@dataclass
class NotebookStats:
    """What was compared for one notebook."""

    answers: int = 0  # students with code of their own in their answer cells
    stub_only: int = 0  # students whose answer cells hold only the stub (nothing compared)
    references: int = 0  # reference files compared with (the course's solution included)
    candidates: int = 0  # pairs sharing an uncommon fingerprint
    compared: int = 0  # of those, pairs copydetect compared (the others could not score enough)
    common: int = 0  # fingerprints found in too many answers to count
    listed: int = 0  # pairs of students listed
    matched: int = 0  # matches of a student to the solution or reference code listed
    # students whose answers are the same token for token (names, comments, layout aside),
    # by group: found whatever is common (seven students handing in one leaked answer make it
    # common code, which no pair shows)
    identical: list[list[str]] = field(default_factory=list)


def fingerprint(code: str, noise: int, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    """copydetect's fingerprint of Python ``code``, in memory: every k-gram of ``noise``
    filtered characters (window 1), those of ``boilerplate`` left out."""
    return CodeFingerprint(
        "answer.py", noise, 1, boilerplate=boilerplate, language="python", fp=io.StringIO(code)
    )


def _fingerprinted(answers: list[Answer], stub: np.ndarray, noise: int, log=print) -> list[Answer]:
    """``answers`` with their fingerprints, the stub's left out; those with none (the stub
    alone, or nothing) are dropped."""
    kept = []
    for answer in answers:
        try:
            answer.fingerprint = fingerprint(answer.code, noise, stub)
        except Exception as err:  # a tokenizer failure must not stop the class
            log(f"  {answer.owner}/{answer.notebook}: skipped, not tokenized ({err!r:.200})")
            continue
        if answer.fingerprint.hashes:
            kept.append(answer)
    return kept


def common_limit(settings: SimilaritySettings, answers: int) -> int:
    """A fingerprint in more student answers than this is common code (0: none is):
    ``[similarity] common``, or half the answers in a class of fewer than twice that."""
    if settings.common <= 0:
        return answers
    return max(2, min(settings.common, answers // 2))


def _identical(own: list[Answer]) -> list[list[str]]:
    """The groups of students whose answers are the same filtered code, largest first."""
    same: dict[str, list[str]] = defaultdict(list)
    for answer in own:
        same[answer.fingerprint.filtered_code].append(answer.owner)
    return sorted((g for g in same.values() if len(g) > 1), key=lambda g: (-len(g), g))


def _without_common(own: list[Answer], everyone: list[Answer], settings: SimilaritySettings) -> int:
    """Give each of ``everyone`` its matchable fingerprint: its own, less the fingerprints found
    in too many of the students' answers (``own``); how many those are."""
    counts = Counter(h for a in own for h in a.fingerprint.hashes)
    limit = common_limit(settings, len(own))
    common = {h for h, n in counts.items() if n > limit}
    for item in everyone:
        item.matchable = copy.copy(item.fingerprint)
        item.matchable.hashes = item.fingerprint.hashes - common
    return len(common)


def _shared_positions(everyone: list[Answer], n_own: int) -> dict[tuple[int, int], list[int]]:
    """Per pair (i, j) of ``everyone`` sharing a matchable fingerprint (``i`` one of the first
    ``n_own``, the students; never two references): how many fingerprint positions of each are
    shared. A match covers at most `noise` tokens per position, so positions * noise / coverage
    bounds the share."""
    # Inverted index: fingerprint -> the answers that have it; a pair shares at least one.
    holders: dict[int, list[int]] = defaultdict(list)
    for i, item in enumerate(everyone):
        for h in item.matchable.hashes:
            holders[h].append(i)
    positions: dict[tuple[int, int], list[int]] = {}
    for h, group in holders.items():
        if len(group) < 2:
            continue
        for x, i in enumerate(group):
            if i >= n_own:
                break  # references come last: never a pair of two references
            for j in group[x + 1 :]:
                pos = positions.setdefault((i, j), [0, 0])
                pos[0] += len(everyone[i].matchable.hash_idx[h])
                pos[1] += len(everyone[j].matchable.hash_idx[h])
    return positions


def _add_solutions(
    own: list[Answer], sols: list[Answer], everyone: list[Answer], positions: dict
) -> None:
    """Append the solutions to ``everyone`` and their shared positions with each student to
    ``positions``: every fingerprint but the stub's (common code counts here)."""
    for solution in sols:
        solution.matchable = solution.fingerprint
        for i, answer in enumerate(own):
            shared = answer.fingerprint.hashes & solution.fingerprint.hashes
            if shared:
                pos = sum(len(answer.fingerprint.hash_idx[h]) for h in shared)
                positions[(i, len(everyone))] = [pos, 0]
        everyone.append(solution)


def _scored_pairs(
    name: str,
    everyone: list[Answer],
    positions: dict[tuple[int, int], list[int]],
    settings: SimilaritySettings,
    stats: NotebookStats,
) -> list[Pair]:
    """The candidate pairs that could reach the threshold compared by copydetect, and those
    that reach it."""
    pairs = []
    k = settings.noise
    for (i, j), (pos_i, pos_j) in positions.items():
        a, b = everyone[i], everyone[j]
        bound_a = pos_i * k / a.fingerprint.token_coverage
        bound_b = 0.0 if b.reference else pos_j * k / b.fingerprint.token_coverage
        if max(bound_a, bound_b) < settings.threshold:
            continue
        stats.compared += 1
        fp_a = a.fingerprint if b.solution else a.matchable
        matched, (share_a, share_b), (slices_a, slices_b) = compare_files(fp_a, b.matchable)
        pair = Pair(name, a, b, float(share_a), float(share_b), int(matched), slices_a, slices_b)
        if pair.score >= settings.threshold:
            pairs.append(pair)
    return pairs


def compare_notebook(
    name: str,
    answers: list[Answer],
    references: list[Answer],
    stub: np.ndarray,
    settings: SimilaritySettings,
    log=print,
    solutions: list[Answer] = (),
) -> tuple[list[Pair], NotebookStats]:
    """The pairs of ``answers`` (and of an answer with a reference or a solution) scoring at
    least the threshold, and what was compared. Common code counts against ``solutions``."""
    stats = NotebookStats()
    own = _fingerprinted(answers, stub, settings.noise, log)
    refs = _fingerprinted(references, stub, settings.noise, log)
    sols = _fingerprinted(list(solutions), stub, settings.noise, log)
    stats.answers, stats.stub_only = len(own), len(answers) - len(own)
    stats.references = len(refs) + len(sols)
    stats.identical = _identical(own)
    everyone = own + refs
    stats.common = _without_common(own, everyone, settings)
    positions = _shared_positions(everyone, len(own))
    _add_solutions(own, sols, everyone, positions)
    stats.candidates = len(positions)
    pairs = _scored_pairs(name, everyone, positions, settings, stats)
    stats.matched = sum(p.b.reference for p in pairs)
    stats.listed = len(pairs) - stats.matched
    return pairs, stats
