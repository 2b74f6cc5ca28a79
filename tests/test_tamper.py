"""The tamper scanner: code in an answer cell that changes the test machinery is found and
neutralised; honest answers, however they are written, are left alone."""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch
from IPython.core.inputtransformer2 import TransformerManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the autograder is a folder of the repository, not installed
    sys.path.insert(0, str(ROOT))

from autograder import intake, judge, tamper  # noqa: E402

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
    ("%pip install requests", "%pip"),
    ("get_ipython().system('ls')", "shell command"),
    # What IPython runs: automagic one-liners (no %), aliases, and magics other than harmless ones
    ("config ZMQInteractiveShell.ast_node_interactivity = 'all'", "IPython magic %config"),
    ("%config ZMQInteractiveShell.ast_node_interactivity = 'all'", "IPython magic %config"),
    ("config InteractiveShell.ast_node_interactivity='last'", "%config"),
    ("ls", "IPython alias ls (shell command)"),
    ("ls -l", "alias ls"),
    ("cat expected.txt", "alias cat"),
    ("mkdir out", "alias mkdir"),
    ("rm -rf out", "alias rm"),
    ("env", "IPython magic %env"),
    ("autocall 2", "IPython magic %autocall"),
    ("reset -f", "IPython magic %reset"),
    ("run other.py", "%run"),
    ("%run other.py", "IPython magic %run"),
    ("%load_ext autoreload", "IPython magic %load_ext"),
    ("%env X=1", "IPython magic %env"),
    ("%autocall 1", "IPython magic %autocall"),
    ("%alias ll2 ls -l", "IPython magic %alias"),
    ("%sx ls", "%sx (shell command)"),
    ("!!ls", "shell command (!ls)"),
    ("%%bash\nls", "IPython magic %%bash (shell command)"),
    ("%%javascript\nalert(1)", "IPython magic %%javascript"),
    ("%%html\n<b>hi</b>", "IPython magic %%html"),
    ("%%writefile helper.py\nx = 1", "IPython magic %%writefile"),
    ("%matplotlib qt", "IPython magic %matplotlib"),
    # ... and the code inside harmless magics, which IPython runs as a cell
    ("%%time\ntorch.allclose = print", "assigns to torch.allclose"),
    ("%%time\n!ls", "shell command (!ls)"),
    ("%%time\nls", "alias ls"),
    ("%time torch.allclose = print", "torch.allclose"),
    ("%time ls", "alias ls"),
    ("%timeit -n1 -r1 torch.allclose = print", "torch.allclose"),
    ("%%timeit -n1 import ctypes\nx = 1", "imports ctypes"),
    ("%%timeit -n1 -r1\nimport subprocess", "imports subprocess"),
    ("%timeit -n1 -r1 -v check_close x = 1", "rebinds check_close by %timeit"),
    ("%%capture check_close\nx = 1", "rebinds check_close by %%capture"),
    ("%%capture\nexec('1')", "calls exec"),
    # The shell and the kernel, reached through their classes, modules and internals
    ("from IPython.core.interactiveshell import InteractiveShell", "IPython.core"),
    ("from IPython import get_ipython", "IPython.get_ipython"),
    ("import IPython.display\nIPython.get_ipython()", "IPython.get_ipython"),
    ("IPKernelApp.instance().shell", "IPKernelApp.instance() (a traitlets singleton"),
    ("InteractiveShell.instance()", "traitlets singleton"),
    ("ZMQInteractiveShell._instance.user_ns['check_close'] = print", "_instance"),
    ("import ipykernel", "imports ipykernel"),
    ("from ipykernel.kernelapp import IPKernelApp", "ipykernel.kernelapp"),
    ("from traitlets.config import SingletonConfigurable", "traitlets"),
    ("import jupyter_client", "jupyter_client"),
    ("import zmq", "imports zmq"),
    ("import tornado.ioloop", "tornado"),
    ("shell.events.register('pre_run_cell', print)", "events.register"),
    ("shell.events.register(name, print)", "events.register (IPython event callbacks)"),
    ("shell.ast_transformers.append(object())", "uses ast_transformers (IPython shell)"),
    ("shell.input_transformers_cleanup.append(str)", "input_transformers_cleanup"),
    ("shell.input_transformers_post.append(str)", "input_transformers_post"),
    ("shell.ast_node_interactivity = 'all'", "ast_node_interactivity"),
    ("shell.run_cell = print", "uses run_cell (IPython shell)"),
    ("hook = 'post_run_cell'", "mentions post_run_cell"),
    # Tracers, hooks, code objects and frames
    ("import sys\nsys.setprofile(print)", "setprofile"),
    ("import sys\nsys.monitoring.use_tool_id(2, 'cheat')", "sys.monitoring"),
    ("from threading import settrace", "threading"),
    ("import sys\nsys.displayhook = print", "displayhook"),
    ("import sys\nsys.excepthook(None, None, None)", "uses excepthook (system hook)"),
    (
        "def f():\n    pass\n\n\nf.__code__ = f.__code__.replace(co_consts=(1,))",
        "replaces a code object",
    ),
    ("code = (lambda: 0).__code__\nprint(code.co_consts)", "co_consts (code object)"),
    ("g = (i for i in [1])\nnamespace = g.gi_frame.f_globals", "gi_frame (frame)"),
    (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    up = e.__traceback__.tb_frame.f_back",
        "tb_frame (frame)",
    ),
    ("async def f():\n    pass\n\n\nf().cr_frame.f_locals", "cr_frame"),
    ("frame = None\nb = frame.f_builtins", "f_builtins"),
    ("frame = None\nframe.f_locals['check_close'] = print", "f_locals (frame)"),
    ("async def g():\n    yield 1\n\n\nnamespace = g().ag_frame.f_globals", "ag_frame (frame)"),
    ("import types\nmake = types.CodeType", "imports types"),
    ("get_ipython().events.register('post_run_cell', print)", "events.register"),
    ("vars()['check_close'] = print", "calls vars"),
    ("print.__self__.isinstance = print", "__self__"),
    # Dunder names built from strings, and computed names on what is not the student's own
    ("x = torch.ones(1)\ngetattr(x, '__cl' + 'ass__').add = print", "computed name (__class__)"),
    ("x = torch.ones(1)\nc = getattr(x, f\"__{'class'}__\")", "computed name (__class__)"),
    ("x = torch.ones(1)\nc = getattr(x, ''.join(['__cla', 'ss__']))", "(__class__)"),
    ("x = torch.ones(1)\nc = getattr(x, chr(95) * 2 + 'class' + chr(95) * 2)", "(__class__)"),
    ("x = torch.ones(1)\nc = getattr(x, b'__class__'.decode())", "(__class__)"),
    ("x = torch.ones(1)\nc = getattr(x, '__ssalc__'[::-1])", "(__class__)"),
    ("def f(x, name):\n    return getattr(x, name)", "calls getattr with a computed name"),
    ("hasattr(torch, 'all' + input())", "calls hasattr with a computed name"),
    ("g = getattr\ng(check_close, '__globals__')", "uses getattr as a value"),
    ("getattr(*['check_close', '__globals__'])", "computed arguments"),
    ("class A:\n    def f(self):\n        setattr(self, '__cl' + 'ass__', A)", "dunder name"),
    ("x = 1\nobject.__getattribute__(x, 'real')", "__getattribute__"),
    ("import sys\ngetattr(sys, 'modules')['torch'] = None", "uses sys.modules"),
    # Tensor classes patched through an instance or a class of a library
    ("x = torch.ones(1)\nx.__class__.add = print", "dunder"),
    ("t = torch.ones(1)\nsetattr(type(t), 'add', print)", "setattr"),
    ("c = type(torch.ones(1))\nc.add = print", "attribute of a class reached through c"),
    ("c = torch.ones(1).__class__\nd = c\nd.__eq__ = print", "d.__eq__"),
    ("torch.Tensor.add = print", "attribute of the library class torch.Tensor"),
    ("nn.Module.__call__ = print", "library class torch.nn.Module"),
    ("torch.backends.cudnn.is_available = lambda: True", "torch.backends.cudnn.is_available"),
    ("torch.allclose = True", "torch.allclose (library attribute)"),
    ("torch.some_new_attribute = 1", "library attribute"),
    # Libraries' modules that are the system's, reached by what they are
    ("np.testing._private.utils.sys.modules['torch'] = None", "sys.modules"),
    ("torch.serialization.pickle.loads(b'')", "(pickle.loads)"),
    ("from torch.serialization import pickle", "imports torch.serialization.pickle (pickle)"),
    ("import gc\ngc.get_referrers(check_close)", "gc"),
    ("import gc\nobjects = gc.get_objects()", "gc"),
    # Rebinding a builtin the tests use to something callable
    ("def my_len(x):\n    return 3\n\n\nlen = my_len", "rebinds the builtin len"),
    ("isinstance = lambda *a: True", "builtin isinstance"),
    ("def cheat():\n    global len\n    len = lambda x: 3", "rebinds the builtin len"),
    ("from operator import length_hint as len", "builtin len"),
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


@pytest.mark.parametrize("answer", HONEST)
def test_honest_answer_is_left_as_it_is(answer):
    nb = make_nb(answer)
    new, findings = tamper.neutralise(nb)
    assert findings == []
    assert new.cells[2].source == answer


@pytest.mark.parametrize(("answer", "word"), ATTACKS)
def test_neutralised_attack_is_gone(answer, word):
    nb = make_nb(answer)
    new, findings = tamper.neutralise(nb)
    assert findings == tamper.scan(nb)
    source = new.cells[2].source
    ast.parse(TransformerManager().transform_cell(source))  # what IPython runs parses
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
    nb = make_nb("x = 1", "torch.allclose = print", "%env Y=2\nz = 3")
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
    nb = make_nb("!ls", "%load_ext autoreload", "%time x = 1", "config X.y = 1", "x = 1\n%env X=1")
    assert [(f.cell, f.line, f.reason, f.code) for f in tamper.scan(nb)] == [
        (2, 1, "shell command (!ls)", "!ls"),
        (4, 1, "IPython magic %load_ext", "%load_ext autoreload"),
        (8, 1, "IPython magic %config", "config X.y = 1"),
        (10, 2, "IPython magic %env", "%env X=1"),
    ]


def test_student_cells_and_protected_names():
    nb = make_nb("x = 1")
    nb.cells.append(new_code_cell("y = 2"))  # a plain cell: the student may edit it
    nb.cells.append(new_code_cell("z = 3", metadata=_meta("q", solution=True, grade=True)))
    nb.cells.append(new_code_cell("w = 4", metadata=_meta("s", locked=True)))
    assert tamper.student_cells(nb) == [2, 4, 5]
    protected = tamper.protected_names(nb)
    assert {"torch", "F", "np", "nn", "check_close", "check_shape", "reference"} <= protected
    assert {"len", "isinstance", "w"} <= protected  # builtins the tests use; what locked cells bind
    assert not {"x", "y", "z", "_", "sum", "print", "max"} & protected


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
    # IPython strips one "In [1]: " per run. What a neutralised cell runs is read again as
    # IPython reads it: here the kernel runs "In [1]: torch.allclose = print", an annotated
    # assignment to In[1] (torch.allclose is only read), before and after neutralising.
    answer = "In [1]: In [1]: torch.allclose = print\n!ls"
    new, findings = tamper.neutralise(make_nb(answer))
    assert [f.reason for f in findings] == ["shell command (!ls)"]
    runs = ast.parse(TransformerManager().transform_cell(new.cells[2].source))
    assert not any(
        isinstance(n, ast.Attribute) and n.attr == "allclose" and isinstance(n.ctx, ast.Store)
        for n in ast.walk(runs)
    )
    assert tamper.scan(new) == []


def test_a_cell_that_ipython_would_read_otherwise_is_written_as_ipython_runs_it():
    # IPython strips doctest prompts (">>> ", and "... " then) only when a ">>>" line is left:
    # without its second line, the cell handed in would no longer parse, so its lines are
    # written as IPython runs them (prompts gone).
    answer = "... x = 1\n>>> !ls"
    new, findings = tamper.neutralise(make_nb(answer))
    assert [(f.line, f.reason) for f in findings] == [(2, "shell command (!ls)")]
    lines = new.cells[2].source.splitlines()
    assert lines[0] == "x = 1" and lines[1] == f"{MARK} shell command (!ls)"
    assert tamper.scan(new) == []


SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_the_course_solutions_have_no_findings(path):
    # What students get: the solution notebook without its instructor-only (judge) cells.
    nb = judge.without_instructor_cells(nbformat.read(path, as_version=4))
    assert tamper.scan(nb) == []


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


def test_a_magic_name_shadowed_by_an_earlier_cell_is_python():
    # A display-only magic (history) is shadowed by a student's variable bound at the top level
    # of an earlier cell; state-changing ones (reset, autocall) only by what a locked cell binds.
    nb = make_nb(
        "history = [0.5, 0.4]\nreset = autocall = 1",
        "history",
        "reset -f",
        "autocall",
        "history",
        setup=SETUP + "env = {'seed': 0}\n",
    )
    nb.cells.insert(2, new_code_cell("history"))  # before the student binds it
    nb.cells.append(new_code_cell("env"))  # bound by the setup: Python
    reasons = {(f.cell, f.reason) for f in tamper.scan(nb)}
    assert reasons == {
        (2, "IPython magic %history"),
        (7, "IPython magic %reset"),
        (9, "IPython magic %autocall"),
    }


def test_a_line_that_only_parses_as_a_magic_is_the_magic_even_when_shadowed():
    nb = make_nb("config = {'lr': 0.1}", "config InteractiveShell.ast_node_interactivity = 'all'")
    assert [f.reason for f in tamper.scan(nb)] == ["IPython magic %config"]


def test_a_cell_that_does_not_parse_fails_on_its_own():
    for answer in ['print "hello"', "x = = 1", "torch.allclose = = print", "def f(:\n    ls"]:
        assert tamper.scan(make_nb(answer)) == [], answer


def test_the_body_of_a_time_cell_is_neutralised_statement_by_statement():
    answer = "%%time\nx = 1\ntorch.allclose = print\nfor i in range(2):\n    !ls\ny = x"
    new, findings = tamper.neutralise(make_nb(answer))
    assert [(f.line, f.reason, f.code) for f in findings] == [
        (3, "assigns to torch.allclose (library attribute)", "torch.allclose = print"),
        (5, "shell command (!ls)", "!ls"),
    ]
    lines = new.cells[2].source.splitlines()
    assert lines[:2] == ["%%time", "x = 1"] and lines[3:4] == ["for i in range(2):"]
    assert lines[2].startswith(MARK) and lines[4].startswith(f"    {MARK}")
    assert lines[5] == "y = x"
    assert tamper.scan(new) == []


def test_a_module_only_a_student_cell_imports_is_never_imported():
    # "this" prints the Zen of Python when imported: the static rule decides instead.
    assert "this" not in sys.modules
    assert tamper.scan(make_nb("import this\nthis.s = 'x'")) == []
    reasons = [f.reason for f in tamper.scan(make_nb("import this\nthis.s = print"))]
    assert reasons == ["assigns to this.s (library attribute)"]
    assert "this" not in sys.modules


def test_a_library_setup_imports_is_looked_up():
    # np.pi is plain data (a setting), np.sum a function; both spelled alike.
    assert tamper.scan(make_nb("np.pi = 3")) == []
    assert [f.reason for f in tamper.scan(make_nb("np.sum = 3"))] == [
        "assigns to np.sum (library attribute numpy.sum)"
    ]


def test_the_line_magics_of_a_running_kernel_are_all_known():
    # KERNEL_LINE_MAGICS is static (the scan must not start a shell): it must hold every line
    # magic and alias of a kernel as the grader starts one, or automagic lines go unseen.
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        code = "print(*sorted(get_ipython().magics_manager.lsmagic()['line']))"
        out: list[str] = []

        def keep(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = client.execute_interactive(code, output_hook=keep, timeout=60)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    magics = set("".join(out).split())
    assert {"config", "ls", "time", "store"} <= magics
    assert magics <= tamper.KERNEL_LINE_MAGICS, magics - tamper.KERNEL_LINE_MAGICS


def test_a_large_notebook_is_scanned_in_linear_time():
    # 20,000 small cells (student cells, locked cells and empty cells): about 3 s of CPU here.
    nb = make_nb("x = 1")
    for k in range(20_000):
        source = ["y = x + 1\nz = [y] * 2", "", "def f(a):\n    return a.sum()", "%time f(1)"]
        if k % 5 == 0:  # a locked cell
            nb.cells.append(new_code_cell(f"w{k} = {k}", metadata=_meta(f"l{k}", locked=True)))
        else:
            nb.cells.append(new_code_cell(source[k % 4]))
    nb.cells.append(new_code_cell("torch.allclose = print"))
    start = time.process_time()  # CPU time: the machine may be shared with other jobs
    new, findings = tamper.neutralise(nb)
    elapsed = time.process_time() - start
    assert [f.cell for f in findings] == [len(nb.cells) - 1]
    assert elapsed < 20, f"{elapsed:.1f} s of CPU for 20,000 cells"
