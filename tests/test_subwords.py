from collections import Counter

import pytest

from course_lib import piglatin, subwords


def test_word_counts_of_the_novel_cover_its_words():
    counts = subwords.word_counts()
    assert set(counts) == set(piglatin.extract_words(piglatin.load_text()))
    assert counts.most_common(1)[0][0] == "the" and sum(counts.values()) > 100_000


def test_word_counts_of_a_text_split_like_the_dataset():
    assert subwords.word_counts("The cat--the CAT's well-known -cat-") == Counter(
        {"the": 2, "cat": 3, "s": 1, "well-known": 1}
    )


def test_split_word_adds_the_end_of_word_marker():
    assert subwords.split_word("low") == ("l", "o", "w", "</w>")
    with pytest.raises(ValueError):
        subwords.split_word("")


def test_segment_applies_the_earliest_merge_first():
    merges = [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w")]
    assert subwords.segment("lowest", merges) == ["low", "est</w>"]
    assert subwords.segment("slow", merges) == ["s", "low", "</w>"]
    assert subwords.segment("xyz", merges) == ["x", "y", "z", "</w>"]
    assert subwords.segment("lowest", []) == ["l", "o", "w", "e", "s", "t", "</w>"]


def test_segment_merges_repeats_left_to_right_without_overlap():
    assert subwords.segment("aaa", [("a", "a")]) == ["aa", "a", "</w>"]
    assert subwords.segment("aaaa", [("a", "a"), ("aa", "aa")]) == ["aaaa", "</w>"]
    assert subwords.segment("abc", [("a", "b"), ("b", "c")]) == ["ab", "c", "</w>"]


def test_toy_corpus_is_sennrichs():
    assert subwords.TOY_CORPUS == {"low": 5, "lower": 2, "newest": 6, "widest": 3}
