from collections import Counter

import nbformat
import pytest

from course_lib import piglatin, subwords
from helpers import ROOT

NOTEBOOK = ROOT / "solutions" / "a3" / "5b_copying_subwords.ipynb"


@pytest.fixture(scope="module")
def segment():
    """The notebook's given ``segment`` (its cell with grade id ``segment``), defined as there."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "segment"]
    namespace = {"subwords": subwords}
    exec(cell.source, namespace)  # noqa: S102 - the course's own given code
    return namespace["segment"]


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


def test_segment_applies_the_earliest_merge_first(segment):
    merges = [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w")]
    assert segment("lowest", merges) == ["low", "est</w>"]
    assert segment("slow", merges) == ["s", "low", "</w>"]
    assert segment("xyz", merges) == ["x", "y", "z", "</w>"]
    assert segment("lowest", []) == ["l", "o", "w", "e", "s", "t", "</w>"]


def test_segment_merges_repeats_left_to_right_without_overlap(segment):
    assert segment("aaa", [("a", "a")]) == ["aa", "a", "</w>"]
    assert segment("aaaa", [("a", "a"), ("aa", "aa")]) == ["aaaa", "</w>"]
    assert segment("abc", [("a", "b"), ("b", "c")]) == ["ab", "c", "</w>"]


def test_segment_comes_after_the_exercise_not_from_the_library():
    """Applying merges to a word is half of learn_bpe: the library must not do it for students,
    and the notebook defines it only after learn_bpe's tests."""
    assert not [name for name in vars(subwords) if "segment" in name or "merge" in name.lower()]
    nb = nbformat.read(NOTEBOOK, as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    given, last_test = ids.index("segment"), ids.index("test_bpe_reference")
    assert given > last_test
    assert not any("segment(" in c.source for c in nb.cells[:given])


def test_toy_corpus_is_sennrichs():
    assert subwords.TOY_CORPUS == {"low": 5, "lower": 2, "newest": 6, "widest": 3}
