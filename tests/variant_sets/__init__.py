"""Variants of each solution notebook graded by ``tests/grader/quality/test_variants.py``:
known-wrong implementations (mutants) and other correct ones, one module per notebook. Each module
has ``NOTEBOOK`` (its name) and ``VARIANTS`` (a list of ``autograder.quality.variants.Variant``)."""
