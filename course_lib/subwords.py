"""Subwords: the data and helpers around byte-pair encoding (BPE) of Part 5.

BPE (Sennrich, Haddow and Birch, 2016) splits every word into characters followed by an
end-of-word marker, ``"low" -> ("l", "o", "w", "</w>")``, then learns *merges*: it repeatedly
joins the two adjacent symbols that occur together most often in the corpus into one new
symbol. The merge loop is what students write (``learn_bpe`` in the notebook); this module
holds only what comes before it:

- :func:`word_counts`: how often each word occurs in the course's novel;
- :data:`TOY_CORPUS`: Sennrich et al.'s four-word example, small enough to follow by hand;
- :func:`split_word`: a word as its initial symbols.

Nothing here applies a merge to a word: that is the subtle half of the exercise (left to right,
no overlap, whole symbols). Splitting a new word with learnt merges (``segment``) is given code
in the notebook, after the exercise.
"""

from __future__ import annotations

import re
from collections import Counter

END = "</w>"  # the end-of-word marker: "st</w>" (a word ending) is not "st" (a word start)
TOY_CORPUS: dict[str, int] = {"low": 5, "lower": 2, "newest": 6, "widest": 3}

_SPLIT_RE = re.compile(r"[^a-z-]+|--+")  # as course_lib.piglatin splits the novel
_WORD_RE = re.compile(r"[a-z]+(?:-[a-z]+)*")


def word_counts(text: str | None = None) -> Counter[str]:
    """How often each word occurs in ``text`` (default: the course's novel, *Sense and
    Sensibility*), lowercased and split as :func:`course_lib.piglatin.extract_words` splits
    it (letters with single inner hyphens)."""
    from .piglatin import load_text

    text = load_text() if text is None else text
    counts: Counter[str] = Counter()
    for token in _SPLIT_RE.split(text.lower()):
        token = token.strip("-")
        if token and _WORD_RE.fullmatch(token):
            counts[token] += 1
    return counts


def split_word(word: str) -> tuple[str, ...]:
    """The initial symbols of ``word``: its characters, then :data:`END`."""
    if not word:
        raise ValueError("expected a non-empty word")
    return (*word, END)
