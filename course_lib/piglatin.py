"""Pig-Latin rules (the ground truth the models learn) and the word-pair dataset.

Rules, applied to each lowercase word:

1. A word whose first letter is a vowel (``a e i o u``) gets ``way`` appended:
   ``impress -> impressway``.
2. Otherwise the leading consonant cluster (every letter before the first of ``a e i o u y``)
   moves to the end and ``ay`` is appended: ``team -> eamtay``, ``shopping -> oppingshay``,
   ``fly -> yflay``. A word starting with ``y`` moves nothing (``yet -> yetay``), and a ``u``
   right after a ``q`` that ends the cluster moves with it (``quicker -> ickerquay``).
3. Hyphenated words are translated part by part: ``bond-street -> ondbay-eetstray``.

The dataset holds the unique words of Jane Austen's *Sense and Sensibility* (public domain,
Project Gutenberg etext #161, as distributed in NLTK), bundled in ``course_lib/data``.
"""

from __future__ import annotations

import hashlib
import random
import re
from functools import lru_cache
from importlib import resources

VOWELS = frozenset("aeiou")
_CLUSTER_END = frozenset("aeiouy")
_WORD_RE = re.compile(r"[a-z]+(?:-[a-z]+)*")
_SPLIT_RE = re.compile(r"[^a-z-]+|--+")

TEXT_FILE = "sense_and_sensibility.txt"
TEXT_SHA256 = "57b169c7cfa502896dee25bd66616f61cc1d21084caf31f015176ee46fda9718"

Pair = tuple[str, str]


def _check_word(word: str) -> None:
    if not isinstance(word, str) or not word:
        raise ValueError("expected a non-empty word")
    if not _WORD_RE.fullmatch(word):
        bad = sorted({c for c in word if not ("a" <= c <= "z" or c == "-")})
        detail = f"characters {bad} are" if bad else "a hyphen at the start or end, or '--', is"
        raise ValueError(
            f"cannot translate {word!r}: {detail} not allowed; words are lowercase letters a-z "
            "with single inner hyphens"
        )


def _translate_part(part: str) -> str:
    if part[0] in VOWELS:
        return part + "way"
    cut = next((i for i, c in enumerate(part) if c in _CLUSTER_END), len(part))
    if 0 < cut < len(part) and part[cut - 1] == "q" and part[cut] == "u":
        cut += 1
    return part[cut:] + part[:cut] + "ay"


def pig_latin(word: str) -> str:
    """Translate one lowercase word (hyphens allowed inside) to Pig-Latin.

    Raises ``ValueError`` for an empty word or characters outside ``a-z`` and inner ``-``.
    """
    _check_word(word)
    return "-".join(_translate_part(part) for part in word.split("-"))


def pig_latin_sentence(sentence: str) -> str:
    """Translate a sentence word by word: ``'i went shopping' -> 'iway entway oppingshay'``."""
    words = sentence.split()
    if not words:
        raise ValueError("expected a sentence with at least one word")
    return " ".join(pig_latin(w) for w in words)


def load_text() -> str:
    """The bundled novel as text; raises ``RuntimeError`` if the file is damaged (sha256)."""
    data = resources.files("course_lib").joinpath("data", TEXT_FILE).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != TEXT_SHA256:
        raise RuntimeError(
            f"bundled {TEXT_FILE} is damaged (sha256 {digest}, expected {TEXT_SHA256}); "
            "reinstall course_lib"
        )
    return data.decode("utf-8")


def extract_words(text: str) -> list[str]:
    """Unique words in order of first appearance.

    Lowercase; split on anything that is not a letter or ``-`` and on ``--``; strip leading and
    trailing hyphens; keep words of letters with single inner hyphens.
    """
    seen: dict[str, None] = {}
    for token in _SPLIT_RE.split(text.lower()):
        token = token.strip("-")
        if token and _WORD_RE.fullmatch(token):
            seen.setdefault(token, None)
    return list(seen)


@lru_cache(maxsize=1)
def _all_pairs() -> tuple[Pair, ...]:
    return tuple((w, pig_latin(w)) for w in extract_words(load_text()))


def load_pairs() -> list[Pair]:
    """All (english, pig_latin) word pairs of the novel, in order of first appearance (~6,400)."""
    return list(_all_pairs())


def train_val_split(
    pairs: list[Pair], val_fraction: float = 0.2, seed: int = 0
) -> tuple[list[Pair], list[Pair]]:
    """Shuffle ``pairs`` with ``seed`` and split them: the same seed gives the same split."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be between 0 and 1, got {val_fraction}")
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    n_val = round(len(shuffled) * val_fraction)
    return shuffled[n_val:], shuffled[:n_val]
