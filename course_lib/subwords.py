"""Subwords: the data and helpers around byte-pair encoding (BPE) of Part 5.

BPE (Sennrich, Haddow and Birch, 2016) splits every word into characters followed by an
end-of-word marker, ``"low" -> ("l", "o", "w", "</w>")``, then learns *merges*: it repeatedly
joins the two adjacent symbols that occur together most often in the corpus into one new
symbol. The merge loop is what students write (``learn_bpe`` in the notebook); this module
holds what surrounds it:

- :func:`word_counts`: how often each word occurs in the course's novel;
- :data:`TOY_CORPUS`: Sennrich et al.'s four-word example, small enough to follow by hand;
- :func:`split_word`: a word as its initial symbols;
- :func:`segment`: splitting a new word with learned merges (as a tokenizer does after
  training: the earliest-learned merge that applies first, until none applies).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

END = "</w>"  # the end-of-word marker: "st</w>" (a word ending) is not "st" (a word start)
TOY_CORPUS: dict[str, int] = {"low": 5, "lower": 2, "newest": 6, "widest": 3}

Merge = tuple[str, str]
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


def segment(word: str, merges: Sequence[Merge]) -> list[str]:
    """``word`` split into subwords with ``merges`` (in the order they were learned).

    As a BPE tokenizer does at inference: among the adjacent pairs of the word that are
    merges, join the one learned first (every occurrence, left to right), and repeat until no
    pair of the word is a merge. The last subword ends with :data:`END`."""
    rank = {tuple(pair): i for i, pair in enumerate(merges)}
    symbols = list(split_word(word))
    while len(symbols) > 1:
        ranked = [rank.get(pair, len(rank)) for pair in zip(symbols, symbols[1:], strict=False)]
        best = min(ranked)
        if best == len(rank):
            break
        left, right = merges[best]
        joined, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
                joined.append(left + right)
                i += 2
            else:
                joined.append(symbols[i])
                i += 1
        symbols = joined
    return symbols
