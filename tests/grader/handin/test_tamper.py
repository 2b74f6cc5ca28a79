"""The advisory scan (``autograder/handin/tamper.py``): it notes, for the instructor, code that
reaches the kernel or the grading machinery, and never changes what is graded. One case per everyday
notebook habit (no finding) and one per rule (a finding); the intake stages the student's own
cells exactly as written, and the notes name a cell, a line and a rule, never the code.
The intake's tamper verdict: a cell as an earlier release of the term had it (the release
history) is not tampering, an edit no release had still is. Delegation to torch's own GRU or
attention is noted in answer cells only, never for the release's given code."""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.course import config, nbgrader_dir
from autograder.course.nbgrader_dir import GradingDir
from autograder.course.spec import spec_of, without_instructor_cells
from autograder.deploy import shards
from autograder.handin import intake, restore, tamper
from autograder.publish import releasehistory
from autograder.reports.rows import is_review_note
from helpers import ROOT, make_course

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
assert isinstance(reference(torch.ones(3)), torch.Tensor) and len(torch.ones(3)) == 3
'''


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


# Everyday notebook habits: never noted (issue 19).
HABITS = {
    "!pip install": "!pip install -q sacrebleu\n!pip install torch==2.3 --quiet",
    "%pip install": "%pip install sacrebleu",
    "%load_ext autoreload, %autoreload 2": "%load_ext autoreload\n%autoreload 2",
    "import IPython": "import IPython\nprint(IPython.__version__)",
    "from IPython.display import": "from IPython.display import display, clear_output, HTML\n"
    "clear_output(wait=True)\ndisplay(HTML('<b>epoch 1</b>'))",
    "importlib.reload": "import importlib\nimport course_lib.checks\n"
    "importlib.reload(course_lib.checks)",
    "from course_lib import *": "from course_lib import *",
    "next(...).requires_grad = False": "model = nn.Linear(2, 2)\n"
    "next(model.parameters()).requires_grad = False",
    "p.requires_grad_(False)": "model = nn.Linear(2, 2)\nfor p in model.parameters():\n"
    "    p.requires_grad_(False)",
    "%%time": "%%time\nmodel = nn.Linear(2, 3)\nout = model(torch.ones(4, 2))",
    "%time": "%time out = F.softmax(torch.ones(3), dim=0)",
    "%timeit": "%timeit -n 2 -r 1 torch.ones(3) @ torch.ones(3)",
    "!nvidia-smi": "!nvidia-smi",
    "%matplotlib inline": "%matplotlib inline\nimport matplotlib.pyplot as plt",
    "torch.manual_seed": "torch.manual_seed(0)\ntorch.cuda.manual_seed_all(0)",
    "np.random.seed": "np.random.seed(0)",
    "random.seed": "import random\nrandom.seed(0)",
    "cudnn.deterministic = True": "torch.backends.cudnn.deterministic = True\n"
    "torch.backends.cudnn.benchmark = False",
    "other torch.backends settings": "torch.backends.cuda.matmul.allow_tf32 = True\n"
    "torch.backends.cudnn.allow_tf32 = False\ntorch.backends.cudnn.enabled = not False",
    "os.environ[...] = ...": "import os\nos.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'\n"
    "os.environ['TOKENIZERS_PARALLELISM'] = 'false'",
    "heavy debug printing": "for i in range(3):\n    print(i, torch.ones(2), flush=True)\n"
    "print(locals().keys(), globals().keys(), vars())\nimport pprint\npprint.pprint(dir(nn))",
    "for type, text in ...": "for type, text in [('a', 'b')]:\n    print(type, text)",
    "sum = 0": "sum = 0\nfor i in range(3):\n    sum += i",
    "input = ...": "input = torch.ones(3)\nlen = len(input)\nid = 3",
    "a class defined twice": "class Net(nn.Module):\n    pass\n\n\n"
    "class Net(nn.Module):\n    def forward(self, x):\n        return x",
    "getattr(F, name)(x)": "def act(name, x):\n    return getattr(F, name)(x)\n\n\n"
    "act('relu', torch.ones(2))",
    "google.colab drive.mount": "from google.colab import drive\ndrive.mount('/content/drive')",
    "%cd": "%cd /content/drive/MyDrive/a3",
    "!ls": "!ls -la",
    "!wget, !unzip": "!wget -q https://example.com/data.zip\n!unzip -o data.zip",
    # and their kin
    "%config InlineBackend": "%config InlineBackend.figure_format = 'retina'",
    "Colab check": "import sys\nIN_COLAB = 'google.colab' in sys.modules or "
    "'google.colab' in str(get_ipython())",
    "shell class name": "print(get_ipython().__class__.__name__)",
    "magics by call": "get_ipython().run_line_magic('matplotlib', 'inline')\n"
    "files = get_ipython().getoutput('ls')",
    "exit() is not noted": "exit_code = 0",
    "a library's settings": "import matplotlib.pyplot as plt\n"
    "plt.rcParams['figure.figsize'] = (8, 4)\nnp.set_printoptions(precision=3)\n"
    "import warnings\nwarnings.filterwarnings('ignore')",
    "an own attribute named kernel": "class Conv(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.kernel = nn.Parameter(torch.ones(3))",
    "a scipy module named signal": "from scipy import signal\nw = signal.windows.hann(5)",
    "an own __eq__": "class Pair:\n    def __eq__(self, other):\n        return True",
    "a counter on the class": "class Pair:\n    count = 0\n\n    def __init__(self):\n"
    "        self.__class__.count += 1\n        type(self).last = self.count",
    "setattr on its own objects": "class Net(nn.Module):\n    def __init__(self, n):\n"
    "        super().__init__()\n        for i in range(n):\n"
    "            setattr(self, f'layer{i}', nn.Linear(2, 2))",
}

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
    # Settings of libraries: plain data, properties, objects that handle their own writes
    "torch.backends.cudnn.deterministic = True",
    "torch.backends.cudnn.benchmark = False",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "import torch\ntorch.backends.cudnn.deterministic = True\n"
    "torch.set_float32_matmul_precision('high')",
    'import os\nos.environ["X"] = "1"',
    'import os\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\ndel os.environ["X"]',
    'import matplotlib.pyplot as plt\nplt.rcParams["figure.figsize"] = (8, 4)',
    "import matplotlib as mpl\nmpl.rcParams.update({'font.size': 9})",
    "np.set_printoptions(precision=3)",
    "np.pi += 1  # plain data of a library: the student's own business",
    "import pandas as pd\npd.options.display.max_rows = 10",
    # Rebinding a builtin that no non-student cell binds, or binding a used one to data
    "sum = 0\nfor x in [1, 2]:\n    sum += x",
    "input = 3",
    "max = 1",
    "input = torch.randn(2, 3)\nlen = len(input)",
    "def max(a, b):\n    return a if a > b else b",
    "def sum(xs):\n    return 0",
    # Harmless magics, with ordinary code
    "%%time\nx = 1",
    "%%time\nmodel = nn.Linear(2, 3)\nout = model(torch.ones(4, 2))\nprint(out.shape)",
    "%%timeit -n 2 -r 1\ntorch.ones(3) @ torch.ones(3)",
    "%time x = 1",
    "x = torch.ones(3)\n%timeit F.softmax(x, dim=0)",
    "%matplotlib inline",
    "%%capture out\nprint('noisy training')",
    "F.softmax?",
    "torch.nn.Linear??",
    "%pinfo torch.allclose",
    "from IPython.display import display, HTML, clear_output\ndisplay(HTML('<b>done</b>'))",
    "import IPython.display as ipd\nipd.display(ipd.Markdown('**x**'))",
    # Dunders and computed names on what is the student's own
    "class A:\n    def name(self):\n        return self.__class__.__name__",
    "class B(nn.Module):\n    def __init__(self):\n        super().__init__()",
    "x = torch.ones(2)\nprint(type(x).__name__, x.__len__())",
    "class A:\n    def get(self, name):\n        return getattr(self, name)",
    "class A:\n    def __init__(self, **kw):\n        for k, v in kw.items():\n"
    "            setattr(self, k, v)",
    "model = nn.Sequential()\nfor i in range(3):\n"
    "    layer = getattr(model, 'layer' + str(i), None)",
    "class Net(nn.Module):\n    def forward(self, x, i):\n        return getattr(self, f'W{i}')(x)",
    "batch = object()\nfor name in ['src', 'tgt']:\n    print(getattr(batch, name, None))",
    "parts = {k: getattr(m, k) for m in [1] for k in ('real', 'imag')}",
    # Names of magics used as names
    "ls = ['a', 'b']\nprint(ls)",
    "time = 3",
    "history = [0.5, 0.4]\nhistory",
    "ls\nx = 1  # two lines: IPython applies no automagic (and ls is a NameError)",
    'print "hello"  # does not parse: fails on its own',
]

# Code that reaches the kernel or the grading machinery: (answer, rule, line of the finding).
NOTED = [
    # kernel
    ("k = get_ipython().kernel", "kernel", 1),
    ("shell = get_ipython()\nsession = shell.kernel.session", "kernel", 2),
    ("import IPython\nIPython.get_ipython().kernel", "kernel", 2),
    ("get_ipython().user_ns['check_close'] = print", "kernel", 1),
    ("import ipykernel", "kernel", 1),
    ("from ipykernel.kernelapp import IPKernelApp\nIPKernelApp.instance()", "kernel", 2),
    ("import zmq", "kernel", 1),
    ("import jupyter_client", "kernel", 1),
    ("from comm import create_comm", "kernel", 1),
    ("import debugpy", "kernel", 1),
    (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()",
        "kernel",
        2,
    ),
    # events, transformers, %config
    ("get_ipython().events.register('pre_run_cell', print)", "events", 1),
    ("ip = get_ipython()\nip.events.register('post_run_cell', print)", "events", 2),
    ("get_ipython().input_transformers_post.append(str)", "transformers", 1),
    ("ip = get_ipython()\nip.input_transformers_cleanup.append(str)", "transformers", 2),
    ("get_ipython().ast_transformers.append(object())", "transformers", 1),
    ("get_ipython().ast_node_interactivity = 'all'", "transformers", 1),
    ("%config InteractiveShell.ast_node_interactivity = 'all'", "config", 1),
    ("config ZMQInteractiveShell.ast_node_interactivity = 'all'", "config", 1),  # automagic
    ("%%time\n%config InteractiveShell.ast_node_interactivity = 'all'", "config", 2),
    # tracers, hooks, frames, code objects
    ("import sys\nsys.settrace(None)", "tracing", 2),
    ("import sys\nsys.setprofile(None)", "tracing", 2),
    ("from sys import settrace", "tracing", 1),
    ("import threading\nthreading.settrace(print)", "tracing", 2),
    ("import sys\nsys.monitoring.use_tool_id(2, 'x')", "tracing", 2),
    ("import sys\nsys.addaudithook(print)", "tracing", 2),
    ("import sys\nsys.displayhook('forged')", "hooks", 2),
    ("import sys\nsys.excepthook = print", "hooks", 2),
    ("import sys\nf = sys._getframe(1)", "frames", 2),
    ("import sys\nf = getattr(sys, '_getframe')(0)", "frames", 2),
    ("import inspect\nf = inspect.currentframe()", "frames", 2),
    ("import inspect\nframes = inspect.stack()", "frames", 2),
    ("def up(frame):\n    return frame.f_back", "frames", 2),
    ("def scope(frame):\n    return frame.f_globals['check_close']", "frames", 2),
    (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame",
        "frames",
        4,
    ),
    ("def f():\n    pass\n\n\nf.__code__ = (lambda: 1).__code__", "code", 5),
    ("def f():\n    pass\n\n\nsetattr(f, '__code__', (lambda: 1).__code__)", "code", 5),
    # sys.modules
    ("import sys\nsys.modules['torch'] = None", "modules", 2),
    ("import sys\ndel sys.modules['course_lib.checks']", "modules", 2),
    ("import sys\nsys.modules.update({'torch': None})", "modules", 2),
    ("import sys\nsys.modules['torch'].allclose = print", "modules", 2),
    # libraries patched
    ("torch.allclose = lambda *a, **k: True", "patch", 1),
    ("torch.Tensor.__eq__ = lambda a, b: True", "patch", 1),
    ("torch.Tensor.add = print", "patch", 1),
    ("torch.nn.Module.__call__ = print", "patch", 1),
    ("F.softmax = abs", "patch", 1),
    ("torch.testing.assert_close = print", "patch", 1),
    ("np.testing.assert_allclose = lambda *a, **k: None", "patch", 1),
    ("from course_lib import checks\nchecks.check_close = print", "patch", 2),
    ("import builtins\nbuiltins.isinstance = lambda *a: True", "patch", 2),
    ("__builtins__.isinstance = print", "patch", 1),
    ("del torch.allclose", "patch", 1),
    ("setattr(torch, 'allclose', print)", "patch", 1),
    ("delattr(torch, 'allclose')", "patch", 1),
    ("def fake(*a):\n    return True\n\n\ntorch.allclose = fake", "patch", 5),
    ("import torch as t2\nt2.equal = torch.allclose", "patch", 2),
    ("torch.allclose, x = print, 1", "patch", 1),
    ("setattr(torch, 'all' + 'close', lambda *a, **k: True)", "patch", 1),
    ("setattr(torch.Tensor, '__' + 'eq' + '__', lambda a, b: True)", "patch", 1),
    ("torch.zeros(1).__class__.sum = lambda *a, **k: torch.tensor(1.0)", "patch", 1),
    ("x = torch.ones(1)\ntype(x).add = print", "patch", 2),
    ("x = torch.ones(1)\nsetattr(type(x), 'add', print)", "patch", 2),
    (
        "class Yes(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True",
        "torch-override",
        3,
    ),
    ("class Yes(torch.Tensor):\n    __torch_dispatch__ = None", "torch-override", 2),
    # processes, signals, ctypes
    ("import os\nos.kill(os.getpid(), 9)", "exit", 2),
    ("import os as o\no.killpg(0, 9)", "exit", 2),
    ("from os import _exit\n_exit(0)", "exit", 2),
    ("import os\nos._exit(0)", "exit", 2),
    ("import sys\nsys.exit(0)", "exit", 2),
    ("import os\nos.abort()", "exit", 2),
    ("import signal\nsignal.signal(signal.SIGINT, print)", "signals", 2),
    ("from signal import alarm\nalarm(1)", "signals", 1),
    ("import ctypes", "ctypes", 1),
    ("from ctypes import pythonapi", "ctypes", 1),
    # ... also in the code that magics run
    ("import sys\n%time sys.settrace(None)", "tracing", 2),
    ("%%time\nimport sys\nsys.settrace(None)", "tracing", 3),
    ("%timeit -n1 -r1 torch.allclose = print", "patch", 1),
    ("%%capture out\nimport ctypes", "ctypes", 2),
    # code the scan cannot read
    ("x = " + "+".join(["1"] * 5000), "unread", 1),
    # delegation (issue 37, item 9): torch's own version of what the answer asks for
    ("class MyGRUCell(nn.Module):\n    def forward(self, x, h):\n"
     "        return nn.GRUCell(3, 4)(x, h)", "delegation", 3),
    ("def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)",
     "delegation", 2),
    ("import torch.nn.functional as G\nout = G.multi_head_attention_forward", "delegation", 2),
    ("from torch.nn import MultiheadAttention as MHA\nlayer = MHA(8, 2)", "delegation", 2),
    ("from torch.func import functional_call\nout = functional_call", "delegation", 2),
    ("y = torch.nn.utils.stateless.functional_call(m, {}, (x,))", "delegation", 1),
    ("layer = nn.TransformerEncoderLayer(8, 2)", "delegation", 1),
    ("rnn = getattr(nn, 'GRU')(3, 4)", "delegation", 1),
    ("h = torch.gru_cell(x, h, *weights)", "delegation", 1),
]  # fmt: skip


@pytest.mark.parametrize("answer", list(HABITS.values()), ids=list(HABITS))
def test_an_everyday_habit_is_not_noted(answer):
    assert tamper.scan(make_nb(answer)) == []


@pytest.mark.parametrize("answer", HONEST)
def test_an_honest_answer_is_not_noted(answer):
    assert tamper.scan(make_nb(answer)) == []


@pytest.mark.parametrize(("answer", "rule", "line"), NOTED)
def test_code_that_reaches_the_machinery_is_noted(answer, rule, line):
    findings = tamper.scan(make_nb(answer))
    assert (2, line, rule) in [(f.cell, f.line, f.rule) for f in findings], findings
    for f in findings:
        assert f.cell == 2 and f.rule in tamper.RULES
        assert f.note == f"cell 3 line {f.line}: {tamper.RULES[f.rule]}"  # fixed text


DELEGATING_GRU = GRU_CELL.replace(
    "        return (1 - z) * g + z * h_prev\n",
    "        cell = nn.GRUCell(self.Wir.in_features, self.Wir.out_features)\n"
    "        return torch.func.functional_call(cell, {}, (x, h_prev))\n",
)


def test_delegation_is_noted_in_answer_cells_only():
    """Only in what the student wrote as an answer: not in the course's cells, not in a cell of
    the student's own (checking their cell against torch's, as the visible test does), not in
    an answer cell's given part (the release's own ``nn.GRUCell`` of part 2's decoder)."""
    nb = make_nb(DELEGATING_GRU)
    assert [(f.cell, f.rule) for f in tamper.scan(nb)] == [(2, "delegation"), (2, "delegation")]
    own_check = "ref = nn.GRUCell(5, 7)\nassert ref(torch.ones(1, 5)).shape == (1, 7)"
    nb = make_nb(GRU_CELL, setup=SETUP + "GIVEN = nn.MultiheadAttention(8, 2)\n")
    nb.cells.insert(3, new_code_cell(own_check))
    assert tamper.scan(nb) == []
    decoder = "class Decoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    given = decoder + "        self.rnn = nn.GRUCell(4, 4)\n"
    released = make_nb(given + "    # YOUR CODE HERE\n")
    answer = given + "\n    def forward(self, x, h):\n        return self.rnn(x, h)\n"
    assert tamper.scan(make_nb(answer), released) == []
    assert [f.rule for f in tamper.scan(make_nb(answer))] == ["delegation"]  # no release given
    sdpa = answer.replace("self.rnn(x, h)", "F.scaled_dot_product_attention(x, h, h)")
    assert [(f.line, f.rule) for f in tamper.scan(make_nb(sdpa), released)] == [(7, "delegation")]


def test_what_the_judge_makes_harmless_is_not_noted():
    # The judge decides every point outside the kernel: rebinding what the tests use, exec,
    # star imports, other modules of the system are the student's own business now.
    for answer in [
        "def check_close(*args, **kwargs):\n    pass",
        "len = lambda x: 3\nisinstance = lambda *a: True",
        "exec('x = 1')\ny = eval('1 + 1')",
        "import pickle, subprocess, gc, types\nfrom numpy import *",
        "t = torch\nt.allclose = print  # an alias made by assignment is not followed",
    ]:
        assert tamper.scan(make_nb(answer)) == [], answer


def test_the_scan_only_reads_the_notebook():
    nb = make_nb(*[answer for answer, _, _ in NOTED], *HABITS.values())
    before = json.dumps(nb, sort_keys=True)
    findings = tamper.scan(nb)
    assert json.dumps(nb, sort_keys=True) == before
    assert {f.rule for f in findings} == set(tamper.RULES)


def test_findings_name_the_cell_and_line_never_the_code():
    answers = [
        "x = 1\nimport ctypes",
        "%%time\nx = 1\nimport ctypes",
        "import sys\n%time sys.exit(1)",
    ]
    findings = tamper.scan(make_nb(*answers))
    assert [(f.cell, f.line, f.rule) for f in findings] == [
        (2, 2, "ctypes"),
        (4, 3, "ctypes"),
        (6, 2, "exit"),
    ]
    assert findings[0].note == "cell 3 line 2: uses ctypes"


def _hand_in(tmp_path: Path, nb: nbformat.NotebookNode) -> GradingDir:
    gdir = GradingDir(tmp_path, "a3")
    folder = gdir.student_dir(gdir.submitted, "s1")
    folder.mkdir(parents=True)
    (folder / "nb.ipynb").write_text(nbformat.writes(nb))
    return gdir


def test_the_intake_stages_the_students_code_as_written(tmp_path):
    released = make_nb("x = None", "y = None")
    spec = spec_of(released, "nb")
    answers = [
        "torch.allclose = lambda *a, **k: True\nimport sys\nsys.settrace(None)",
        "import os\nos.environ['X'] = '1'\n%config InteractiveShell.ast_node_interactivity = 'all'",
    ]
    handed_in = make_nb(*answers)
    handed_in.cells.insert(3, new_code_cell("import ctypes\n!ls"))  # a plain cell of their own
    handed_in.cells[4].source = "pass  # the test cell emptied"  # a course cell: put back
    gdir = _hand_in(tmp_path, handed_in)
    seen, staged = intake.read_student(gdir, "s1", {"nb": released}, {"nb": spec})
    entry = seen.notebooks["nb"]
    assert set(entry.flags) == {"tampered", "review"}
    assert "edited locked cell t0" in entry.notes
    review = [n for n in entry.notes if is_review_note(n)]
    assert review == [
        "review: cell 3 line 1: " + tamper.RULES["patch"],
        "review: cell 3 line 3: " + tamper.RULES["tracing"],
        "review: cell 4 line 1: " + tamper.RULES["ctypes"],
    ] + ["review: cell 6 line 3: " + tamper.RULES["config"]]
    for note in entry.notes:  # the notes never quote the student's code
        assert "allclose" not in note and "settrace(None)" not in note and "!ls" not in note
    intake.stage(gdir, seen, staged)
    graded = nbformat.read(gdir.student_dir(gdir.intake, "s1") / "nb.ipynb", as_version=4)
    mine = [i for i, c in enumerate(handed_in.cells) if i in tamper.student_cells(handed_in)]
    assert [graded.cells[i].source for i in mine] == [handed_in.cells[i].source for i in mine]
    assert graded.cells[4].source == spec.tests["t0"].graded_source  # the course's cell
    assert graded.cells[1].source == SETUP


def test_the_intake_lists_five_findings_then_counts(tmp_path):
    released = make_nb("x = None")
    gdir = _hand_in(tmp_path, make_nb("\n".join(["import ctypes"] * 7)))
    seen, _ = intake.read_student(gdir, "s1", {"nb": released}, {"nb": spec_of(released, "nb")})
    notes = seen.notebooks["nb"].notes
    assert len(notes) == 6 and notes[-1] == "review: and 2 more"
    assert all(is_review_note(n) for n in notes)


def test_no_scan_no_review(tmp_path):
    released = make_nb("x = None")
    gdir = _hand_in(tmp_path, make_nb("import ctypes"))
    spec = {"nb": spec_of(released, "nb")}
    seen, staged = intake.read_student(gdir, "s1", {"nb": released}, spec, scan=False)
    assert seen.notebooks["nb"].flags == [] and seen.notebooks["nb"].notes == []
    assert staged["nb"].cells[2].source == "import ctypes"


def test_syntax_errors_and_course_cells_are_not_noted():
    broken = "def f(:\n    torch.allclose = print\nimport ctypes"
    locked = "torch.allclose = print\nimport ctypes\n!ls"
    nb = make_nb(broken, 'print "hello"', setup=SETUP + locked)
    assert tamper.scan(nb) == []


def test_a_cell_marked_locked_without_a_grade_id_is_still_scanned():
    released = make_nb("y = 1")
    nb = nbformat.reads(nbformat.writes(released), as_version=4)
    locked = {"locked": True, "grade": False, "solution": False, "schema_version": 3}
    nb.cells.insert(3, new_code_cell("import ctypes", metadata={"nbgrader": locked}))
    assert tamper.scan(nb) == []  # nbgrader ignores such a cell, so would the scan
    problems, notes = restore.check_and_restore(nb, released)
    assert "nbgrader" not in nb.cells[3].metadata
    assert any("without a grade id" in n for n in notes), notes
    assert [f.cell for f in tamper.scan(nb)] == [3]


def _earlier_release() -> tuple[nbformat.NotebookNode, nbformat.NotebookNode, restore.Earlier]:
    """(the release students downloaded, the release today, the notebook's release history):
    since the first release, t0's docstring was reworded, a test t_new was added and t1 worth
    2 points instead of 1."""
    first = make_nb("x = None", "y = None")
    today = make_nb("x = None", "y = None")
    today.cells[3].source = today.cells[3].source.replace("keeps", "leaves")
    today.cells[5].metadata.nbgrader["points"] = 2
    added = _meta("t_new", grade=True, locked=True, points=1)
    today.cells.insert(
        4, new_code_cell('"""A test added after the first release."""', metadata=added)
    )
    history = intake.History(
        tuple({"notebooks": intake.release_record({"nb": nb})} for nb in (first, today))
    )
    return first, today, history.of("nb")


def test_cells_of_an_earlier_release_are_not_tampering():
    first, today, earlier = _earlier_release()
    nb = copy.deepcopy(first)
    problems, notes = restore.check_and_restore(nb, today, earlier)
    assert problems == [], problems
    assert notes == ["cells t0, t1, t_new are as an earlier release had them: the current "
                     "release's were graded"]  # fmt: skip
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert ids == [None, "setup", "answer0", "t0", "t_new", "answer1", "t1"]  # t_new put back
    assert nb.cells[6].metadata.nbgrader["points"] == 2  # t1's metadata: today's
    # without the history, the same notebook is tampered with
    problems, _ = restore.check_and_restore(copy.deepcopy(first), today)
    assert sorted(problems) == ["changed the nbgrader metadata of cell t1", "deleted cell t_new",
                                "edited locked cell t0"]  # fmt: skip


def test_an_edit_matching_no_release_is_still_tampering():
    first, today, earlier = _earlier_release()
    for edit in ("source", "points", "delete"):
        nb = copy.deepcopy(first)
        if edit == "source":  # a test edited in a way no release had it
            nb.cells[3].source += "\nassert True"
        elif edit == "points":
            nb.cells[3].metadata.nbgrader["points"] = 5
        else:  # the setup cell, which every release had, deleted
            del nb.cells[1]
        problems, _ = restore.check_and_restore(nb, today, earlier)
        expected = {
            "source": "edited locked cell t0",
            "points": "changed the nbgrader metadata of cell t0",
            "delete": "deleted cell setup",
        }[edit]
        assert expected in problems, (edit, problems)


def test_the_intake_reads_the_release_history_of_the_class(tmp_path):
    first, today, _ = _earlier_release()
    gdir = _hand_in(tmp_path, first)
    spec = {"nb": spec_of(today, "nb")}
    seen, _ = intake.read_student(gdir, "s1", {"nb": today}, spec, scan=False)
    assert "tampered" in seen.notebooks["nb"].flags  # no history yet
    entries = [{"date": d, "notebooks": intake.release_record({"nb": nb})}
               for d, nb in (("first", first), ("today", today))]  # fmt: skip
    path = intake.history_path(gdir)
    assert path == tmp_path / "judges" / "a3.history.json"  # a course directory's own
    course = config.load(make_course(tmp_path / "course"))
    real = nbgrader_dir.real(course)  # the real class reads the course's committed history
    assert intake.history_path(real) == course.grader_dir / "judges" / "a3.history.json"
    _, shard = shards.prepare(course, real, shards.Shard(0, 2))
    assert intake.history_path(shard) == intake.history_path(real)  # and so do its shards
    path.parent.mkdir(parents=True)
    path.write_text(releasehistory.history_json(entries))
    seen, _ = intake.read_student(gdir, "s1", {"nb": today}, spec, scan=False)
    assert seen.notebooks["nb"].flags == [], seen.notebooks["nb"].notes
    path.write_text("{}")
    with pytest.raises(ValueError, match="not a release history"):
        intake.read_student(gdir, "s1", {"nb": today}, spec, scan=False)


def test_student_cells():
    nb = make_nb("x = 1")
    nb.cells.append(new_code_cell("y = 2"))  # a plain cell: the student may edit it
    nb.cells.append(new_code_cell("z = 3", metadata=_meta("q", solution=True, grade=True)))
    nb.cells.append(new_code_cell("w = 4", metadata=_meta("s", locked=True)))
    assert tamper.student_cells(nb) == [2, 4, 5]


def test_nothing_is_imported():
    assert "this" not in sys.modules  # "this" prints the Zen of Python when imported
    findings = tamper.scan(make_nb("import this\nthis.s = print"))
    assert [(f.cell, f.line, f.rule) for f in findings] == [(2, 2, "patch")]
    assert "this" not in sys.modules


SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


def _as_released(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with each solution region replaced as nbgrader's release does."""
    from autograder.course.notebooks import BEGIN_SOLUTION, END_SOLUTION

    released = copy.deepcopy(nb)
    for cell in released.cells:
        lines, inside = [], False
        for line in cell.source.split("\n"):
            if BEGIN_SOLUTION in line:
                inside = True
                lines.append(line[: len(line) - len(line.lstrip())] + "raise NotImplementedError()")
            elif END_SOLUTION in line:
                inside = False
            elif not inside:
                lines.append(line)
        cell.source = "\n".join(lines)
    return released


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_the_course_solutions_have_no_findings(path):
    # What students get: the solution notebook without its instructor-only (judge) cells; the
    # given code of its answer cells (outside the solution regions) is the release's.
    nb = without_instructor_cells(nbformat.read(path, as_version=4))
    assert tamper.scan(nb, _as_released(nb)) == []


def test_a_large_notebook_is_scanned_in_linear_time():
    # 20,000 small cells (student cells, locked cells and empty cells).
    nb = make_nb("x = 1")
    for k in range(20_000):
        source = ["y = x + 1\nz = [y] * 2", "", "def f(a):\n    return a.sum()", "%time f(1)"]
        if k % 5 == 0:  # a locked cell
            nb.cells.append(new_code_cell(f"w{k} = {k}", metadata=_meta(f"l{k}", locked=True)))
        else:
            nb.cells.append(new_code_cell(source[k % 4]))
    nb.cells.append(new_code_cell("torch." * 1000 + "c = 1\nimport ctypes"))  # a long name
    start = time.process_time()  # CPU time: the machine may be shared with other jobs
    findings = tamper.scan(nb)
    elapsed = time.process_time() - start
    assert [(f.cell, f.rule) for f in findings] == [(len(nb.cells) - 1, "ctypes")]
    assert elapsed < 20, f"{elapsed:.1f} s of CPU for 20,000 cells"
