"""An advisory scan of student code: notes, for the instructor, code that reaches the grading
machinery or the kernel itself.

Every autograded point is decided by a judge outside the student's kernel (``judge.py``):
nothing a student's code does in the kernel can make a wrong answer pass. So this scan is no
line of defence, and it **reports, it never rewrites**: what is graded is exactly the code the
student wrote, and no finding changes a score. The intake (``intake.py``) calls :func:`scan` on
each notebook it stages; each finding becomes a note under the flag ``review``, for the
instructor only (``grades.csv``, the summary, the class report; never the student's feedback
pages nor Gradescope's ``results.json``). A note names the cell, the line and the rule that
matched (:data:`RULES`), never the student's code.

**What is read.** Only the student's code cells (:func:`student_cells`: the intake has put every
locked and test cell back as released). A cell is read as IPython runs it: IPython's
``TransformerManager`` turns magics and shell escapes into calls (``!ls`` is
``get_ipython().system('ls')``, a ``%%time`` cell a ``run_cell_magic`` call); the code that
``%time``, ``%timeit``, ``%%time``, ``%%timeit``, ``%%capture`` and ``%%prun`` run is read as a
cell of its own. A one-line cell ``config ...`` that is not Python is IPython's automagic
``%config``. A cell that does not parse is skipped (it fails on its own). Names are followed
through imports only, of every code cell (``import os as o``, ``from sys import settrace``,
``import torch.nn.functional as F``): ``o.kill`` is ``os.kill``; ``getattr(x, "name")`` (and
``hasattr``, ``setattr``, ``delattr``) with a constant name is read as ``x.name``. Nothing is
imported or run; the scan is one pass over each cell's syntax tree.

**Rules** (the key of the note in brackets):

1. [kernel] the shell or the kernel: ``get_ipython()`` (also ``IPython.get_ipython()``, or a name
   given it) used for anything but running magics and shell commands (``run_line_magic``,
   ``run_cell_magic``, ``system``, ``getoutput``) or naming its class; importing ``ipykernel``,
   ``jupyter_client``, ``zmq``, ``comm``, ``debugpy`` or ``IPython.core.interactiveshell``.
2. [events] registering IPython event callbacks: ``<x>.events.register(...)``.
3. [transformers] changing how IPython reads or shows cells: its input and AST transformers,
   ``ast_node_interactivity``.
4. [config] ``%config`` (line, cell or automagic), but for ``InlineBackend`` (figure formats).
5. [tracing] tracers and profilers: ``settrace``, ``setprofile``, ``sys.monitoring``, audit hooks.
6. [hooks] the interpreter's hooks: ``displayhook``, ``excepthook``, ``breakpointhook``,
   ``unraisablehook``.
7. [frames] frames: ``sys._getframe``, ``sys._current_frames``, ``inspect.currentframe``,
   ``inspect.stack``, ``inspect.trace``, ``inspect.getouterframes``/``getinnerframes``, and the
   attributes ``f_back``, ``f_globals``, ``f_locals``, ``f_builtins``, ``tb_frame``,
   ``gi_frame``, ``cr_frame``, ``ag_frame``.
8. [code] swapping a code object: assigning ``<x>.__code__`` (or ``setattr`` with it).
9. [modules] writing ``sys.modules``: an item assigned or deleted, or ``update``, ``pop``,
   ``setdefault``, ``popitem``, ``clear``.
10. [patch] replacing something of a library (a name bound by an import, or ``__builtins__``):
    deleting one of its attributes, or assigning one (also ``setattr``, whatever the name) a
    dunder attribute or a value that may be a function or class (a ``lambda``, a function,
    class or import of the notebook, a builtin function, something of a library):
    ``torch.allclose = f``, ``torch.Tensor.__eq__ = f``; the same on the class of an object
    (``type(x).add = f``, ``x.__class__.add = f``). Assigning data is a setting, not noted
    (``torch.backends.cudnn.deterministic = True``; items such as ``os.environ["X"] = "1"``).
11. [torch-override] defining ``__torch_function__`` or ``__torch_dispatch__`` (a class whose
    instances make torch functions return what it wants).
12. [exit] killing or ending a process: ``os.kill``, ``os.killpg``, ``os._exit``, ``os.abort``,
    ``sys.exit``.
13. [signals] the ``signal`` module (signal handlers, alarms).
14. [ctypes] the ``ctypes`` module.
15. [unread] a cell nested too deeply for the scan to read.
16. [delegation] in an answer cell, torch's own version of what the course asks students to
    write (:data:`DELEGATES`): ``nn.GRUCell``, ``nn.GRU``, ``nn.MultiheadAttention``,
    ``nn.Transformer*``, ``F.multi_head_attention_forward``, ``F.scaled_dot_product_attention``,
    ``torch.func.functional_call`` (``nn.utils.stateless.functional_call``), named as the other
    rules name things (through imports and ``getattr``). Results decide points: an answer that
    delegates and computes the right thing keeps them; the note lets the instructor apply the
    course's policy. Only the student's own code is noted: an answer cell's given part (the
    release's cell, ``released`` of :func:`scan`: ``nn.GRUCell`` in the decoder of part 2)
    and every cell outside the answers (the student's own checks against ``nn.GRUCell``) are
    not.

Everyday notebook habits match no rule: shell escapes and magics (``!pip install``,
``%pip``, ``%load_ext autoreload``, ``%autoreload 2``, ``%cd``, ``!ls``, ``!wget``, ``%%time``,
``%timeit``, ``%matplotlib inline``), ``import IPython``, ``from IPython.display import ...``,
``importlib.reload``, star imports, seeds, ``torch.backends`` settings, ``os.environ[...] = ...``,
``requires_grad`` changes, printing, builtins shadowed (``sum = 0``), classes defined twice,
``getattr(F, name)(x)``, ``google.colab``'s ``drive.mount`` (``tests/grader/handin/test_tamper.py``
has one case per habit and per rule). Limits, by design: aliases made by assignment
(``t = torch``), code built from strings (``exec``) and what only running code knows are not
followed.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from autograder.course import spec

RULES = {  # key -> the fixed text of a note (never the student's code)
    "kernel": "reaches the IPython shell or the kernel (get_ipython, ipykernel, zmq, comm)",
    "events": "registers an IPython event callback",
    "transformers": "changes how IPython reads or shows cells (transformers, interactivity)",
    "config": "changes IPython's configuration (%config)",
    "tracing": "installs a tracer or profiler (settrace, setprofile, sys.monitoring)",
    "hooks": "reaches an interpreter hook (displayhook, excepthook)",
    "frames": "walks interpreter frames (sys._getframe, inspect, f_back, f_globals)",
    "code": "swaps a function's code object (__code__)",
    "modules": "writes sys.modules",
    "patch": "replaces a function, class or attribute of a library",
    "torch-override": "defines __torch_function__ or __torch_dispatch__",
    "exit": "kills or ends a process (os.kill, os._exit, sys.exit)",
    "signals": "uses the signal module",
    "ctypes": "uses ctypes",
    "unread": "is nested too deeply for the scan to read",
    "delegation": "calls torch's own version of the asked-for computation (nn.GRUCell, "
    "nn.MultiheadAttention, scaled_dot_product_attention, functional_call...)",
}
ATTRIBUTES = {  # an attribute of these names, on anything (getattr with the name too)
    **dict.fromkeys(
        ("input_transformers_post", "input_transformers_cleanup", "input_transformer_manager")
        + ("ast_transformers", "ast_node_interactivity"),
        "transformers",
    ),
    **dict.fromkeys(
        ("settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads")
        + ("addaudithook", "call_tracing"),
        "tracing",
    ),
    **dict.fromkeys(
        ("displayhook", "excepthook", "breakpointhook", "unraisablehook", "__displayhook__")
        + ("__excepthook__", "__breakpointhook__", "__unraisablehook__"),
        "hooks",
    ),
    **dict.fromkeys(
        ("f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame")
        + ("ag_frame", "_getframe", "_current_frames", "currentframe"),
        "frames",
    ),
}
NAMES = {  # dotted names, each with everything under it, as imported or used
    **dict.fromkeys(("ipykernel", "jupyter_client", "zmq", "comm", "debugpy"), "kernel"),
    "IPython.core.interactiveshell": "kernel",
    "sys.monitoring": "tracing",
    **dict.fromkeys(("inspect.stack", "inspect.trace", "inspect.getouterframes"), "frames"),
    "inspect.getinnerframes": "frames",
    **dict.fromkeys(("os.kill", "os.killpg", "os._exit", "os.abort", "sys.exit"), "exit"),
    "signal": "signals",
    "ctypes": "ctypes",
}
DELEGATES = frozenset(  # torch's versions of what the answers compute (rule 16), with below
    f"torch.{name}"
    for name in (
        "nn.GRUCell", "nn.GRU", "nn.MultiheadAttention", "nn.modules.rnn.GRUCell",
        "nn.modules.rnn.GRU", "nn.modules.activation.MultiheadAttention", "nn.modules.transformer",
        "nn.functional.multi_head_attention_forward", "nn.functional.scaled_dot_product_attention",
        "func.functional_call", "nn.utils.stateless.functional_call", "gru_cell", "gru",
        "_VF.gru_cell", "_VF.gru", "_C._nn.scaled_dot_product_attention",
        "_native_multi_head_attention",
    )
)  # fmt: skip
DELEGATE_PREFIXES = ("torch.nn.Transformer",)  # nn.Transformer, nn.TransformerEncoderLayer...
ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
SHELL_OK = frozenset({"run_line_magic", "run_cell_magic", "system", "getoutput", "__class__"})
CODE_MAGICS = frozenset({"time", "timeit", "capture", "prun"})  # run the code they are given
TIMEIT_VALUES = frozenset({"-n", "-r", "-p", "-v", "-s"})  # options followed by a value
MODULE_WRITES = frozenset({"update", "pop", "setdefault", "popitem", "clear", "__setitem__"})
TORCH_OVERRIDES = frozenset({"__torch_function__", "__torch_dispatch__"})
CLASS_ATTRS = frozenset({"__class__", "__base__", "__bases__", "__mro__"})  # give a class
CALLABLE_BUILTINS = frozenset(n for n in dir(builtins) if callable(getattr(builtins, n)))
AUTOMAGIC_CONFIG = re.compile(r"\s*config\s+\S")
MAX_DOTTED = 16  # parts of a dotted name followed
MAX_DEPTH = 4  # magics in the code of magics (%time %time ...)


@dataclass(frozen=True)
class Finding:
    cell: int  # index of the cell in nb.cells
    line: int  # 1-based line in the cell
    rule: str  # a key of RULES

    @property
    def note(self) -> str:
        """The note for the instructor: the cell (1-based), the line and the rule."""
        return f"cell {self.cell + 1} line {self.line}: {RULES[self.rule]}"


def student_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the code cells a student may edit: no nbgrader metadata, or an answer that is
    not locked (the intake has reset every cell's metadata to the release's)."""
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and _editable(cell)]


def _editable(cell: nbformat.NotebookNode) -> bool:
    if not spec.meta(cell):
        return True
    return spec.is_solution(cell) and not spec.is_locked(cell)


def scan(nb: nbformat.NotebookNode, released: nbformat.NotebookNode | None = None) -> list[Finding]:
    """The findings in the student cells of ``nb``, by cell and line, one per rule and line.
    ``released``: the notebook as released, whose answer cells' given code is not noted for
    delegation (rule 16; None: none given). Both are only read."""
    transformer = TransformerManager()
    trees: dict[int, ast.Module | None] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            trees[i] = _read(transformer, cell.source)
    names = _Names(trees.values())
    checker = _Checker(names, transformer)
    given = _given_delegates(released, names, transformer)
    found: set[Finding] = set()
    for i in student_cells(nb):
        source = nb.cells[i].source
        tree = trees[i]
        if tree is None and "\n" not in source.strip() and AUTOMAGIC_CONFIG.match(source):
            if "InlineBackend" not in source:
                found.add(Finding(i, 1, "config"))
        for line, rule in checker.cell(tree):
            found.add(Finding(i, line, rule))
        if spec.is_solution(nb.cells[i]):  # an answer cell: the student's own answer
            allowed = given.get(spec.grade_id(nb.cells[i]), set())
            for line, name in _delegates(tree, names):
                if name not in allowed:
                    found.add(Finding(i, line, "delegation"))
    return sorted(found, key=lambda f: (f.cell, f.line, f.rule))


def _is_delegate(dotted: str | None) -> bool:
    """Whether ``dotted`` is one of :data:`DELEGATES` (or under one), or starts as
    :data:`DELEGATE_PREFIXES`."""
    if dotted is None:
        return False
    if dotted.startswith(DELEGATE_PREFIXES):
        return True
    while dotted:
        if dotted in DELEGATES:
            return True
        dotted = dotted.rpartition(".")[0]
    return False


def _delegates(tree: ast.Module | None, names: _Names) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of each use of a delegate (rule 16) in ``tree``: a name bound by an
    import, an attribute of one, ``getattr`` of one with a constant name. Of ``a.b.c`` only
    the longest name is counted."""
    inner: set[int] = set()  # attributes that are the value of a longer one
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = _string(node.args[1]) if len(node.args) > 1 else None
            if node.func.id in ATTRIBUTE_BUILTINS and name:
                dotted = names.dotted(ast.Attribute(value=node.args[0], attr=name))
                if _is_delegate(dotted):
                    yield node.lineno, dotted
        if id(node) in inner:
            continue
        dotted = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            dotted = names.imported.get(node.id)
        elif isinstance(node, ast.Attribute):
            dotted = names.dotted(node)
        if _is_delegate(dotted):
            yield node.lineno, dotted


def _given_delegates(
    released: nbformat.NotebookNode | None, names: _Names, transformer: TransformerManager
) -> dict[str | None, set[str]]:
    """The delegates (rule 16) the released answer cells use themselves, by grade id."""
    given: dict[str | None, set[str]] = {}
    for cell in released.cells if released is not None else ():
        if cell.cell_type == "code" and spec.is_solution(cell):
            tree = _read(transformer, cell.source)
            found = {name for _, name in _delegates(tree, names)}
            given.setdefault(spec.grade_id(cell), set()).update(found)
    return given


def _read(transformer: TransformerManager, source: str) -> ast.Module | None:
    """The tree of what IPython runs for ``source``: None when it does not parse, ``_UNREAD``
    when it is nested too deeply to read."""
    try:
        return ast.parse(transformer.transform_cell(source))
    except RecursionError:
        return _UNREAD
    except Exception:  # SyntaxError, ValueError (null bytes)...: it fails on its own
        return None


_UNREAD = ast.Module(body=[], type_ignores=[])


class _Names:
    """What the notebook's imports bind (name -> dotted name), the names given
    ``get_ipython()``, and the functions and classes it defines."""

    def __init__(self, trees):
        self.imported: dict[str, str] = {"__builtins__": "builtins"}
        self.shells: set[str] = set()
        self.defined: set[str] = set()
        for tree in trees:
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        top = alias.name.split(".")[0]
                        self.imported[alias.asname or top] = alias.name if alias.asname else top
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    for alias in node.names:
                        if alias.name != "*":
                            self.imported[alias.asname or alias.name] = (
                                f"{node.module}.{alias.name}"
                            )
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.defined.add(node.name)
                elif isinstance(node, ast.Assign) and _is_shell(node.value, set()):
                    self.shells.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def dotted(self, node: ast.AST) -> str | None:
        """``a.b.c`` with ``a`` bound by an import, as the full dotted name; else None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute) and len(parts) < MAX_DOTTED:
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.imported:
            return None
        return ".".join([self.imported[node.id], *reversed(parts)])

    def may_be_callable(self, value: ast.AST | None, depth: int = 0) -> bool:
        """Whether ``value`` may be a function or class (None: not known)."""
        if value is None or isinstance(value, ast.Lambda):
            return True
        if isinstance(value, ast.Name):
            known = value.id in self.defined or value.id in self.imported
            return known or value.id in CALLABLE_BUILTINS
        if isinstance(value, ast.Attribute):
            return self.dotted(value) is not None
        if depth < MAX_DEPTH and isinstance(value, ast.IfExp):
            return any(self.may_be_callable(v, depth + 1) for v in (value.body, value.orelse))
        if depth < MAX_DEPTH and isinstance(value, ast.BoolOp):
            return any(self.may_be_callable(v, depth + 1) for v in value.values)
        return False


def _is_shell(node: ast.AST, shells: set[str]) -> bool:
    """``get_ipython()``, ``IPython.get_ipython()``, or a name given it."""
    if isinstance(node, ast.Name):
        return node.id in shells
    if not (isinstance(node, ast.Call) and not node.args and not node.keywords):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "get_ipython") or (
        isinstance(func, ast.Attribute) and func.attr == "get_ipython"
    )


def _rule_of(dotted: str | None) -> str | None:
    """The rule a dotted name falls under (:data:`NAMES`, itself or a name above it)."""
    while dotted:
        if dotted in NAMES:
            return NAMES[dotted]
        dotted = dotted.rpartition(".")[0]
    return None


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Checker:
    """The rules applied to the tree of one cell (and to the code its magics run)."""

    def __init__(self, names: _Names, transformer: TransformerManager):
        self.names, self.transformer = names, transformer

    def cell(self, tree: ast.Module | None, offset: int = 0, depth: int = 0):
        """(line, rule) of each finding in ``tree``, lines shifted by ``offset``."""
        if tree is _UNREAD:
            yield 1 + offset, "unread"
        for node in ast.walk(tree) if tree is not None else ():
            for line, rule in self.node(node, depth):
                yield line + offset, rule

    def node(self, node: ast.AST, depth: int) -> Iterator[tuple[int, str]]:
        line = getattr(node, "lineno", 1)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from self.imports(node)
        elif isinstance(node, ast.Attribute):
            yield from self.attribute(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            rule = _rule_of(self.names.imported.get(node.id))
            if rule:
                yield line, rule
        elif isinstance(node, ast.Call):
            yield from self.call(node, depth)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
            yield from self.writes(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in TORCH_OVERRIDES:
                yield line, "torch-override"

    def imports(self, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif node.module and not node.level:
            dotted = [
                f"{node.module}.{a.name}" if a.name != "*" else node.module for a in node.names
            ]
        else:
            dotted = []
        for name in dotted:
            rule = _rule_of(name) or ATTRIBUTES.get(name.rpartition(".")[2])
            if rule:
                yield node.lineno, rule

    def attribute(self, node: ast.Attribute) -> Iterator[tuple[int, str]]:
        rule = ATTRIBUTES.get(node.attr) or _rule_of(self.names.dotted(node))
        if rule:
            yield node.lineno, rule
        if _is_shell(node.value, self.names.shells) and node.attr not in SHELL_OK:
            yield node.lineno, "kernel"
        if node.attr in ("register", "unregister") and isinstance(node.value, ast.Attribute):
            if node.value.attr == "events":
                yield node.lineno, "events"

    def call(self, node: ast.Call, depth: int) -> Iterator[tuple[int, str]]:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic"):
            if _is_shell(func.value, self.names.shells):
                yield from self.magic(node, func.attr == "run_cell_magic", depth)
        if isinstance(func, ast.Attribute) and func.attr in MODULE_WRITES:
            if self.names.dotted(func.value) == "sys.modules":
                yield node.lineno, "modules"
        if not (isinstance(func, ast.Name) and func.id in ATTRIBUTE_BUILTINS):
            return
        if len(node.args) < 2:
            return
        name = _string(node.args[1]) or ""  # "": a name computed when it runs
        target = ast.Attribute(value=node.args[0], attr=name, ctx=ast.Load(), lineno=node.lineno)
        if name:
            yield from self.attribute(target)
        if func.id == "setattr":
            value = node.args[2] if len(node.args) > 2 else None
            yield from self.write(target, value, node.lineno)
        elif func.id == "delattr":
            yield from self.write(target, None, node.lineno, deleting=True)

    def magic(self, node: ast.Call, cell: bool, depth: int) -> Iterator[tuple[int, str]]:
        """A magic run through the shell: ``%config``, and the code of those in CODE_MAGICS."""
        args = [_string(a) for a in node.args]
        if not args or args[0] is None or None in args:
            return
        name, rest = args[0], args[1:]
        if name == "config" and not any("InlineBackend" in a for a in rest):
            yield node.lineno, "config"
        if name not in CODE_MAGICS or depth >= MAX_DEPTH or not rest:
            return
        if cell:  # the body, from the line after the magic's
            code, offset = rest[-1], node.lineno
        else:
            code, offset = _without_options(rest[0]), node.lineno - 1
        yield from self.cell(_read(self.transformer, code), offset, depth + 1)

    def writes(self, node: ast.stmt) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.Delete):
            for target in node.targets:
                for one, _ in _pairs(target, None):
                    yield from self.write(one, None, node.lineno, deleting=True)
            return
        if node.value is None:  # x: int
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = ast.Constant(0) if isinstance(node, ast.AugAssign) else node.value  # x += 1
        for target in targets:
            for one, part in _pairs(target, value):
                yield from self.write(one, part, node.lineno)

    def write(
        self, target: ast.expr, value: ast.expr | None, line: int, deleting: bool = False
    ) -> Iterator[tuple[int, str]]:
        """Assigning ``value`` to ``target`` (or deleting it): rules 8, 9 and 10."""
        if isinstance(target, ast.Name):
            if target.id in TORCH_OVERRIDES:
                yield line, "torch-override"
            return
        if self.names.dotted(target) == "sys.modules":
            yield line, "modules"
            return
        parts, node = [], target
        while isinstance(node, (ast.Attribute, ast.Subscript)) and len(parts) < MAX_DOTTED:
            if self.names.dotted(node.value) == "sys.modules" and isinstance(node, ast.Subscript):
                yield line, "modules"
                return
            parts.append(node.attr if isinstance(node, ast.Attribute) else "[]")
            node = node.value
        if isinstance(target, ast.Attribute) and target.attr == "__code__":
            yield line, "code"
        if not (isinstance(node, ast.Name) and node.id in self.names.imported):
            # an object's class, reached through type(x) or x.__class__: patched like a library's
            via_class = _is_type_call(node) or any(p in CLASS_ATTRS for p in parts)
            if via_class and (deleting or self.names.may_be_callable(value)):
                yield line, "patch"
            return
        dunder = node.id == "__builtins__" or any(_is_dunder(p) for p in parts)
        if isinstance(target, ast.Subscript) and not dunder:
            return  # an item of a library's mapping: a setting (os.environ["X"] = "1")
        if deleting or dunder or self.names.may_be_callable(value):
            yield line, "patch"


def _pairs(target: ast.expr, value: ast.expr | None) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """(target, the value it gets) of an assignment, through tuples of the same length (else
    each part is given the whole value)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        same = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
        for k, one in enumerate(target.elts):
            yield from _pairs(one, value.elts[k] if same else value)
    elif isinstance(target, ast.Starred):
        yield from _pairs(target.value, value)
    else:
        yield target, value


def _is_type_call(node: ast.AST) -> bool:
    """``type(x)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
    )


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _without_options(line: str) -> str:
    """The statement of a ``%time`` or ``%timeit`` line, its options dropped."""
    words = line.split(" ")
    k = 0
    while k < len(words) and (not words[k] or words[k].startswith("-")):
        k += 2 if words[k] in TIMEIT_VALUES else 1
    return " ".join(words[k:])
