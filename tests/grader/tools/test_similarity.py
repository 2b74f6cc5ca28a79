"""``make similarity`` (autograder/tools/similarity.py): on a class built here from notebook
3_transformer, a student who copies another's answers (names changed, helper functions
reordered, new comments) and one who copies half of them rank first; students who wrote other
correct answers (tests/variant_sets/transformer.py's) stay under the threshold; the stub alone
matches nothing; a broken notebook is skipped with a message and a renamed one counted; one
answer handed in by many is listed as identical; a class that hands in the solution is matched
to it, apart from the pairs of students; hostile code is escaped; a reference folder is
matched; no grade file changes and nothing reaches students; the settings are checked."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from variant_sets import transformer

from autograder.__main__ import main
from autograder.course import config, notebooks, spec
from autograder.deploy import gradescope
from autograder.publish import release
from autograder.tools import similarity
from helpers import ROOT

NB = transformer.NOTEBOOK  # 3_transformer
A, C = transformer.A, transformer.C  # scaled_dot_attention, causal_attention

# The source student's own way of writing the two attention layers: helper functions above the
# class, explicit softmax and a loop over the queries (correct, and unlike the solution).
HELPERS = '''def key_query_scores(q, k, scale):
    """Scores of every key against every query: (N, S, k)."""
    return torch.matmul(k, q.permute(0, 2, 1)) * scale


def softmax_over_keys(raw):
    """Softmax over dim 1, written out: (N, S, k)."""
    shifted = torch.exp(raw - raw.max(dim=1, keepdim=True).values)
    return shifted / shifted.sum(dim=1, keepdim=True)


def weighted_values(weights, v):
    """Context vectors from (N, S, k) weights over (N, S, H) values: (N, k, H)."""
    out = []
    for j in range(weights.shape[2]):
        out.append((weights[:, :, j : j + 1] * v).sum(dim=1))
    return torch.stack(out, dim=1)


'''
PROJECT = """        q_in = queries if queries.dim() == 3 else queries[:, None, :]
        projected = [layer(x) for layer, x in ((self.Q, q_in), (self.K, keys), (self.V, values))]
        raw = key_query_scores(projected[0], projected[1], self.scaling_factor)
"""
ATTEND = """        attention_weights = softmax_over_keys(raw)
        context = weighted_values(attention_weights, projected[2])
"""
MASK = """        n_keys, n_queries = raw.shape[1], raw.shape[2]
        hide = torch.arange(n_keys)[:, None] > torch.arange(n_queries)[None, :]
        raw = torch.where(hide.to(raw.device), torch.full_like(raw, self.neg_inf), raw)
"""
OWN = {A: PROJECT + ATTEND, C: PROJECT + MASK + ATTEND}
# The copier's renames (whole words) and comments; helper functions in another order.
RENAMES = {
    "key_query_scores": "all_scores",
    "softmax_over_keys": "normalise",
    "weighted_values": "mix_values",
    "q_in": "qs",
    "projected": "qkv",
    "raw": "logits",
    "shifted": "expd",
    "out": "pieces",
    "n_keys": "s_len",
    "n_queries": "q_len",
    "hide": "future",
}
INDEPENDENT = ("solution", "einsum", "masked", "keywords", "mixed")


def _solution_cells() -> dict[str, str]:
    """The solution's answer cells, markers removed (what a student hands in)."""
    nb = notebooks.read(ROOT / "solutions" / "a3" / f"{NB}.ipynb")
    return {
        spec.grade_id(c): spec.without_markers(c.source)
        for c in nb.cells
        if c.cell_type == "code" and spec.is_solution(c)
    }


def _region(gid: str) -> str:
    """The solution region of answer ``gid`` (the lines between the markers)."""
    nb = notebooks.read(ROOT / "solutions" / "a3" / f"{NB}.ipynb")
    cell = spec.cells_by_id(nb)[gid]
    (lines,) = notebooks.regions(cell).solutions
    return "\n".join(lines) + "\n"


def _variant(*names: str) -> dict[str, str]:
    """The solution's cells with the edits of the named correct variants of the variant set."""
    cells = _solution_cells()
    for variant in transformer.VARIANTS:
        if variant.name in names:
            assert variant.correct, variant.name
            for gid, old, new in variant.edits:
                assert old in cells[gid], (variant.name, old)
                cells[gid] = cells[gid].replace(old, new)
    return cells


def _source() -> dict[str, str]:
    cells = _solution_cells()
    cells[A] = HELPERS + cells[A].replace(_region(A), OWN[A])
    cells[C] = cells[C].replace(_region(C), OWN[C])
    return cells


def _copy(cells: dict[str, str]) -> dict[str, str]:
    """``cells`` as a copier hands them in: names changed, helpers reordered, new comments."""
    out = {}
    for gid, source in cells.items():
        if source.startswith(HELPERS):
            first, second, third = HELPERS.strip().split("\n\n\n")
            source = "\n\n\n".join([third, first, second]) + "\n\n\n" + source[len(HELPERS) :]
        for old, new in RENAMES.items():
            source = re.sub(rf"\b{old}\b", new, source)
        source = source.replace(
            "\n        context = ", "\n        # weigh the values, then sum\n        context = "
        )
        out[gid] = "# my attention layers, written for this assignment\n" + source
    return out


def class_answers() -> dict[str, dict[str, str]]:
    """The answer cells of each student of the class: the copy pair, the half copy, and five
    independent correct answers (the variant set's other correct ways, alone and combined)."""
    source = _source()
    half = _variant("causal: masked_fill with -inf")
    half[A] = source[A]  # the source's first layer (and its helpers), the rest its own
    return {
        "source": source,
        "copier": _copy(source),
        "half": half,
        "solution": _solution_cells(),
        "einsum": _variant("attention: einsum"),
        "masked": _variant("causal: masked_fill with -inf"),
        "keywords": _variant("encoder: attention called with keyword arguments"),
        "mixed": _variant("attention: einsum", "encoder: attention called with keyword arguments"),
    }


def released() -> notebooks.NotebookNode:
    return notebooks.read(ROOT / "assignments" / "a3" / f"{NB}.ipynb")


def hand_in(course: config.Course, student: str, cells: dict[str, str] | None) -> Path:
    """Write ``student``'s notebook: the student copy with ``cells`` in its answer cells
    (None: untouched)."""
    nb = released()
    for cell in nb.cells:
        gid = spec.grade_id(cell)
        if cells is not None and gid in cells:
            cell.source = cells[gid]
    path = course.class_dir / "submitted" / student / course.assignment / f"{NB}.ipynb"
    notebooks.write(nb, path)
    return path


def make_course(root: Path) -> config.Course:
    """A course in ``root`` with notebook 3_transformer only (its solution and student copy)."""
    shutil.copy2(ROOT / "course.toml", root / "course.toml")
    for folder in ("solutions", "assignments"):
        (root / folder / "a3").mkdir(parents=True)
        shutil.copy2(ROOT / folder / "a3" / f"{NB}.ipynb", root / folder / "a3")
    return config.load(root)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """The class above, two untouched student copies and a broken notebook, compared."""
    course = make_course(tmp_path_factory.mktemp("class"))
    for student, cells in class_answers().items():
        hand_in(course, student, cells)
    hand_in(course, "blank1", None)
    hand_in(course, "blank2", None)
    broken = hand_in(course, "broken", class_answers()["source"])
    broken.write_bytes(broken.read_bytes()[:3000])  # cut in half
    lines: list[str] = []
    report = similarity.run(course, log=lines.append)
    return course, report, lines


def test_copies_rank_first_and_independent_answers_stay_under_the_threshold(graded_class):
    """The full copy first, then the half copy with both; no pair of independent answers."""
    course, report, _ = graded_class
    threshold = course.similarity.threshold
    ranked = [frozenset((p.a.owner, p.b.owner)) for p in report.pairs]
    assert ranked[0] == {"copier", "source"}
    assert set(ranked[1:3]) == {frozenset(("half", "source")), frozenset(("half", "copier"))}
    assert len(ranked) == 3 and all(p.score >= threshold for p in report.pairs)
    assert report.pairs[0].score > report.pairs[1].score >= report.pairs[2].score
    # every pair of the class scored (threshold 0): the independent answers, well under it
    everything = similarity.find(_with(course, threshold=0.0), log=lambda _: None).pairs
    others = [p for p in everything if {p.a.owner, p.b.owner} <= set(INDEPENDENT)]
    assert len(others) >= 5 and max(p.score for p in others) < threshold - 0.1


def _with(course: config.Course, **settings) -> config.Course:
    """``course`` with other ``[similarity]`` settings."""
    return dataclasses.replace(
        course, similarity=dataclasses.replace(course.similarity, **settings)
    )


def _answers(course: config.Course) -> list[similarity.Answer]:
    """Every student's answers to the notebook, read again."""
    found = []
    for student in sorted(p.name for p in (course.class_dir / "submitted").iterdir()):
        folder = course.class_dir / "submitted" / student / course.assignment
        answers, _ = similarity.read_student(folder, student, {NB: released()}, log=lambda _: None)
        found += answers.values()
    return found


def test_the_stub_alone_matches_nothing(graded_class):
    """Two students who hand in the untouched student copy share no fingerprint: the stub is
    copydetect's boilerplate."""
    course, report, _ = graded_class
    assert report.stats[NB].stub_only == 2
    assert not [p for p in report.pairs if {"blank1", "blank2"} & {p.a.owner, p.b.owner}]
    stub = similarity.stub_hashes(released(), course.similarity.noise)
    blank = [a for a in _answers(course) if a.owner == "blank1"][0]
    assert similarity.fingerprint(blank.code, course.similarity.noise, stub).hashes == set()
    assert similarity.fingerprint(blank.code, course.similarity.noise).hashes  # not empty code


def test_a_broken_notebook_is_skipped_with_a_message(graded_class):
    course, report, lines = graded_class
    message = f"broken/{NB}.ipynb: skipped, not a valid notebook"
    assert any(message in line for line in lines)
    assert any(message in line for line in report.skipped)
    assert message in (course.out_dir / "similarity.html").read_text()
    assert report.stats[NB].answers == 8  # everyone else


def test_a_renamed_notebook_counts_for_its_notebook(tmp_path):
    """``Copy of 3_transformer.ipynb`` is compared as 3_transformer, as make grade grades it."""
    course = make_course(tmp_path)
    hand_in(course, "source", _source())
    renamed = hand_in(course, "copier", _copy(_source()))
    renamed.rename(renamed.with_name(f"Copy of {NB}.ipynb"))
    report = similarity.find(course, log=lambda _: None)
    assert [(p.a.owner, p.b.owner) for p in report.pairs] == [("copier", "source")]


def test_one_answer_handed_in_by_many_is_listed_as_identical(tmp_path):
    """Five of eight students hand in one answer: its code is then common (no pair of them is
    listed), and the page lists the five as identical answers instead."""
    course = make_course(tmp_path)
    same = [f"same{i}" for i in range(5)]
    renamed = {gid: "# mine\n" + re.sub(r"\braw\b", "logits", c) for gid, c in _source().items()}
    for i, student in enumerate(same):
        hand_in(course, student, renamed if i % 2 else _source())
    for student in INDEPENDENT[:3]:
        hand_in(course, student, class_answers()[student])
    report = similarity.run(course, log=lambda _: None)
    assert not [p for p in report.pairs if {p.a.owner, p.b.owner} <= set(same)]
    assert report.stats[NB].identical == [same]
    assert "same0, same1, same2, same3, same4" in (course.out_dir / "similarity.html").read_text()


def test_a_class_that_hands_in_the_solution_matches_it(tmp_path):
    """Four students hand in the solution (two with names changed and comments): its code is
    common, so no pair of them is listed, but each matches the course's solution, named apart
    from the pairs of students; an independent answer of the student's own does not."""
    course = make_course(tmp_path)
    copiers = [f"copy{i}" for i in range(4)]
    for i, student in enumerate(copiers):
        hand_in(course, student, _copy(_solution_cells()) if i % 2 else _solution_cells())
    hand_in(course, "own", _source())
    lines: list[str] = []
    report = similarity.run(course, log=lines.append)
    assert not [p for p in report.pairs if {p.a.owner, p.b.owner} <= set(copiers)]
    solution = f"solution: solutions/a3/{NB}.ipynb"
    assert sorted((p.a.owner, p.b.owner) for p in report.matches) == [
        (s, solution) for s in copiers
    ]
    assert all(p.score > 0.95 and p.b.solution for p in report.matches)
    page = (course.out_dir / "similarity.html").read_text()
    matches = page.split("<h2>Matches to the solution")[1].split("<h2>")[0]
    assert all(s in matches for s in copiers) and solution in matches and "<td>own<" not in matches
    assert "No pair of students scores" in page  # the pairs' section: none
    assert "4 match(es) to the solution or reference code at or above 0.4" in lines


def test_csv_lists_the_pairs_of_the_page(graded_class):
    course, report, _ = graded_class
    with open(course.out_dir / "similarity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == similarity.CSV_COLUMNS
    for kind, listed in (("students", report.pairs), ("solution", report.matches)):
        mine = [r for r in rows if r["kind"] == kind]
        assert [(r["student_a"], r["student_b"]) for r in mine] == [
            (p.a.owner, p.b.owner) for p in listed
        ]
        scores = [float(r["score"]) for r in mine]
        assert scores == sorted(scores, reverse=True)
    assert len(rows) == len(report.pairs) + len(report.matches)
    page = (course.out_dir / "similarity.html").read_text()
    assert "A lead for a human, not a verdict" in page and "changes no grade" in page
    assert page.count('<section class="pair"') == len(rows)


HOSTILE = """        banner = "</script><script>alert('x')</script>"  # <img src=x onerror=alert(1)>
"""


def test_student_code_is_escaped_and_the_page_loads_nothing(tmp_path):
    course = make_course(tmp_path)
    cells = _source()
    cells[A] = cells[A].replace(PROJECT, PROJECT + HOSTILE)
    hand_in(course, "h1", cells)
    hand_in(course, "h2", _copy(cells))
    report = similarity.run(course, log=lambda _: None)
    assert [(p.a.owner, p.b.owner) for p in report.pairs] == [("h1", "h2")]
    page = (course.out_dir / "similarity.html").read_text()
    assert "&lt;/script&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)  # nothing external


def test_reference_folder(tmp_path):
    """Code found elsewhere (a .py file, a past term's notebook) is matched, given on the
    command line or as ``[similarity] reference``; two references are never a pair."""
    course = make_course(tmp_path)
    hand_in(course, "lone", _copy(_source()))  # no classmate wrote it
    for student in INDEPENDENT:
        hand_in(course, student, class_answers()[student])
    refs = tmp_path / "refs"
    (refs / "online").mkdir(parents=True)
    (refs / "online" / "attention.py").write_text(HELPERS + _source()[A])
    past = hand_in(course, "past", _source())
    shutil.move(past.parents[1], refs / "2025")  # a past term's submission, out of this class
    lines: list[str] = []
    assert main(["--root", str(tmp_path), "similarity", "--reference", str(refs)]) == 0
    with open(course.out_dir / "similarity.csv", newline="") as fh:
        found = list(csv.DictReader(fh))
    rows = [(r["student_a"], r["student_b"]) for r in found if r["kind"] == "reference"]
    assert set(rows) == {
        ("lone", "reference: 2025/a3/3_transformer.ipynb"),
        ("lone", "reference: online/attention.py"),
    }
    assert not [r for r in found if r["kind"] == "students"]
    toml = (tmp_path / "course.toml").read_text().replace('reference = ""', 'reference = "refs"')
    (tmp_path / "course.toml").write_text(toml)
    report = similarity.find(config.load(tmp_path), log=lines.append)
    assert {(p.a.owner, p.b.owner) for p in report.matches if not p.b.solution} == set(rows)
    assert report.stats[NB].references == 3  # the two files and the course's solution
    (course.out_dir / "similarity.csv").unlink()
    assert main(["--root", str(tmp_path), "similarity", "--reference", "no-such-folder"]) == 2
    assert not (course.out_dir / "similarity.csv").exists()


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_no_grade_file_changes_and_nothing_reaches_students(tmp_path):
    """The command writes similarity.html and .csv only: grades.csv, the gradebook, the
    grading state and the feedback are untouched; the student bundle and the Gradescope zip
    never hold the page."""
    course = make_course(tmp_path)
    for student in ("source", "copier"):
        hand_in(course, student, _source())
    out = course.out_dir
    out.mkdir(parents=True)
    (out / "grades.csv").write_text("student,notebook,flags\nsource,3_transformer,ok\n")
    (course.class_dir / "gradebook.db").write_bytes(b"SQLite format 3\x00")
    record = course.class_dir / "records" / "a3" / "source.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    feedback = course.class_dir / "feedback" / "source" / "a3" / f"{NB}.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text("<p>feedback</p>")
    before = _snapshot(tmp_path)
    assert main(["--root", str(tmp_path), "similarity"]) == 0
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert set(after) - set(before) == {
        "autograder/out/similarity.html",
        "autograder/out/similarity.csv",
    }
    assert "source" in (out / "similarity.html").read_text()
    # the student bundle (make release) and the Gradescope zip (make gradescope)
    with zipfile.ZipFile(release.write_bundle(course, [NB])) as zf:
        assert not [n for n in zf.namelist() if "similarity" in n]
    shipped = [*gradescope.code_files().values(), *gradescope.course_files(course)]
    assert not [p for p in shipped if "similarity" in str(p) and p.suffix != ".py"]
    assert not [p for p in shipped if "out" in Path(p).parts]


def test_settings_are_checked(tmp_path):
    course = make_course(tmp_path)
    assert course.similarity.threshold == config.SimilaritySettings().threshold
    for bad in ("threshold = 1.5", "noise = 2", 'threshold = "high"', "colour = 1"):
        key = bad.split(" = ")[0]
        text = (ROOT / "course.toml").read_text()
        if re.search(rf"^{key} = ", text, re.MULTILINE):
            text = re.sub(rf"^{key} = .*$", bad, text, flags=re.MULTILINE)
        else:
            text = text.replace("[similarity]", f"[similarity]\n{bad}")
        (tmp_path / "course.toml").write_text(text)
        with pytest.raises(config.ConfigError, match=r"\[similarity\]"):
            config.load(tmp_path)
