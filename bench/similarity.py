"""Benchmark of ``make similarity`` (autograder/tools/similarity.py): seconds for a generated class.

    python bench/similarity.py                              # 100 and 1,000 students, 3_transformer
    python bench/similarity.py --students 100 1000 3000 --notebook 5a_decoding

For each class size N, a scratch course holds one notebook and N students, each handing in
the student copy with answers drawn at random from the notebook's correct answers: the
solution and the other correct ways of ``tests/variant_sets/`` (each variant applied or not),
their local variables renamed, and one to four lines of their own (a shape assert, a print, a
cast, with numbers of their own) in each answer. One student in fifty copies another's answers
(names changed, a comment added).

The table: the seconds of ``similarity.find`` (reading, fingerprinting, comparing; wall and
CPU time of this process: on a shared machine, compare the CPU times) and of writing the page
and the CSV; the pairs that share an uncommon fingerprint (proposed by the inverted index) and
those copydetect compared (the others could not reach the threshold); what comparing every
pair with copydetect's ``compare_files`` would take instead (timed on up to 20,000 random
pairs, scaled to the N(N-1)/2 pairs); the planted copies listed and the other pairs listed;
and the growth of the CPU time from one size to the next (the exponent b of time ~ N^b: 1 is
linear, 2 is every pair). Generated answers are mostly the solution's code, which the whole
class shares and which does not count as a match, so a copy of one scores only the lines the
copied student wrote: many planted copies stay under the threshold (a lead needs code of one's
own to find).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import math
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the autograder and the variant sets

from copydetect import compare_files  # noqa: E402

from autograder.course import config, notebooks, spec  # noqa: E402
from autograder.tools import similarity  # noqa: E402

SETS = {"1_gru": "gru", "2_additive_attention": "attention", "3_transformer": "transformer",
        "4_bert": "bert", "5a_decoding": "decoding", "5b_copying_subwords": "copying"}  # fmt: skip
EXTRA_LINES = (  # a student's own lines; the numbers make each one the student's
    'assert {v}.shape[{a}] > {b}, "expected a batch"',
    "print({a}, tuple({v}.shape), {v}.flatten()[:{b}])",
    "{v} = {v}.contiguous().view(*{v}.shape[:{a}], -1) * {b}",
    "{v} = {v}.float().clamp(min=-{a}e{b})",
    "n_rows, n_cols = {v}.shape[{a}], {v}.shape[-{b}]",
    "assert not torch.isnan({v}[:{a}]).any() and {v}.numel() > {b}",
    "{v} = torch.where({v}.abs() < 1e-{a}, {v}.new_zeros(()), {v})[..., :{b}]",
    "if {v}.shape[0] > {a}: {v} = {v}[: {a} * {b}]",
)
ASSIGNED = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(?:,\s*[a-z_][a-z0-9_]*\s*)?=[^=]", re.MULTILINE)


def solution_cells(name: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The solution's answer cells without markers, and each one's solution region lines."""
    nb = notebooks.read(ROOT / "solutions" / "a3" / f"{name}.ipynb")
    cells, regions = {}, {}
    for cell in nb.cells:
        if cell.cell_type == "code" and spec.is_solution(cell):
            gid = spec.grade_id(cell)
            cells[gid] = spec.without_markers(cell.source)
            regions[gid] = [line for r in notebooks.regions(cell).solutions for line in r]
    return cells, regions


def student_cells(name: str, rng: random.Random) -> dict[str, str]:
    """One student's answers: the solution, each correct variant applied with probability 1/2,
    local names renamed, and one to four lines of their own per answer region."""
    cells, regions = solution_cells(name)
    module = importlib.import_module(f"variant_sets.{SETS[name]}")
    for variant in module.VARIANTS:
        if variant.correct and rng.random() < 0.5:
            if all(old in cells[gid] for gid, old, _ in variant.edits):
                for gid, old, new in variant.edits:
                    cells[gid] = cells[gid].replace(old, new)
    for gid, lines in regions.items():
        region = "\n".join(lines)
        if not region.strip() or region not in cells[gid]:
            continue
        names = sorted(set(ASSIGNED.findall(region)) - {"self"})
        new = region
        for _ in range(rng.randint(1, 4)):
            if not names:
                break
            body = new.split("\n")
            at = rng.randint(1, len(body))
            indent = re.match(r"\s*", body[at - 1]).group(0)
            extra = rng.choice(EXTRA_LINES).format(
                v=rng.choice(names), a=rng.randint(1, 9), b=rng.randint(10, 999)
            )
            new = "\n".join([*body[:at], indent + extra, *body[at:]])
        for old in names:
            if rng.random() < 0.5:
                new = re.sub(rf"\b{old}\b", f"{old}_{rng.randint(0, 99)}", new)
        cells[gid] = cells[gid].replace(region, new)
    return cells


def copied(cells: dict[str, str], rng: random.Random) -> dict[str, str]:
    """A copy of another student's answers: some names changed, a comment added."""
    out = {}
    for gid, source in cells.items():
        for old in sorted(set(ASSIGNED.findall(source)) - {"self"}):
            if rng.random() < 0.7:
                source = re.sub(rf"\b{old}\b", f"my_{old}", source)
        out[gid] = "# my own work\n" + source
    return out


def make_class(root: Path, name: str, n: int, seed: int = 0) -> tuple[config.Course, set]:
    """A scratch course with notebook ``name`` and ``n`` students; the copied pairs."""
    shutil.copy2(ROOT / "course.toml", root / "course.toml")
    for folder in ("solutions", "assignments"):
        (root / folder / "a3").mkdir(parents=True)
        shutil.copy2(ROOT / folder / "a3" / f"{name}.ipynb", root / folder / "a3")
    course = config.load(root)
    released = notebooks.read(course.assignments_dir / f"{name}.ipynb")
    rng = random.Random(seed)
    answers: dict[str, dict[str, str]] = {}
    copies = set()
    for i in range(n):
        student = f"s{i:05d}"
        if i >= 10 and rng.random() < 0.02:
            original = rng.choice(sorted(answers))
            answers[student] = copied(answers[original], rng)
            copies.add(frozenset((student, original)))
        else:
            answers[student] = student_cells(name, rng)
        nb = released.copy()
        nb.cells = [c.copy() for c in released.cells]
        for cell in nb.cells:
            if spec.grade_id(cell) in answers[student]:
                cell.source = answers[student][spec.grade_id(cell)]
        path = course.grader_dir / "submitted" / student / "a3" / f"{name}.ipynb"
        notebooks.write(nb, path)
    return course, copies


def all_pairs_seconds(course: config.Course, name: str, sample: int = 20_000) -> float:
    """Seconds copydetect's ``compare_files`` would take on every pair of the class's answers
    (without the common fingerprints left out): timed on up to ``sample`` random pairs."""
    released = {name: notebooks.read(course.assignments_dir / f"{name}.ipynb")}
    stub = similarity.stub_hashes(released[name], course.similarity.noise)
    submitted = course.grader_dir / "submitted"
    prints = []
    for folder in sorted(submitted.iterdir()):
        answers, _ = similarity.read_student(folder / "a3", folder.name, released, lambda _: None)
        prints.append(similarity.fingerprint(answers[name].code, course.similarity.noise, stub))
    pairs = list(itertools.combinations(range(len(prints)), 2))
    chosen = random.Random(0).sample(pairs, min(sample, len(pairs)))
    start = time.process_time()
    for i, j in chosen:
        compare_files(prints[i], prints[j])
    return (time.process_time() - start) * len(pairs) / len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--notebook", default="3_transformer", choices=sorted(SETS))
    args = parser.parse_args()
    print(f"{args.notebook}: answers from the solution and tests/variant_sets/"
          f"{SETS[args.notebook]}.py")  # fmt: skip
    print(f"{'N':>6} {'find s':>7} {'CPU s':>6} {'write s':>7} {'proposed':>9} {'compared':>9} "
          f"{'all pairs CPU s':>16} {'copies listed':>14} {'others listed':>14} "
          f"{'growth':>7}")  # fmt: skip
    previous = None
    for n in args.students:
        with tempfile.TemporaryDirectory(prefix="bench-similarity-") as tmp:
            course, copies = make_class(Path(tmp), args.notebook, n)
            start, cpu = time.perf_counter(), time.process_time()
            report = similarity.find(course, log=lambda line: None)
            found, cpu = time.perf_counter() - start, time.process_time() - cpu
            start = time.perf_counter()
            similarity.write(report, course)
            written = time.perf_counter() - start
            every = all_pairs_seconds(course, args.notebook)
        stats = report.stats[args.notebook]
        listed = {frozenset((p.a.owner, p.b.owner)) for p in report.pairs}
        growth = "" if previous is None else (
            f"{math.log(cpu / previous[1]) / math.log(n / previous[0]):.2f}"
        )  # fmt: skip
        print(f"{n:>6} {found:>7.1f} {cpu:>6.1f} {written:>7.1f} {stats.candidates:>9} "
              f"{stats.compared:>9} {every:>16.1f} {len(copies & listed):>7} of {len(copies):<4} "
              f"{len(listed - copies):>14} {growth:>7}", flush=True)  # fmt: skip
        previous = (n, cpu)


if __name__ == "__main__":
    main()
