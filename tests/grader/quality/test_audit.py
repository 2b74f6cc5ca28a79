"""``make audit``: the mutation operators, and the audit of a small course through the real
pipeline (graded forms, the checks on the live kernel).

The operators are checked on a known snippet: each listed change is made, inside the solution
region only, as a valid program different from the solution, once. The audit runs on the tiny
course of ``tests/fixtures/course`` (``make_course``): every mutant of its three answers is
caught; then one hidden test is weakened (its judge's checks replaced by one that only asks for
a number) and the audit's kill rate for that test drops, ``--cell`` audits only the cell named
(an answer cell or a test cell), and ``[audit] min_killed`` makes the command fail (its last
line ``audit: FAIL (...)``); survivors accepted in ``autograder/audit-accepted.toml`` count as
killed by review and make it pass, and an entry that matches no mutant is reported as stale.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import notebooks, spec
from autograder.quality import audit, mutants
from helpers import ENV, ROOT, autograder, make_course

SNIPPET = '''import math


def attend(a, b, x, w, h, keep):
    """A made-up answer cell."""
    unused = a * 2
    ### BEGIN SOLUTION
    d = a - b
    s = torch.softmax(x @ w.transpose(0, 1) / math.sqrt(h), dim=1)  # (N, k)
    m = torch.tril(torch.ones(3, 3), diagonal=-1)
    y = torch.sigmoid(d) + s.sum(dim=0)
    ### END SOLUTION
    return y
'''


def _changed_lines(mutant: mutants.Mutant) -> list[str]:
    diff = mutant.diff(context=0).splitlines()[3:]
    return [line[1:].strip() for line in diff if line.startswith("+")]


@pytest.fixture(scope="module")
def snippet_mutants() -> list[mutants.Mutant]:
    return mutants.mutants_of_cell(SNIPPET, "nb", "attend")


@pytest.mark.parametrize(
    ("operator", "line"),
    [
        ("swap", "d = b - a"),
        ("drop", "d = a"),
        ("dim", "s = torch.softmax(x @ w.transpose(0, 1) / math.sqrt(h), dim=0)  # (N, k)"),
        ("dim", "s = torch.softmax(x @ w.transpose(0, 1) / math.sqrt(h), dim=2)  # (N, k)"),
        ("transpose", "s = torch.softmax(x @ w / math.sqrt(h), dim=1)  # (N, k)"),
        (
            "transpose",
            "s = torch.softmax(x.transpose(-2, -1) @ w.transpose(0, 1) / math.sqrt(h), dim=1)"
            "  # (N, k)",
        ),
        ("activation", "y = torch.tanh(d) + s.sum(dim=0)"),
        ("activation", "y = d + s.sum(dim=0)"),
        ("activation", "s = x @ w.transpose(0, 1) / math.sqrt(h)  # (N, k)"),
        ("scale", "s = torch.softmax(x @ w.transpose(0, 1), dim=1)  # (N, k)"),
        ("mask", "m = torch.tril(torch.ones(3, 3), diagonal=-2)"),
        ("mask", "m = torch.tril(torch.ones(3, 3), diagonal=0)"),
        ("mask", "m = torch.triu(torch.ones(3, 3), diagonal=-1)"),
        ("earlier", "y = m"),
        ("earlier", "y = s"),
        ("earlier", "y = d"),
    ],
)
def test_each_operator_makes_its_mutant(snippet_mutants, operator, line):
    made = {
        (op, changed)
        for m in snippet_mutants
        for op in m.operators
        for changed in _changed_lines(m)
    }
    assert (operator, line) in made, sorted(made)


def test_mutants_are_valid_distinct_and_inside_the_region(snippet_mutants):
    original = ast.unparse(ast.parse(SNIPPET))
    seen = set()
    for mutant in snippet_mutants:
        program = ast.unparse(ast.parse(mutant.source))  # parses
        assert program != original, mutant.description
        assert program not in seen, f"duplicate: {mutant.description}"
        seen.add(program)
        changed = [
            n
            for n, (a, b) in enumerate(
                zip(SNIPPET.split("\n"), mutant.source.split("\n"), strict=True)
            )
            if a != b
        ]
        assert changed and all(8 <= n + 1 <= 11 for n in changed), (mutant.description, changed)
    assert {op for m in snippet_mutants for op in m.operators} == set(mutants.OPERATORS)
    # the two-argument swap of a symmetric call (transpose(1, 0) is transpose(0, 1)) is not made
    assert not any("w.transpose(1, 0)" in m.source for m in snippet_mutants)


def test_answers_are_the_cells_tests_follow():
    nb = notebooks.read(
        ROOT / "tests" / "fixtures" / "course" / "solutions" / "a3" / "1_sums.ipynb"
    )
    found = mutants.answers(nb, "1_sums")
    assert [(a.cell, a.tests) for a in found] == [("add", ("test_add",)), ("mul", ("test_mul",))]


# --- the audit of a small course --------------------------------------------------------------

WEAK_JUDGE = """@check("mul returns a number", points=1)
def _(student):
    got = student.mul(2, 3)
    assert isinstance(got, (int, float)), "mul(2, 3) should return a number"
"""


def weaken_test_mul(root: Path) -> None:
    """Replace the judge of 1_sums's test_mul by one check that only asks for a number."""
    path = root / "solutions" / "a3" / "1_sums.ipynb"
    nb = notebooks.read(path)
    cells = nb.cells
    at = next(i for i, c in enumerate(cells) if spec.grade_id(c) == "test_mul")
    assert "judge" in cells[at + 1].metadata.get("tags", [])
    cells[at + 1].source = WEAK_JUDGE
    notebooks.write(nb, path)


def audit_json(root: Path) -> dict:
    data = json.loads((root / "autograder" / "out" / "audit.json").read_text())
    return {a["cell"]: a for a in data["answers"]}


def run_audit(root: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "audit", "--jobs", "2", *args]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """The tiny course audited as it is, then with test_mul weakened."""
    root = make_course(tmp_path_factory.mktemp("audit"))
    strong_out = autograder(root, "audit", "--jobs", "2").stdout
    strong = audit_json(root)
    weaken_test_mul(root)
    weak_out = autograder(root, "audit", "--jobs", "2").stdout
    return root, strong_out, strong, weak_out, audit_json(root)


def test_every_mutant_of_the_tiny_course_is_caught(audited):
    _, out, strong, _, _ = audited
    assert set(strong) == {"add", "mul", "shout"}
    for cell, entry in strong.items():
        assert entry["mutants"] >= 2 and entry["rate"] == 1.0, (cell, entry)
        assert not entry["survivors"] and not entry["problems"]
    assert "test_mul" in out and "AUDIT FAILED" not in out
    assert verdict(out) == "audit: PASS (lowest killed share 1.00 in 1_sums/add >= 0.00)"


def test_weakening_a_hidden_test_lowers_its_kill_rate(audited):
    _, _, strong, out, weak = audited
    before, after = strong["mul"], weak["mul"]
    assert after["mutants"] == before["mutants"]  # the same mutants of the answer
    assert after["tests"]["test_mul"]["killed"] < before["tests"]["test_mul"]["killed"]
    assert after["rate"] < before["rate"]
    assert after["survivors"], "the weakened test lets wrong answers through"
    # the survivors are reported as diffs, confirmed in fresh kernels
    mul_row = next(line for line in out.splitlines() if line.strip().startswith("test_mul"))
    assert (
        mul_row.split()[-1] == f"{100 * after['tests']['test_mul']['killed'] // after['mutants']}%"
    )
    assert "survivors of 1_sums mul" in out and "+++ mul (mutant" in out
    outcomes = [o for o in after["outcomes"] if o["id"] in after["survivors"]]
    assert all(o["confirmed"] for o in outcomes)
    # the other answers' tests are untouched
    assert weak["add"]["rate"] == weak["shout"]["rate"] == 1.0


def test_cell_filter_audits_one_answer(audited):
    root, *_ = audited
    autograder(root, "audit", "--cell", "shout", "--no-confirm")
    assert set(audit_json(root)) == {"shout"}
    autograder(root, "audit", "--cell", "test_add", "--no-confirm")  # a test: its answer
    assert set(audit_json(root)) == {"add"}
    proc = run_audit(root, "--cell", "no_such_cell")
    assert proc.returncode == 2 and "no answer cell or graded test cell" in proc.stderr


def verdict(out: str) -> str:
    """The audit's verdict: the last line of its summary (only the report's path follows)."""
    lines = [line for line in out.split("\n") if line.strip()]
    found = [i for i, line in enumerate(lines) if line.startswith(("audit: PASS", "audit: FAIL"))]
    assert len(found) == 1 and found[0] >= len(lines) - 2, lines[-3:]
    return lines[found[0]]


def strict(root: Path) -> None:
    """``[audit] min_killed = 0.9`` in the course's settings (once)."""
    toml = root / "course.toml"
    if "min_killed = 0.9" not in toml.read_text():
        toml.write_text(toml.read_text() + "\n[audit]\nmin_killed = 0.9\nshow = 1\n")


def test_min_killed_fails_the_audit(audited):
    root, *_ = audited
    strict(root)
    proc = run_audit(root, "--cell", "mul", "--no-confirm")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "AUDIT FAILED" in proc.stdout and "mul (" in proc.stdout
    assert "< min_killed" in proc.stdout
    rate = audit_json(root)["mul"]["rate"]
    assert (
        verdict(proc.stdout) == f"audit: FAIL (lowest killed share {rate:.2f} in 1_sums/mul < 0.90)"
    )
    proc = run_audit(root, "--cell", "add", "--no-confirm")  # its tests are strong
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert verdict(proc.stdout).startswith("audit: PASS (lowest killed share 1.00 in 1_sums/add")


def test_accepted_mutants_count_as_killed_by_review(audited):
    root, *_ = audited
    strict(root)
    run_audit(root, "--cell", "mul", "--no-confirm")
    weak = audit_json(root)["mul"]
    survivors = [o for o in weak["outcomes"] if o["id"] in weak["survivors"]]
    assert len(survivors) >= 2 and weak["rate"] < 0.9
    later = [o for o in weak["outcomes"] if o["killed_at"] and "test_mul" not in o["killed_at"]]
    assert not later  # mul is the last answer of its notebook: review alone decides
    # the first survivor by its id, the others by their changed line, as the audit prints them
    entries = [(survivors[0]["id"], "accepted by its id")]
    for o in survivors[1:]:
        added = next(line for line in o["diff"].split("\n")[2:] if line.startswith("+"))
        entries.append((added[1:].strip(), f"line {o['line']}"))
    entries.append(("product = a ** b", "a mutant the operators never make"))
    text = "".join(
        f'[[accepted]]\nnotebook = "1_sums"\ncell = "mul"\nmutant = {json.dumps(m)}\n'
        f'reason = "{reason}"\n\n'
        for m, reason in entries
    )
    accepted = root / "autograder" / audit.ACCEPTED_FILE
    accepted.write_text(text)
    try:
        proc = run_audit(root, "--cell", "mul", "--no-confirm")
    finally:
        accepted.unlink()
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert verdict(out) == "audit: PASS (lowest killed share 1.00 in 1_sums/mul >= 0.90)"
    reviewed = audit_json(root)["mul"]
    assert reviewed["survivors"] == [] and reviewed["rate"] == 1.0
    assert set(reviewed["reviewed"]) == {o["id"] for o in survivors}
    assert reviewed["reviewed"][survivors[0]["id"]] == "accepted by its id"
    stale = "1_sums/mul 'product = a ** b': matches no mutant any more"
    assert f"STALE accepted mutant (audit-accepted.toml): {stale}" in out
    assert "accepted as harmless" in out and "survivors of 1_sums mul" not in out
    report = (root / "autograder" / "out" / "audit.md").read_text()
    assert "killed by review" in report and "Reason: accepted by its id" in report
    assert f"- {stale}" in report


def test_accepted_entries_are_checked(tmp_path):
    path = tmp_path / audit.ACCEPTED_FILE
    assert audit.load_accepted(path) == []
    path.write_text('[[accepted]]\nnotebook = "1_sums"\ncell = "mul"\nmutant = "x"\n')
    with pytest.raises(ValueError, match="entry 1 needs exactly notebook, cell, mutant, reason"):
        audit.load_accepted(path)
    path.write_text('[[accepted]]\nnotebook = "n"\ncell = "c"\nmutant = "m"\nreason = "r"\n')
    assert audit.load_accepted(path) == [audit.Accepted("n", "c", "m", "r")]
