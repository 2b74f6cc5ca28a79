import pytest

from course_lib.piglatin import (
    extract_words,
    load_pairs,
    load_text,
    pig_latin,
    pig_latin_sentence,
    train_val_split,
)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("impress", "impressway"),
        ("team", "eamtay"),
        ("shopping", "oppingshay"),
        ("the", "ethay"),
        ("family", "amilyfay"),
        ("quicker", "ickerquay"),
        ("yet", "yetay"),
        ("fly", "yflay"),
        ("bond-street", "ondbay-eetstray"),
        ("a", "away"),
        ("i", "iway"),
        ("squeeze", "eezesquay"),  # 'u' after a cluster-ending 'q' moves with it
        ("qatar", "atarqay"),  # 'q' not followed by 'u'
        ("rhythm", "ythmrhay"),  # 'y' inside the word ends the cluster
        ("nth", "nthay"),  # no vowel at all: everything moves
        ("mother-in-law", "othermay-inway-awlay"),
        ("equal", "equalway"),  # starts with a vowel: 'qu' irrelevant
    ],
)
def test_rules(word, expected):
    assert pig_latin(word) == expected


def test_sentence_word_by_word():
    assert pig_latin_sentence("i went shopping") == "iway entway oppingshay"
    assert pig_latin_sentence("the air conditioning is working") == (
        "ethay airway onditioningcay isway orkingway"
    )


@pytest.mark.parametrize(
    "bad", ["", "Hello", "don't", "caf\u00e9", "-ab", "ab-", "a--b", "two words"]
)
def test_bad_words_raise_clear_value_error(bad):
    with pytest.raises(ValueError, match="translate|non-empty"):
        pig_latin(bad)


def test_empty_sentence_raises():
    with pytest.raises(ValueError, match="at least one word"):
        pig_latin_sentence("   ")


def test_extract_words_splits_and_strips():
    text = "The dog--a Good-natured dog, said 'Mrs. Dashwood'; -well- it's 1811!"
    assert extract_words(text) == [
        "the", "dog", "a", "good-natured", "said", "mrs", "dashwood", "well", "it", "s",
    ]  # fmt: skip


def test_dataset_size_and_content():
    pairs = load_pairs()
    assert 6300 <= len(pairs) <= 6500
    assert pairs[:3] == [("sense", "ensesay"), ("and", "andway"), ("sensibility", "ensibilitysay")]
    sources = [s for s, _ in pairs]
    assert len(set(sources)) == len(sources)
    assert ("family", "amilyfay") in pairs
    assert all(t == pig_latin(s) for s, t in pairs)


def test_text_checksum_detects_damage(monkeypatch):
    import course_lib.piglatin as pl

    assert load_text().startswith("[Sense and Sensibility by Jane Austen 1811]")
    monkeypatch.setattr(pl, "TEXT_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="damaged"):
        pl.load_text()


def test_split_is_deterministic_and_disjoint():
    pairs = load_pairs()
    train, val = train_val_split(pairs, seed=3)
    assert len(val) == round(0.2 * len(pairs)) and len(train) + len(val) == len(pairs)
    assert not set(train) & set(val)
    assert train_val_split(pairs, seed=3) == (train, val)
    assert train_val_split(pairs, seed=4)[1] != val


def test_split_rejects_bad_fraction():
    with pytest.raises(ValueError, match="val_fraction"):
        train_val_split([("a", "away")], val_fraction=1.5)
