"""The tamper scanner: code in an answer cell that changes the test machinery is found and
neutralised; honest answers, however they are written, are left alone."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the autograder is a folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from autograder import intake, tamper  # noqa: E402

SETUP = """\
import torch
import torch.nn.functional as F
import numpy as np
from torch import nn
from course_lib.checks import check_close, check_shape
"""
TEST = '''\
"""The answer cell keeps torch.allclose and check_close working."""


def reference(x):
    return x


check_close(reference(torch.ones(2)), torch.ones(2))
assert torch.allclose(torch.zeros(2), torch.zeros(2))
'''
MARK = "pass  # removed by the autograder:"


def _meta(grade_id: str, **flags) -> dict:
    meta = {"grade": False, "solution": False, "locked": False, "grade_id": grade_id}
    return {"nbgrader": {**meta, **flags, "schema_version": 3}}


def make_nb(*answers: str, setup: str = SETUP) -> nbformat.NotebookNode:
    """Setup (locked), then per answer: a solution cell and a graded test cell."""
    cells = [
        new_markdown_cell("# Attention"),
        new_code_cell(setup, metadata=_meta("setup", locked=True)),
    ]
    for k, answer in enumerate(answers):
        cells.append(new_code_cell(answer, metadata=_meta(f"answer{k}", solution=True)))
        test = _meta(f"t{k}", grade=True, locked=True, points=1)
        cells.append(new_code_cell(TEST, metadata=test))
    return new_notebook(cells=cells)


ATTACKS = [  # (answer cell, a word its finding's reason must contain)
    ("torch.allclose = lambda *a, **k: True", "torch.allclose"),
    ("torch.testing.assert_close = lambda *a, **k: None", "torch.testing.assert_close"),
    ("np.testing.assert_allclose = print", "np.testing.assert_allclose"),
    ("F.softmax = lambda x, dim: x", "F.softmax"),
    ("nn.functional.softmax = abs", "nn.functional.softmax"),
    ("torch.Tensor.__eq__ = lambda a, b: True", "dunder"),
    (
        "class Yes(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True",
        "__torch_function__",
    ),
    ("class Yes(torch.Tensor):\n    def __torch_dispatch__(self, *a):\n        pass", "dispatch"),
    ("from course_lib import checks\nchecks.check_close = print", "checks.check_close"),
    ("import course_lib\ncourse_lib.checks.check_close = print", "course_lib.checks"),
    ("import builtins\nbuiltins.isinstance = lambda *a: True", "builtins"),
    ("del torch.allclose", "deletes torch.allclose"),
    ("torch.allclose: object = print", "torch.allclose"),
    ("np.pi += 1", "np.pi"),
    ("for torch.allclose in [print]:\n    pass", "torch.allclose"),
    ("t = torch\nt.allclose = print", "t.allclose"),
    ("f = torch.nn.functional\nf.softmax = print", "library attribute"),
    ("a, b = torch, np\na.allclose = print", "a.allclose"),
    ("def patch(t=torch):\n    t.allclose = print", "t.allclose"),
    (
        "class Net(nn.Module):\n    def forward(self, x):\n        torch.allclose = print",
        "allclose",
    ),
    ("x = torch.ones(2)\nx.__class__ = torch.nn.Parameter", "__class__"),
    ("def f():\n    pass\n\n\nf.__code__ = check_close.__code__", "__code__"),
    ("check_close.__defaults__ = ('x', 1e9, 1e9)", "__defaults__"),
    ("type(torch.ones(1)).__eq__ = lambda a, b: True", "computed object"),
    ("getattr(torch, 'testing').assert_close = print", "computed object"),
    ("def check_close(*args, **kwargs):\n    pass", "rebinds check_close"),
    ("class isinstance:\n    pass", "builtin isinstance"),
    ("check_shape = lambda *a: None", "check_shape"),
    ("len = lambda x: 3", "builtin len"),
    ("def reference(x):\n    return 0", "rebinds reference"),
    ("for torch in [np]:\n    pass", "rebinds torch"),
    ("import numpy as torch", "rebinds torch"),
    ("from math import isclose as check_close", "check_close"),
    (
        "import contextlib\nwith contextlib.nullcontext(print) as check_close:\n    pass",
        "check_close",
    ),
    ("if (check_close := print):\n    pass", "check_close"),
    ("try:\n    pass\nexcept Exception as check_shape:\n    pass", "check_shape"),
    ("del check_close", "deletes check_close"),
    ("def cheat():\n    global check_close\n    check_close = print", "global"),
    ("from numpy import *", "star import"),
    ("setattr(torch, 'allclose', print)", "setattr"),
    ("s = setattr\ns(torch, 'allclose', print)", "setattr"),
    ("exec('torch.allclose = print')", "calls exec"),
    ("(lambda: eval('1'))()", "eval"),
    ("code = compile('x = 1', 'f', 'exec')", "compile"),
    ("__import__('torch').allclose = print", "__import__"),
    ("globals()['check_close'] = print", "globals"),
    ("vars(torch)['allclose'] = print", "vars"),
    ("locals()['check_close'] = print", "locals"),
    ("__builtins__.isinstance = print", "__builtins__"),
    ("check_close.__globals__['_allclose'] = print", "__globals__"),
    ("torch.Tensor.__dict__['add']", "__dict__"),
    ("object.__setattr__(torch, 'allclose', print)", "__setattr__"),
    ("getattr(check_close, '__globals__')['_allclose'] = print", "__globals__"),
    ("getattr(check_close, '__glo' + 'bals__')['_allclose'] = print", "computed name"),
    ("torch.nn.modules.module.register_module_forward_hook(print)", "register_module_forward"),
    ("import sys\nsys.modules['torch'].allclose = print", "sys.modules"),
    ("import sys\nsys._getframe(0).f_globals['check_close'] = print", "_getframe"),
    ("import sys\nsys.settrace(None)", "settrace"),
    ("import sys\nsys.exit(0)", "sys.exit"),
    ("exit()", "exit"),
    ("quit()", "quit"),
    ("import ctypes", "imports ctypes"),
    ("import gc\ngc.get_referrers(check_close)", "gc"),
    ("from unittest import mock", "unittest.mock"),
    ("import importlib\nimportlib.reload(torch)", "importlib"),
    ("import inspect\ninspect.currentframe()", "inspect"),
    ("import subprocess", "subprocess"),
    ("import threading", "threading"),
    ("import pickle", "pickle"),
    ("import IPython", "IPython"),
    ("import os\nos.kill(os.getpid(), 9)", "os.kill"),
    ("import os as o\no.system('ls')", "os.system"),
    ("def run():\n    import os\n\n    os.system('ls')", "os.system"),
    ("from os import execv", "os.execv"),
    ("import signal\nsignal.alarm(0)", "signal"),
    ("def patch(m):\n    m.allclose = print\n\n\npatch(torch)", "module torch"),
    ("modules = [np]\nmodules[0].pi = 3", "module numpy"),
    ("from __future__ import barry_as_FLUFL", "__future__"),
    ("!ls", "shell command (!ls)"),
    ("files = !ls", "shell command"),
    ("%time x = 1", "%time"),
    ("%%time\nx = 1", "%%time"),
    ("%pip install requests", "%pip"),
    ("get_ipython().system('ls')", "shell command"),
]

GRU_CELL = '''\
class MyGRUCell(nn.Module):
    """A GRU cell from its equations: x (N, I), h_prev (N, H) -> h_new (N, H)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.Wir = nn.Linear(input_size, hidden_size)
        self.Wiz = nn.Linear(input_size, hidden_size)
        self.Win = nn.Linear(input_size, hidden_size)
        self.Whr = nn.Linear(hidden_size, hidden_size)
        self.Whz = nn.Linear(hidden_size, hidden_size)
        self.Whn = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, h_prev):
        r = torch.sigmoid(self.Wir(x) + self.Whr(h_prev))
        z = torch.sigmoid(self.Wiz(x) + self.Whz(h_prev))
        g = torch.tanh(self.Win(x) + r * self.Whn(h_prev))
        return (1 - z) * g + z * h_prev
'''
ATTENTION = '''\
def attention(queries, keys, values, mask=None):
    """Dot-product attention: queries (N, T, H), keys and values (N, S, H) -> (N, T, H)."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / keys.shape[-1] ** 0.5  # (N, T, S)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    same = torch.einsum("nts,nsh->nth", weights, values)
    return torch.bmm(weights, values), same
'''
HONEST = [
    GRU_CELL,
    ATTENTION,
    "class Encoder(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
    "        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])\n\n"
    "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n"
    "        return x",
    "class Gates(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        for i in range(3):\n            setattr(self, f'w{i}', nn.Linear(2, 2))",
    "h = torch.zeros(2, 5, 3)\nh[:, 0] = 1\nh[..., -1] += 2",
    "w = nn.Parameter(torch.zeros(3))\nw.data.copy_(torch.ones(3))",
    "w = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    w += 1\n    w.grad = None",
    "def scaled(input, scale=2.0):\n    return input * scale",
    "def count(xs):\n    len = 3\n    return len + sum(xs)",
    "import math\nprint(math.sqrt(2))",
    "from torch import nn\nimport torch.nn.functional as F\nimport torch",
    "class BertHead(nn.Module):\n    def __init__(self, hidden, n_labels):\n"
    "        super().__init__()\n        self.dropout = nn.Dropout(0.1)\n"
    "        self.classifier = nn.Linear(hidden, n_labels)\n\n"
    "    def forward(self, cls):  # (N, hidden) -> (N, n_labels)\n"
    "        return self.classifier(self.dropout(cls))",
    'print(f"loss {0.5:.3f}, shape {tuple(torch.zeros(2, 3).shape)}")',
    "model = nn.Linear(2, 2)\nfor p in model.parameters():\n    p.requires_grad = False\n"
    "model.weight.requires_grad = True\nmodel.eval()",
    "import matplotlib.pyplot as plt\nplt.rcParams['figure.figsize'] = (6, 4)",
    "class Memory:\n    def __init__(self):\n        self.__size = 3\n        self._cache = {}",
    "mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)  # (T, T)\n"
    "scores = torch.randn(2, 4, 4).masked_fill(mask, float('-inf'))",
    "results = {}\nresults['gru'] = 0.9\nresults['gru'] += 0.01",
    "x = torch.randn(3, requires_grad=True)\nloss = (x**2).sum()\nloss.backward()\nx.grad.zero_()",
    "try:\n    import tqdm\nexcept ImportError:\n    tqdm = None",
    "from dataclasses import dataclass\n\n\n@dataclass\nclass Config:\n    hidden: int = 8",
    "weights = F.softmax(torch.randn(2, 3), dim=-1)\ncheck_shape(weights, (2, 3))\n"
    "check_close(weights.sum(-1), torch.ones(2))",
    "print(type(torch.zeros(1)).__name__, torch.__version__)",
    "layers = [nn.Linear(3, 3) for _ in range(2)]\nlayers[0].weight.data.fill_(0.0)",
    "def init(m):\n    if isinstance(m, nn.Linear):\n        nn.init.zeros_(m.bias)\n\n\n"
    "nn.Sequential(nn.Linear(2, 2)).apply(init)",
    "input_ids = torch.tensor([[1, 2, 3]])\ntoken_type = torch.zeros_like(input_ids)",
    "x = np.zeros((2, 3))\nx[0, :] = np.arange(3)",
    "sentences = [s.lower() for s in ['A', 'B']]\nlengths = {len(s) for s in sentences}",
    "t = torch\nprint(t.ones(2))",
    "%matplotlib inline\nimport matplotlib.pyplot as plt",
    "class Pick(nn.Module):\n    def forward(self, i):\n        return getattr(self, f'w{i}')",
]


@pytest.mark.parametrize(("answer", "word"), ATTACKS)
def test_attack_is_found(answer, word):
    findings = tamper.scan(make_nb(answer))
    assert findings, f"no finding for {answer!r}"
    assert all(f.cell == 2 for f in findings)
    reasons = [f.reason for f in findings]
    assert any(word in r for r in reasons), f"{word!r} in none of {reasons}"
    for f in findings:
        assert f.code and len(f.code) <= 120 and "\n" not in f.reason


@pytest.mark.parametrize("answer", HONEST)
def test_honest_answer_has_no_finding(answer):
    assert tamper.scan(make_nb(answer)) == []


@pytest.mark.parametrize(("answer", "word"), ATTACKS)
def test_neutralised_attack_is_gone(answer, word):
    nb = make_nb(answer)
    new, findings = tamper.neutralise(nb)
    assert findings == tamper.scan(nb)
    source = new.cells[2].source
    ast.parse(source)
    assert MARK in source
    assert tamper.scan(new) == []
    assert new.cells[1].source == SETUP and new.cells[3].source == TEST


def test_neutralise_keeps_lines_and_honest_code():
    honest = GRU_CELL.splitlines()
    answer = "\n".join(
        honest[:-1]
        + ["        torch.allclose = lambda *a, **k: True"]  # inside forward, before its return
        + honest[-1:]
        + ["x = 1; torch.allclose = print", "if x:", "    y = 2", "else: torch.allclose = print"]
        + ["t = torch", "t.allclose = print", "setattr(torch, 'allclose', print)"]
        + ["exec('torch.allclose = print')", "!ls", "z = 3"]
    )
    nb = make_nb(answer)
    before = json.dumps(nb, sort_keys=True)
    new, findings = tamper.neutralise(nb)
    assert json.dumps(nb, sort_keys=True) == before  # the input is not modified
    old_lines, new_lines = answer.splitlines(), new.cells[2].source.splitlines()
    assert len(new_lines) == len(old_lines)
    ast.parse(new.cells[2].source)
    removed = [k for k, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert [old_lines[k].strip() for k in removed] == [
        "torch.allclose = lambda *a, **k: True",
        "x = 1; torch.allclose = print",
        "if x:",
        "y = 2",
        "else: torch.allclose = print",
        "t.allclose = print",
        "setattr(torch, 'allclose', print)",
        "exec('torch.allclose = print')",
        "!ls",
    ]
    assert all(MARK in new_lines[k] for k in removed)
    reason = "assigns to torch.allclose (library attribute)"
    assert new_lines[len(honest) - 1] == f"        {MARK} {reason}"
    assert {f.line for f in findings} <= {k + 1 for k in removed}


def test_neutralised_notebook_runs_with_torch_intact():
    answers = [
        GRU_CELL + "        torch.allclose = lambda *a, **k: True\n",
        "if True: torch.allclose = lambda *a, **k: True\nx = 1; torch.allclose = print",
        "t = torch\nt.allclose = print\nsetattr(torch, 'allclose', print)",
        "exec('torch.allclose = print')\ndef check_close(*a, **k):\n    pass",
        "!echo hacked\n%time torch.allclose = print",
    ]
    new, findings = tamper.neutralise(make_nb(*answers))
    assert len({f.cell for f in findings}) == len(answers)
    original = torch.allclose
    namespace: dict = {"__name__": "__main__"}
    try:
        for cell in new.cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, "<cell>", "exec"), namespace)
        assert torch.allclose is original
        assert namespace["check_close"].__module__ == "course_lib.checks"
        cell = namespace["MyGRUCell"](3, 4)
        assert cell(torch.zeros(2, 3), torch.zeros(2, 4)).shape == (2, 4)
    finally:
        torch.allclose = original


def test_cell_without_findings_keeps_its_source():
    nb = make_nb("x = 1", "torch.allclose = print", "%time y = 2\nz = 3")
    new, findings = tamper.neutralise(nb)
    assert {f.cell for f in findings} == {4, 6}
    assert new.cells[2].source == "x = 1"
    assert new.cells[6].source.splitlines()[1] == "z = 3"


def test_syntax_error_and_locked_cells_have_no_findings():
    broken = "def f(:\n    torch.allclose = print\nexec('1')"
    locked = "torch.allclose = torch.allclose\nimport subprocess\nexec('1')\n!ls"
    nb = make_nb(broken, setup=SETUP + locked)
    assert tamper.scan(nb) == []
    assert tamper.neutralise(nb)[0] == nb


def test_magics_in_a_student_cell_are_found():
    nb = make_nb("!ls", "%time x = 1")
    assert [(f.cell, f.line, f.reason) for f in tamper.scan(nb)] == [
        (2, 1, "shell command (!ls)"),
        (4, 1, "IPython magic %time"),
    ]


def test_student_cells_and_protected_names():
    nb = make_nb("x = 1")
    nb.cells.append(new_code_cell("y = 2"))  # a plain cell: the student may edit it
    nb.cells.append(new_code_cell("z = 3", metadata=_meta("q", solution=True, grade=True)))
    nb.cells.append(new_code_cell("w = 4", metadata=_meta("s", locked=True)))
    assert tamper.student_cells(nb) == [2, 4, 5]
    protected = tamper.protected_names(nb)
    assert {"torch", "F", "np", "nn", "check_close", "check_shape", "reference"} <= protected
    assert {"len", "isinstance", "print"} <= protected
    assert not {"x", "y", "z", "_"} & protected


def test_reimporting_the_setup_is_fine_but_not_another_module():
    reasons = [f.reason for f in tamper.scan(make_nb("import torch.nn.functional as F"))]
    assert reasons == []
    reasons = [f.reason for f in tamper.scan(make_nb("import torch.nn as F"))]
    assert reasons == ["rebinds F to torch.nn (used by the tests)"]


def test_code_nested_too_deeply_is_removed_whole():
    answer = "x = " + "+".join(["1"] * 5000) + "\ntorch.allclose = print"
    new, findings = tamper.neutralise(make_nb(answer))
    assert [f.reason for f in findings] == ["code nested too deeply to check"]
    assert all(line.startswith(MARK) for line in new.cells[2].source.splitlines())


def test_ipython_prompts_cannot_smuggle_code_past_the_scan():
    # IPython strips one "In [1]: " per run: what the kernel would run after neutralising
    # differs from what was scanned, so the whole cell goes.
    answer = "In [1]: In [1]: torch.allclose = print\n!ls"
    new, findings = tamper.neutralise(make_nb(answer))
    assert findings
    assert "torch.allclose" not in new.cells[2].source


SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_the_course_solutions_have_no_findings(path):
    assert tamper.scan(nbformat.read(path, as_version=4)) == []


def test_a_cell_marked_locked_without_a_grade_id_is_still_scanned():
    released = make_nb("y = 1")
    nb = nbformat.reads(nbformat.writes(released), as_version=4)
    locked = {"locked": True, "grade": False, "solution": False, "schema_version": 3}
    nb.cells.insert(3, new_code_cell("torch.allclose = print", metadata={"nbgrader": locked}))
    assert tamper.scan(nb) == []  # nbgrader ignores such a cell, so would the scan
    problems, notes = intake.check_and_restore(nb, released)
    assert "nbgrader" not in nb.cells[3].metadata
    assert any("without a grade id" in n for n in notes), notes
    assert [f.cell for f in tamper.scan(nb)] == [3]
