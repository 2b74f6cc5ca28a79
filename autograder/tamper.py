"""Finding, in a submitted notebook, code that tampers with the test machinery.

A student's answers and the graded tests run in one Jupyter kernel, so an answer cell could
change what the tests compute (``torch.allclose = lambda *a, **k: True``). Before grading, the
autograder calls :func:`scan` on every submitted notebook (static: the code is parsed, never
run); a notebook with findings is graded in the form :func:`neutralise` gives it, each offending
statement replaced by ``pass``, and flagged ``tampered`` with the findings' reasons.

Only student cells are checked (:func:`student_cells`): locked and test cells are restored from
the gradebook anyway. A cell is first transformed as IPython runs it (``!ls`` becomes
``get_ipython().system('ls')``); a cell that does not parse fails on its own: no findings.
In a student cell, a finding is:

1. Assigning to, or deleting, an attribute or item of a *module alias*: a name bound by an
   import anywhere in the notebook, ``builtins``/``__builtins__``, or a name assigned from a
   chain rooted at one (``f = torch.nn.functional``): ``torch.allclose = f``,
   ``F.softmax = f``, ``del torch.allclose``. Matplotlib's ``rcParams`` may be set.
2. Assigning to a dunder attribute anywhere in the target (``Cls.__eq__ = f``,
   ``obj.__dict__[k] = v``), or to an attribute of a computed object (``type(t).add = f``).
3. Rebinding, at module level, a name the tests rely on (:func:`protected_names`): assignment,
   ``def``/``class``, loop, ``with``/``except ... as``, walrus, ``del``, a star import or an
   import of another module (re-importing what the setup imported is fine); ``global`` of such
   a name. Local variables are fine (``len = 3`` in a function, a parameter ``input``).
4. What is only useful to tamper or escape: ``exec``, ``eval``, ``compile``, ``__import__``,
   ``globals``, ``vars``, ``setattr``/``delattr`` (except on ``self``), ``getattr`` with a
   computed name (except on ``self``), writing into ``locals()``, ``exit``/``quit``, shell
   commands and magics (``get_ipython``; ``%matplotlib inline`` is fine); the attributes in
   ``FORBIDDEN_ATTRS`` (``__dict__``, ``__code__``, frames, tracing), also as strings; the
   modules and functions in ``FORBIDDEN`` (``sys.modules``, ``os.system``, ``ctypes``,
   ``subprocess``, torch's global hooks...), imported or used through any alias;
   ``from __future__`` imports but ``annotations`` (one changes the syntax of later cells);
   a module used as a value (``patch(torch)``, ``[checks][0]``), which would hide it from
   rule 1 (plain aliases ``t = torch`` are followed instead); defining ``__torch_function__``
   or ``__torch_dispatch__`` (a tensor subclass whose ``torch.allclose`` always says yes).

A finding belongs to the innermost statement holding the offending code (for rule 3 on a
``def``/``class``, the whole definition): that statement is what :func:`neutralise` removes.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import importlib.machinery
import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from . import notebooks

BUILTIN_NAMES = frozenset(dir(builtins)) - {"_"}  # "_" is only the shell's last result
TAMPER_BUILTINS = frozenset(
    {"exec", "eval", "compile", "__import__", "globals", "vars", "setattr", "delattr"}
    | {"get_ipython", "exit", "quit"}
)
HIDDEN_NAMES = frozenset({"builtins", "__builtins__"})  # both give the builtins module
FORBIDDEN_ATTRS = frozenset(
    {"__builtins__", "__code__", "__globals__", "__closure__", "__dict__", "__kwdefaults__"}
    | {"__subclasses__", "__bases__", "__mro__", "__setattr__", "__delattr__"}
    | {"f_globals", "f_locals", "f_back", "settrace", "setprofile", "addaudithook"}
    | {"__getattribute__", "_getframe", "currentframe"}
    | {"__torch_function__", "__torch_dispatch__"}
)
# Methods that make torch functions return what a class wants (``torch.allclose`` -> True).
TORCH_OVERRIDES = frozenset({"__torch_function__", "__torch_dispatch__"})
# Dotted names (fnmatch patterns), each with everything under it, not to be imported or used.
FORBIDDEN = (
    *("builtins", "ctypes", "gc", "importlib", "inspect", "signal", "subprocess", "socket"),
    *("multiprocessing", "threading", "_thread", "pickle", "marshal", "types", "posix", "pty"),
    *("unittest.mock", "mock", "nbformat", "nbgrader", "pytest"),
    *("IPython.get_ipython", "IPython.core", "operator.attrgetter", "operator.methodcaller"),
    *("torch._C", "torch.library", "torch.overrides", "torch.nn.modules.module.register_module_*"),
    *("sys.modules", "sys.meta_path", "sys.path_hooks", "sys._getframe", "sys.exit"),
    *("os.kill", "os.killpg", "os._exit", "os.abort", "os.fork", "os.forkpty", "os.system"),
    *("os.popen", "os.setsid", "os.exec*", "os.spawn*", "os.posix_spawn*"),
)
IMPORT_ONLY = ("IPython",)  # not to be imported; the setup may import display helpers from it
HARMLESS_MAGICS = {("matplotlib", "inline")}  # %matplotlib inline: plots show in the notebook
HARMLESS_ATTRS = frozenset({"rcParams"})  # settings a student may change (plot sizes)
IPYTHON_CALLS = {  # what get_ipython().<method>(arg) stands for
    "system": "shell command (!{})",
    "getoutput": "shell command (!{})",
    "run_line_magic": "IPython magic %{}",
    "run_cell_magic": "IPython magic %%{}",
}
DICT_WRITES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
MAX_ALIAS_DEPTH = 12  # attributes in an alias's dotted path (``t = t.x`` must not loop)
MAX_ALIAS_PATHS = 64  # dotted names one alias may stand for
REMOVED = "pass  # removed by the autograder: "


@dataclass(frozen=True)
class Finding:
    cell: int  # index of the cell in nb.cells
    line: int  # 1-based line in that cell's (magic-transformed) source
    reason: str  # short human text, e.g. "assigns to torch.allclose (library attribute)"
    code: str  # the offending source line, stripped, at most 120 chars


def student_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of code cells a student may edit: nbgrader metadata (cell.metadata["nbgrader"])
    absent, or an answer (solution=True, graded or not) that is not locked. Locked cells and
    test cells are excluded (the autograder restores those from its gradebook; the intake has
    reset their metadata to the release's, so a student cannot mark a cell locked)."""
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and _editable(cell)]


def _editable(cell: nbformat.NotebookNode) -> bool:
    """A plain cell, or an answer cell (an autograded answer too) that is not locked."""
    if not notebooks.meta(cell):
        return True
    return notebooks.is_solution(cell) and not notebooks.is_locked(cell)


def protected_names(nb: nbformat.NotebookNode) -> set[str]:
    """Names the tests rely on: every name bound by an import (import x, import x as y, from m
    import a, b as c) in any code cell that is NOT a student cell, every name defined by
    `def`/`class` inside a graded test cell (metadata nbgrader.grade True and solution False),
    and every name of Python's `builtins` module."""
    return _Notebook(nb).protected


def scan(nb: nbformat.NotebookNode) -> list[Finding]:
    """The findings in the student cells of ``nb``, by cell and line (rules: module docstring)."""
    return sorted((f for cell in _Notebook(nb).checked() for _, f in cell.found), key=_order)


def neutralise(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[Finding]]:
    """A deep copy of nb in which every statement with a finding is replaced by
    `pass  # removed by the autograder: <reason>` (same indentation, one such line per replaced
    physical line, so line numbers are kept), and the findings. The input is not modified. A
    cell without findings keeps its exact original source."""
    new = copy.deepcopy(nb)
    findings = []
    for cell in _Notebook(nb).checked():
        if cell.found:
            new.cells[cell.index].source = cell.neutralised()
            findings += [f for _, f in cell.found]
    return new, sorted(findings, key=_order)


def _order(finding: Finding) -> tuple[int, int]:
    return finding.cell, finding.line


# --- the notebook: what its cells import, alias and protect ---------------------------------


@dataclass
class _Cell:
    """One code cell as checked: its source as IPython runs it, its tree (None when it does not
    parse) and its (statement, finding)s; the statement is None when the whole cell goes."""

    index: int
    source: str
    tree: ast.Module | None
    found: list[tuple[ast.stmt | None, Finding]] = field(default_factory=list)

    @classmethod
    def parse(cls, index: int, raw: str) -> _Cell:
        source = raw.replace("\r\n", "\n").replace("\r", "\n")  # the line breaks ast counts
        try:
            source = TransformerManager().transform_cell(source)
            return cls(index, source, ast.parse(source))
        except RecursionError:  # too deep for ast (maybe not for the kernel): removed whole
            reason = "code nested too deeply to check"
            return cls(index, source, None, [(None, Finding(index, 1, reason, _code(source, 1)))])
        except Exception:  # IPython cannot transform it or Python parse it: it fails on its own
            return cls(index, source, None)

    def neutralised(self) -> str:
        """The source with the lines of every statement with a finding replaced by ``pass``."""
        lines = self.source.split("\n")
        whole = (1, len(lines) - 1 if lines[-1] == "" else len(lines))
        owners = _owners(self.tree) if self.tree else {}
        spans = sorted(
            (*(_span(s, owners, lines) if s else whole), f.reason) for s, f in self.found
        )
        merged: list[list] = []  # [first, last, reasons]
        for first, last, reason in spans:
            if merged and first <= merged[-1][1]:  # within or overlapping the previous span
                merged[-1][1] = max(last, merged[-1][1])
                merged[-1][2].append(reason)
            else:
                merged.append([first, last, [reason]])
        for first, last, reasons in merged:
            indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
            text = f"{indent}{REMOVED}{'; '.join(dict.fromkeys(reasons))}"
            lines[first - 1 : last] = [text] * (last - first + 1)
        source = "\n".join(lines)
        if TransformerManager().transform_cell(source) != source:  # IPython would change it again
            reason = "could not be neutralised statement by statement"
            lines[whole[0] - 1 : whole[1]] = [REMOVED + reason] * whole[1]
            source = "\n".join(lines)
        return source


class _Notebook:
    """A notebook's code cells parsed, with the names its tests rely on and its module aliases."""

    def __init__(self, nb: nbformat.NotebookNode):
        self.students = set(student_cells(nb))
        self.cells = {
            i: _Cell.parse(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"
        }
        self.paths: dict[str, set[str]] = {}  # name -> dotted names it may refer to
        self.setup_imports: dict[str, set[str]] = {}  # name -> what non-student cells bound it to
        self.defined: set[str] = set()  # functions and classes defined in the notebook
        self.tested: set[str] = set()  # those defined in test cells
        for i, cell in self.cells.items():
            nodes = list(ast.walk(cell.tree)) if cell.tree else []
            for name, bound_to, _ in (imp for node in nodes for imp in _import_names(node)):
                self.paths.setdefault(name, set()).add(bound_to)
                if i not in self.students:
                    self.setup_imports.setdefault(name, set()).add(bound_to)
            defined = {node.name for node in nodes if isinstance(node, DEFS)}
            self.defined |= defined
            if notebooks.is_test(nb.cells[i]):
                self.tested |= defined
        self.protected = set(self.setup_imports) | self.tested | BUILTIN_NAMES
        self.aliases: set[str] = set()  # names given dotted names by assignment
        self._add_aliases([c.tree for c in self.cells.values() if c.tree])

    def _add_aliases(self, trees: list[ast.Module]) -> None:
        """Give each name assigned from a chain rooted at a known name (``t = torch``,
        ``f = torch.nn.functional``) that chain's dotted names, through aliases of aliases."""
        pairs = [(n, v) for tree in trees for n, v in _value_bindings(tree) if _root(v)]
        users: dict[str, list[tuple[str, ast.expr]]] = {}  # root name -> pairs it gives to
        for pair in pairs:
            users.setdefault(_root(pair[1]), []).append(pair)
        work = list(pairs)
        while work:
            name, value = work.pop()
            known = self.paths.setdefault(name, set())
            new = {p for p in self.paths_of(value) if p.count(".") < MAX_ALIAS_DEPTH} - known
            if new and len(known) < MAX_ALIAS_PATHS:
                known |= new
                self.aliases.add(name)
                work += users.get(name, [])

    def paths_of(self, node: ast.AST, local: frozenset[str] = frozenset()) -> set[str]:
        """The dotted names a Name/Attribute chain may refer to: none when it is not rooted at a
        known name or its root is a local variable (``local``) that is not an alias."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or (node.id in local and node.id not in self.aliases):
            return set()
        roots = self.paths.get(node.id, set()) | (
            {"builtins"} if node.id in HIDDEN_NAMES else set()
        )
        return {".".join([root, *reversed(attrs)]) for root in roots}

    def checked(self) -> list[_Cell]:
        """The student cells, with their findings."""
        cells = [self.cells[i] for i in sorted(self.students)]
        for cell in cells:
            if cell.tree and not cell.found:
                cell.found = _Checker(self, cell).findings()
        return cells


def _import_names(node: ast.AST) -> Iterator[tuple[str, str, str]]:
    """(bound name, dotted name it is bound to, dotted name imported) for an import statement:
    ``import a.b`` binds a to a and imports a.b; ``from a import b as c`` binds c to a.b."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.split(".")[0]
            yield alias.asname or top, alias.name if alias.asname else top, alias.name
    elif isinstance(node, ast.ImportFrom):
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            source = f"{base}.{alias.name}" if node.module else base + alias.name
            yield alias.asname or alias.name, source, source


def _value_bindings(tree: ast.AST) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) for every name given a value: assignments (tuples element-wise), walrus,
    loops over a literal list, parameter defaults."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _pairs(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            yield from _pairs(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(
            node.iter, (ast.List, ast.Tuple, ast.Set)
        ):
            for element in node.iter.elts:
                yield from _pairs(node.target, element)
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            with_default = positional[len(positional) - len(node.defaults) :]
            yield from ((a.arg, d) for a, d in zip(with_default, node.defaults, strict=True))
            yield from (
                (a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d
            )


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                yield from _pairs(t, v)


@functools.cache
def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names an installed module, looked up on disk, never imported:
    ``torch.nn`` is one, ``torch.nn.Linear`` is not."""
    top, *parts = dotted.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None or not parts:
        return spec is not None
    folders = list(spec.submodule_search_locations or [])
    for part in parts[:-1]:
        folders = [os.path.join(f, part) for f in folders if os.path.isdir(os.path.join(f, part))]
    last = [os.path.join(f, parts[-1]) for f in folders]
    suffixes = importlib.machinery.all_suffixes()
    return any(os.path.isdir(p) or any(os.path.isfile(p + s) for s in suffixes) for p in last)


# --- checking one cell ----------------------------------------------------------------------


class _Checker:
    """Walks one student cell and collects its findings, one per statement and reason."""

    def __init__(self, nb: _Notebook, cell: _Cell):
        self.nb, self.cell = nb, cell
        self.parents = {c: n for n in ast.walk(cell.tree) for c in ast.iter_child_nodes(n)}

    def findings(self) -> list[tuple[ast.stmt, Finding]]:
        found: dict[tuple[ast.stmt, str], Finding] = {}
        for node, stmt, module_level, local in _walk(self.cell.tree):
            for reason in self.reasons(node, module_level, local):
                reason = " ".join(reason.split())[:160]  # one line: it ends up in a comment
                line = getattr(node, "lineno", None) or stmt.lineno
                code = _code(self.cell.source, line)
                found.setdefault((stmt, reason), Finding(self.cell.index, line, reason, code))
        return [(stmt, finding) for (stmt, _), finding in found.items()]

    def reasons(self, node: ast.AST, module_level: bool, local: frozenset[str]) -> Iterator[str]:
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            yield from self.target_reasons(node, local)
        if module_level:
            yield from self.rebinding_reasons(node)
        if isinstance(node, ast.Global):
            protected = [n for n in node.names if n in self.nb.protected]
            yield from (self.protected("declares", n, "global") for n in protected)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from self.import_reasons(node)
        if isinstance(node, ast.Name) and node.id not in local:
            yield from self.name_reasons(node, local)
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRS:
            yield f"uses {node.attr}"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.name in TORCH_OVERRIDES
        ):
            yield f"defines {node.name} (overrides what torch functions return)"
        if isinstance(node, ast.Constant) and node.value in FORBIDDEN_ATTRS:
            yield f"mentions {node.value}"  # getattr(f, "__globals__")
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            parent = self.parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                yield from self.path_reasons(node, local)

    def target_reasons(self, target: ast.Attribute | ast.Subscript, local) -> Iterator[str]:
        """Rules 1 and 2: an assignment to (or del of) an attribute or item."""
        chain = [target]
        while isinstance(chain[-1], (ast.Attribute, ast.Subscript)):
            chain.append(chain[-1].value)
        attrs = [n.attr for n in chain if isinstance(n, ast.Attribute)]
        what = f"{'deletes' if isinstance(target.ctx, ast.Del) else 'assigns to'} {_text(target)}"
        if any(_is_dunder(a) for a in attrs):
            yield f"{what} (dunder attribute)"
        if isinstance(chain[-1], ast.Name):
            if self.nb.paths_of(chain[-1], local) and not HARMLESS_ATTRS & set(attrs):
                yield f"{what} (library attribute)"
        elif attrs:
            yield f"{what} (attribute of a computed object)"

    def rebinding_reasons(self, node: ast.AST) -> Iterator[str]:
        """Rule 3: a module-level binding of a protected name."""
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            yield f"star import from {node.module} (may rebind names the tests use)"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, source, _ in _import_names(node):
                if name in self.nb.protected and source not in self.nb.setup_imports.get(name, ()):
                    yield self.protected("rebinds", name, f"to {source}")
            return
        deletes = isinstance(getattr(node, "ctx", None), ast.Del)
        for name in sorted(_bound_names(node) & self.nb.protected):
            yield self.protected("deletes" if deletes else "rebinds", name)

    def protected(self, verb: str, name: str, how: str = "") -> str:
        """The reason for touching the protected ``name``."""
        if name in BUILTIN_NAMES and not (name in self.nb.setup_imports or name in self.nb.tested):
            return f"{verb} the builtin {name} {how}"
        return f"{verb} {name} {how} (used by the tests)"

    def import_reasons(self, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        for _, _, imported in _import_names(node):
            if _forbidden(imported, FORBIDDEN + IMPORT_ONLY):
                yield f"imports {imported}"
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            if any(alias.name != "annotations" for alias in node.names):
                yield "imports from __future__ (changes the syntax of later cells)"

    def is_plain_object(self, node: ast.expr, local: frozenset[str]) -> bool:
        """Whether ``node`` is a variable of the notebook or an attribute of one
        (``batch.src``, ``self.w1``), not a library object, builtin, function or class."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if not isinstance(node, ast.Name) or self.nb.paths_of(node, local):
            return False
        return node.id in local or node.id not in BUILTIN_NAMES | self.nb.defined

    def name_reasons(self, node: ast.Name, local: frozenset[str]) -> Iterator[str]:
        """Rule 4 on a builtin name (the caller skips local variables)."""
        call = self.parents.get(node)
        called = isinstance(call, ast.Call) and call.func is node
        if node.id in HIDDEN_NAMES:
            yield f"uses {node.id}"
        elif node.id == "get_ipython":
            reason = self.ipython_reason(call) if called else "uses get_ipython"
            yield from [reason] if reason else []
        elif node.id == "getattr" and called and len(call.args) > 1:
            computed = not isinstance(call.args[1], ast.Constant)
            if computed and not self.is_plain_object(call.args[0], local):
                yield "calls getattr with a computed name"
        elif node.id in TAMPER_BUILTINS:
            on_self = called and call.args and _is_name(call.args[0], "self")
            if not (node.id in ("setattr", "delattr") and on_self):
                yield f"{'calls' if called else 'uses'} {node.id}"
        elif node.id == "locals" and called:
            user = self.parents.get(call)
            if getattr(user, "value", None) is call and (
                (isinstance(user, ast.Subscript) and not isinstance(user.ctx, ast.Load))
                or (isinstance(user, ast.Attribute) and user.attr in DICT_WRITES)
            ):
                yield "writes into locals()"

    def ipython_reason(self, call: ast.Call) -> str:
        """'shell command (!ls)' for get_ipython().system('ls'), 'IPython magic %time'..."""
        method = self.parents.get(call)
        use = self.parents.get(method)
        called = isinstance(use, ast.Call) and use.func is method and use.args
        if called and isinstance(method, ast.Attribute) and method.attr in IPYTHON_CALLS:
            args = tuple(a.value if isinstance(a, ast.Constant) else "..." for a in use.args)
            if method.attr == "run_line_magic" and args in HARMLESS_MAGICS:
                return ""
            return IPYTHON_CALLS[method.attr].format(" ".join(str(args[0]).split())[:60])
        return "calls get_ipython"

    def path_reasons(self, node: ast.Name | ast.Attribute, local) -> Iterator[str]:
        """Rule 4 on a whole chain (``os.system``, ``np``): a forbidden name or a module."""
        user = self.parents.get(node)
        called = isinstance(user, ast.Call) and user.func is node
        aliased = _is_alias_value(node, user)  # t = torch: rule 1 follows t
        for path in sorted(self.nb.paths_of(node, local)):
            if _forbidden(path):
                yield f"{'calls' if called else 'uses'} {path}"
            elif not (called or aliased) and _is_module(path):
                yield f"uses the module {path} as a value"


def _walk(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.stmt, bool, frozenset[str]]]:
    """Every node (iteratively: trees may be deep) with the innermost statement holding it,
    whether a name it binds is global (module level) and the local variables in scope.
    Defaults, decorators and bases belong to the enclosing scope, as in Python."""
    stack = [(tree, None, True, frozenset())]
    while stack:
        node, stmt, module_level, local = stack.pop()
        yield node, stmt, module_level, local
        inner: set[int] = set()
        inner_local: frozenset[str] = frozenset()
        if isinstance(node, SCOPES):
            body = node.body if isinstance(node.body, list) else [node.body]
            inner = {id(child) for child in body}
            inner_local = _local_names(node) if not isinstance(node, ast.ClassDef) else frozenset()
        for child in reversed(list(ast.iter_child_nodes(node))):
            level = module_level and not (
                isinstance(node, ast.comprehension) and child is node.target
            )
            child_stmt = child if isinstance(child, ast.stmt) else stmt
            if id(child) in inner:
                stack.append((child, child_stmt, False, inner_local))
            else:
                stack.append((child, child_stmt, level, local))


def _local_names(scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """A function's local variables: its parameters and what its body binds (not in nested
    functions or comprehensions), less what it declares global or nonlocal and what it imports
    (a module imported in a function is checked like any other)."""
    a = scope.args
    names = {arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg}
    others: set[str] = set()  # declared global or nonlocal, or imported
    stack = list(scope.body) if isinstance(scope.body, list) else [scope.body]
    while stack:
        node = stack.pop()
        is_import = isinstance(node, (ast.Import, ast.ImportFrom))
        (others if is_import else names).update(_bound_names(node))
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            others.update(node.names)
        if not isinstance(node, (*SCOPES, *COMPREHENSIONS)):
            stack.extend(ast.iter_child_nodes(node))
    return frozenset(names - others)


def _bound_names(node: ast.AST) -> set[str]:
    """The names ``node`` itself binds (or deletes) in its scope."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return {node.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {name for name, _, _ in _import_names(node) if name != "*"}
    if isinstance(node, DEFS):
        return {node.name}
    name = getattr(node, "rest" if isinstance(node, ast.MatchMapping) else "name", None)
    is_binder = isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping))
    return {name} if is_binder and name else set()


@functools.cache
def _forbidden(path: str, patterns: tuple[str, ...] = FORBIDDEN) -> bool:
    return any(fnmatchcase(path, p) or fnmatchcase(path, p + ".*") for p in patterns)


def _is_alias_value(node: ast.expr, user: ast.AST | None) -> bool:
    """Whether ``node`` is the value given to plain names (``t = node``, ``t := node``)."""
    if isinstance(user, ast.Assign):
        return user.value is node and all(isinstance(t, ast.Name) for t in user.targets)
    if isinstance(user, (ast.AnnAssign, ast.NamedExpr)):
        return user.value is node and isinstance(user.target, ast.Name)
    return False


def _root(node: ast.expr) -> str | None:
    """The name a Name/Attribute chain starts from (None for anything else)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _text(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "..."
    return text if len(text) <= 60 else text[:57] + "..."


def _code(source: str, line: int) -> str:
    lines = source.split("\n")
    return lines[line - 1].strip()[:120] if 0 < line <= len(lines) else ""


# --- neutralising: which lines to replace ---------------------------------------------------


def _owners(tree: ast.Module) -> dict[ast.stmt, tuple[ast.stmt | None, list[ast.stmt]]]:
    """For each statement: the statement holding it (None at module level) and its body."""
    owners = {}
    stack: list[tuple[ast.AST, ast.stmt | None]] = [(tree, None)]
    while stack:
        node, owner = stack.pop()
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                owners.update((stmt, (owner, value)) for stmt in value)
        stack.extend(
            (c, c if isinstance(c, ast.stmt) else owner) for c in ast.iter_child_nodes(node)
        )
    return owners


def _span(stmt: ast.stmt, owners: dict, lines: list[str]) -> tuple[int, int]:
    """The whole lines (first, last) to replace to remove ``stmt``. Statements sharing a line
    with it (``a = 1; b = 2``) go with it; when it shares its first line with the header of the
    statement holding it (``if x: b = 2``, ``else: b = 2``), that statement goes instead."""
    while True:
        owner, body = owners[stmt]
        i = j = next(k for k, s in enumerate(body) if s is stmt)
        while i > 0 and body[i - 1].end_lineno >= _first_line(body[i]):
            i -= 1
        while j + 1 < len(body) and _first_line(body[j + 1]) <= body[j].end_lineno:
            j += 1
        start = body[i]
        before = lines[start.lineno - 1].encode()[: start.col_offset].decode(errors="replace")
        if owner is None or not before.strip():
            return _first_line(start), body[j].end_lineno
        stmt = owner


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
