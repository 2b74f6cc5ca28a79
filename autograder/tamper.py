"""Finding, in a submitted notebook, code that reaches the grading machinery.

A student's answers and the graded probes run in one Jupyter kernel, but the verdict of every
test is computed outside it, by a judge, from the plain data the probes hand back: patching a
check in the kernel cannot make a wrong answer pass. This scan is the *second line*: it flags,
for the instructor to see, code in a student cell that reaches the machinery (the shell, the
kernel, frames, code objects, tracers, library functions and classes), and it must never cost an
honest student anything. The intake calls :func:`neutralise` on every submitted notebook: each
statement with a finding is replaced by ``pass  # removed by the autograder: <reason>`` and the
notebook is flagged ``tampered`` with the reasons. The scan is static: code is parsed, never
run. Only student cells are checked (:func:`student_cells`): the others are restored from the
release.

**What IPython runs.** A cell is read as a kernel's shell reads it. IPython's
``TransformerManager`` first (``!ls`` becomes ``get_ipython().system('ls')``, a ``%%time`` cell a
``run_cell_magic`` call); then, when that leaves one line, IPython's prefilter as a kernel sets
it up (automagic on, autocall off): a line that starts with the name of a line magic or alias
(:data:`KERNEL_LINE_MAGICS`: a static list taken from a running ipykernel, which a test checks
against one), not followed by ``=`` or ``,``, is that magic (``config X.y = 'all'`` is
``%config``, ``cat f`` the shell), unless the name is shadowed: a builtin, a keyword, a name the
kernel defines, or a name bound at the top level of an earlier cell outside any block (of a
non-student cell for any magic; of any cell for the display-only magics in
:data:`SHADOWABLE_MAGICS`, so that ``history`` shows a student's variable). A line that does
not parse as Python is the magic even then (shadowed, it would fail anyway). A cell that does
not parse fails on its own: no finding.

**Magics.** ``%time``, ``%%time``, ``%timeit``, ``%%timeit`` and ``%%capture`` run Python code,
which is read and checked as a cell of its own (IPython transforms it as a cell), the body of
such a cell magic statement by statement; they are fine, and so are ``%matplotlib inline`` and
help (``obj?``, ``%pinfo obj``). Every other magic, alias and shell escape (``!cmd``, ``!!cmd``,
``%sx``, ``%%bash``, ``%config``, ``%run``, ``%load_ext``...) is a finding that names it.

**Rules.** In a student cell ("a library" is what a name bound by an import refers to, also
through aliases: ``t = torch``, ``f = torch.nn.functional``, ``def g(t=torch)``):

1. *Replacing a library's function, class or module*: assigning to or deleting an attribute or
   item of a library (``torch.allclose = f``, ``del F.softmax``, ``for torch.x in ...``).
   Writing a *setting* is fine, and what is reached decides. The target is looked up in the
   real module, imported lazily (once per process) when a non-student cell imports it; ``os``,
   ``sys`` and ``builtins`` are always looked up, and a module that only student cells import is
   never imported. An attribute of a class (``torch.Tensor.add``, ``nn.Module.__call__``) is a
   finding. An attribute of a module or other object is a setting when its current value is
   plain data (``None``, bool, number, str, bytes, and lists, tuples, sets and dicts of those:
   ``np.pi``), a property of the object's type (``torch.backends.cudnn.deterministic``), or
   missing from an object whose class handles its own writes with ``__setattr__``
   (``torch.backends.cuda.matmul.allow_tf32``); an item is a setting when the mapping's current
   value for it, or every value of the mapping or list, is plain data (``os.environ["X"]``).
   Matplotlib's ``rcParams`` is always a setting. Anything else (a function, class, module or
   other object, a new attribute, a deletion) is a finding. When the target cannot be looked up
   (a module only student cells import, a path through an item), the conservative rule: a
   setting if the value assigned is a literal (``True``, ``(8, 4)``) and no name on the way is
   private (``_x``) or a class (capitalised); otherwise a finding.
2. *Patching a class*: assigning to or deleting a dunder attribute anywhere in the target
   (``Cls.__eq__ = f``, ``obj.__dict__[k] = v``, ``x.__class__.add = f``), an attribute of a
   computed object (``type(t).add = f``, ``getattr(torch, "testing").x = f``), or an attribute
   of a name given a class by ``type(x)``, ``x.__class__``, ``__mro__``... (``c = type(t)``).
3. *Rebinding a name the tests rely on* (:func:`protected_names`), at module level or as a
   global. A name a non-student code cell binds by ``import``, ``def`` or ``class`` may not be
   rebound at all (assignment, ``def``/``class``, loop, ``with``/``except ... as``, walrus,
   ``del``, an import of something else, a star import, ``global``); re-importing what the
   setup imported is fine. A name a non-student cell binds otherwise (``device = ...``), or a
   builtin it uses (``len``), may be rebound to data (``sum = 0``, ``input = batch.src``) but
   not to what may be a function, class or module: ``def``/``class``, an import, a ``lambda``,
   an alias of a builtin, of a function or class of the notebook or of a library object
   (``len = my_len``). A builtin no non-student cell uses, and local variables, are the
   student's own business.
4. *Reaching the machinery*:

   - the shell and the kernel: ``get_ipython``, magics and shell escapes (above), the modules
     ``IPython`` (but for the display helpers of ``IPython.display``), ``ipykernel``,
     ``jupyter_client``, ``jupyter_core``, ``traitlets``, ``zmq``, ``tornado``, ``comm`` and
     ``debugpy``; the shell's internals, as attributes or strings (:data:`MACHINERY_ATTRS`:
     ``ast_node_interactivity``, ``ast_transformers``, input transformers, ``run_cell``,
     ``user_ns``, ``_instance``, ``pre_run_cell``...), ``events.register``, and
     ``X.instance()`` (a traitlets singleton: the shell, the kernel app) on anything but the
     student's own objects and classes;
   - frames, code objects, tracers and hooks, as attributes or strings (``f_globals``,
     ``f_back``, ``tb_frame``, ``gi_frame``, ``__code__``, ``co_code``, ``settrace``,
     ``displayhook``, ``excepthook``...), and ``.replace(co_...=...)``;
   - namespaces and class internals (``__dict__``, ``__globals__``, ``__builtins__``,
     ``__self__``, ``__subclasses__``, ``__mro__``, ``__getattribute__``, ``__setattr__``...);
   - ``exec``, ``eval``, ``compile``, ``__import__``, ``globals``, ``vars``, writing into
     ``locals()``, ``exit``/``quit``, ``builtins``/``__builtins__``; ``setattr``/``delattr``
     but on ``self`` (and there, not with a dunder name); ``getattr``/``hasattr`` used as values
     or with a computed name, except on ``self``, and on the student's own objects with a name
     whose constant start cannot spell anything above (``getattr(model, f"layer{i}")``) or that
     only takes constant strings (``for name in ["src", "tgt"]``). Names built from strings are
     folded (``"__cl" + "ass__"``, f-strings, ``"".join``, ``chr``, ``.decode()``, slices...):
     such a dunder or machinery name is a finding anywhere;
   - the modules and functions in :data:`FORBIDDEN` (``sys.modules``, ``sys.settrace``,
     ``os.system``, ``ctypes``, ``gc``, ``inspect``, ``types``, ``subprocess``, torch's global
     hooks...), imported or used through any alias, and also by what they are: a module met on
     the way restarts the name (``torch.serialization.pickle`` is ``pickle``); where the name
     cannot be looked up, a part named like a system module (:data:`SYSTEM_MODULES`: ``sys``,
     ``os``, ``builtins``...) is taken for it (``np.testing._private.utils.sys.modules``);
   - ``from __future__`` imports but ``annotations``; a module used as a value
     (``patch(torch)``); defining ``__torch_function__`` or ``__torch_dispatch__``.

A finding belongs to the innermost statement holding the offending code (for rule 3 on a
``def``/``class``, the whole definition; for a line magic, its line; in a ``%%time`` cell, the
statement of the body): that statement is what :func:`neutralise` removes. Limits, by design:
what only the running code knows (what a function returns, whether an earlier cell raised
before binding a name, magics that a setup cell's extension registers) is not followed.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import keyword
import numbers
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase

import IPython.display
import nbformat
from IPython.core import magic_arguments
from IPython.core.inputtransformer2 import TransformerManager
from IPython.core.magics.execution import ExecutionMagics
from IPython.core.splitinput import LineInfo

from . import notebooks

BUILTIN_NAMES = frozenset(dir(builtins)) - {"_"}  # "_" is only the shell's last result
TAMPER_BUILTINS = frozenset(
    {"exec", "eval", "compile", "__import__", "globals", "vars", "setattr", "delattr"}
    | {"get_ipython", "exit", "quit"}
)
HIDDEN_NAMES = frozenset({"builtins", "__builtins__"})  # both give the builtins module
_CODE_ATTRS = ("__code__", "gi_code", "cr_code", "ag_code", "f_code")
_CODE_OBJECT = (  # the attributes of a code object (types.CodeType), Python 3.11 to 3.13
    *("co_argcount", "co_cellvars", "co_code", "co_consts", "co_exceptiontable", "co_filename"),
    *("co_firstlineno", "co_flags", "co_freevars", "co_kwonlyargcount", "co_lines"),
    *("co_linetable", "co_lnotab", "co_name", "co_names", "co_nlocals", "co_positions"),
    *("co_posonlyargcount", "co_qualname", "co_stacksize", "co_varnames"),
)
_SHELL_ATTRS = (  # IPython's shell and ipykernel's kernel
    *("ast_node_interactivity", "ast_transformers", "input_transformers_cleanup"),
    *("input_transformers_post", "input_transformer_manager", "input_splitter"),
    *("prefilter_manager", "magics_manager", "alias_manager", "register_magic_function"),
    *("register_magics", "run_line_magic", "run_cell_magic", "find_magic", "find_line_magic"),
    *("find_cell_magic", "run_cell", "run_cell_async", "run_ast_nodes", "run_code"),
    *("transform_cell", "transform_ast", "should_run_async", "showtraceback", "_showtraceback"),
    *("set_custom_exc", "custom_exceptions", "user_ns", "user_global_ns", "user_ns_hidden"),
    *("user_module", "display_pub", "display_formatter", "pre_run_cell", "post_run_cell"),
    *("pre_execute", "post_execute", "shell_handlers", "control_handlers", "do_execute"),
    *("iopub_socket", "_instance", "getoutput", "system_piped", "system_raw", "kernel_info"),
    *("payload_manager", "execution_count", "history_manager", "builtin_trap", "display_trap"),
)
_ATTR_GROUPS = {  # what an attribute (or the same string given to getattr) reaches
    "frame": (
        *("f_globals", "f_builtins", "f_locals", "f_back", "f_trace", "f_trace_lines"),
        *("f_trace_opcodes", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "_getframe"),
        *("currentframe", "_current_frames"),
    ),
    "code object": _CODE_ATTRS + _CODE_OBJECT,
    "tracing": ("settrace", "setprofile", "call_tracing", "addaudithook"),
    "system hook": (
        *("displayhook", "excepthook", "breakpointhook", "unraisablehook"),
        *("__displayhook__", "__excepthook__", "__breakpointhook__", "__unraisablehook__"),
    ),
    "IPython shell": _SHELL_ATTRS,
    "namespace": (
        *("__builtins__", "__globals__", "__dict__", "__closure__", "__kwdefaults__"),
        *("__self__", "__loader__", "__spec__"),
    ),
    "class internals": (
        *("__subclasses__", "__bases__", "__base__", "__mro__", "mro", "__objclass__"),
        *("__setattr__", "__delattr__", "__getattribute__"),
    ),
    "torch override": ("__torch_function__", "__torch_dispatch__"),
}
MACHINERY_ATTRS = {name: what for what, names in _ATTR_GROUPS.items() for name in names}
# Methods that make torch functions return what a class wants (``torch.allclose`` -> True).
TORCH_OVERRIDES = frozenset({"__torch_function__", "__torch_dispatch__"})
EVENT_METHODS = frozenset({"register", "unregister", "trigger", "callbacks"})  # shell.events.*
SINGLETON_METHODS = frozenset({"instance", "initialized", "clear_instance"})  # traitlets
# Expressions giving a class: ``x.__class__``, ``C.__base__``...; ``__mro__[i]``, ``mro()[i]``.
CLASS_ATTRS = frozenset({"__class__", "__base__", "__objclass__"})
CLASS_LISTS = frozenset({"__mro__", "__bases__", "mro"})
# Dotted names (fnmatch patterns), each with everything under it, not to be imported or used.
FORBIDDEN = (
    *("builtins", "ctypes", "gc", "importlib", "inspect", "signal", "subprocess", "socket"),
    *("multiprocessing", "threading", "_thread", "pickle", "marshal", "types", "posix", "pty"),
    *("code", "codeop", "runpy", "pkgutil", "zipimport", "imp"),
    *("unittest.mock", "mock", "nbformat", "nbgrader", "pytest"),
    *("IPython", "ipykernel", "jupyter_client", "jupyter_core", "traitlets", "zmq", "tornado"),
    *("comm", "debugpy", "operator.attrgetter", "operator.methodcaller"),
    *("torch._C", "torch.library", "torch.overrides", "torch.nn.modules.module.register_module_*"),
    *("sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.exit"),
    *("sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.monitoring"),
    *("sys.call_tracing", "sys.addaudithook", "sys.displayhook", "sys.excepthook"),
    *("sys.__displayhook__", "sys.__excepthook__", "sys.breakpointhook", "sys.unraisablehook"),
    *("os.kill", "os.killpg", "os._exit", "os.abort", "os.fork", "os.forkpty", "os.system"),
    *("os.popen", "os.setsid", "os.exec*", "os.spawn*", "os.posix_spawn*"),
)
# IPython.display's display helpers (display, HTML, Markdown, clear_output...) may be used.
DISPLAY_NAMES = frozenset(
    n
    for n in dir(IPython.display)
    if not n.startswith("_") and not inspect.ismodule(getattr(IPython.display, n))
)
HARMLESS_ATTRS = frozenset({"rcParams"})  # settings a student may change (plot sizes)
ALWAYS_LOOKED_UP = frozenset({"builtins", "os", "sys"})  # imported by every Python process
# Module names that no library uses for a submodule of its own: met in a dotted name that cannot
# be looked up, they are taken for the system module (``lib.utils.sys.modules``).
SYSTEM_MODULES = frozenset(
    {"sys", "os", "builtins", "gc", "ctypes", "importlib", "subprocess", "pickle", "marshal"}
    | {"_thread", "posix", "pty", "inspect", "ipykernel", "IPython", "traitlets"}
)

# --- what a kernel's shell runs ---------------------------------------------------------------
# The line magics and aliases of a kernel (IPython 9.18, ipykernel 7.4, with its default
# extension storemagic): ``get_ipython().magics_manager.lsmagic()["line"]`` in a running kernel.
# tests/test_tamper.py starts a kernel and checks that this list holds all of its line magics.
KERNEL_ALIASES = frozenset(
    {"cat", "cp", "ldir", "lf", "lk", "ll", "ls", "lx", "mkdir", "mv", "rm", "rmdir"}
)
KERNEL_LINE_MAGICS = KERNEL_ALIASES | {
    *("alias", "alias_magic", "autoawait", "autocall", "automagic", "autosave", "bookmark"),
    *("cd", "clear", "code_wrap", "colors", "conda", "config", "connect_info", "debug", "dhist"),
    *("dirs", "doctest_mode", "ed", "edit", "env", "gui", "hist", "history", "killbgscripts"),
    *("less", "load", "load_ext", "loadpy", "logoff", "logon", "logstart", "logstate", "logstop"),
    *("lsmagic", "macro", "magic", "mamba", "man", "matplotlib", "micromamba", "more", "notebook"),
    *("page", "pastebin", "pdb", "pdef", "pdoc", "pfile", "pinfo", "pinfo2", "pip", "popd"),
    *("pprint", "precision", "prun", "psearch", "psource", "pushd", "pwd", "pycat", "pylab"),
    *("qtconsole", "quickref", "recall", "rehashx", "reload_ext", "rep", "rerun", "reset"),
    *("reset_selective", "run", "save", "sc", "set_env", "store", "subshell", "sx", "system"),
    *("tb", "time", "timeit", "unalias", "unload_ext", "uv", "who", "who_ls", "whos", "xdel"),
    "xmode",
}
# Magics that only show something: a student's variable of that name, bound at the top level of
# an earlier cell, shadows them (a cell ``history`` shows the variable). Any other magic is
# shadowed only by a name that a non-student cell binds.
SHADOWABLE_MAGICS = frozenset(
    {"config", "debug", "dhist", "dirs", "hist", "history", "lsmagic", "magic", "page", "pdef"}
    | {"pdoc", "pfile", "pinfo", "pinfo2", "pprint", "precision", "psearch", "psource", "pwd"}
    | {"quickref", "save", "tb", "time", "timeit", "who", "who_ls", "whos", "logstate"}
)
# What the kernel puts in the user namespace (shadows magics, like builtins and keywords).
KERNEL_NAMESPACE = frozenset(
    {"In", "Out", "_", "__", "___", "__builtin__", "__builtins__", "__doc__", "__loader__"}
    | {"__name__", "__package__", "__spec__", "_dh", "_i", "_ih", "_ii", "_iii", "_oh", "exit"}
    | {"get_ipython", "open", "quit"}
)
SHADOWING = BUILTIN_NAMES | frozenset(keyword.kwlist) | KERNEL_NAMESPACE
SHELL_MAGICS = frozenset(
    {"!", "bash", "sh", "script", "sx", "system", "sc", "perl", "ruby", "python", "python2"}
    | {"python3", "pypy"}
)
HELP_ARGUMENT = re.compile(r"\s*\?*[\w.]*\?*\s*")  # obj?, obj??, %pinfo obj: a dotted name
IPYTHON_CALLS = ("system", "getoutput", "run_line_magic", "run_cell_magic")
MAX_MAGIC_DEPTH = 8  # magics in the code of magics (%time %time ...)

DICT_WRITES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)
BLOCKS += (ast.TryStar,) if hasattr(ast, "TryStar") else ()
MAX_ALIAS_DEPTH = 12  # attributes in an alias's dotted path (``t = t.x`` must not loop)
MAX_ALIAS_PATHS = 64  # dotted names one alias may stand for
MAX_FOLD = 256  # characters of a name built from strings that are followed
MAX_DATA = 2000  # items of a library container looked at to call it plain data
REMOVED = "pass  # removed by the autograder: "
_MISSING = object()


@dataclass(frozen=True)
class Finding:
    cell: int  # index of the cell in nb.cells
    line: int  # 1-based line in the cell (as IPython transforms it when that moves lines)
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
    """Names the tests rely on (rule 3): every name that a code cell which is NOT a student cell
    binds at module level (import, def, class, assignment, loop...), and every builtin such a
    cell uses. Those bound by import, def or class may not be rebound by a student at all; the
    others only not to something that may be a function, class or module."""
    return set(_Notebook(nb).protected)


def scan(nb: nbformat.NotebookNode) -> list[Finding]:
    """The findings in the student cells of ``nb``, by cell and line (rules: module docstring)."""
    book = _Notebook(nb)
    return sorted((f for i in book.checked() for _, f in book.check(book.cells[i])), key=_order)


def neutralise(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[Finding]]:
    """A deep copy of nb in which every statement with a finding is replaced by
    `pass  # removed by the autograder: <reason>` (same indentation, one such line per replaced
    physical line, so line numbers are kept), and the findings. The input is not modified. A
    cell without findings keeps its exact original source; in a cell with findings, the lines
    without one are kept as handed in (magics included) when IPython moves no line, else as
    IPython transforms them. What is written is read again as IPython would: if it still has a
    finding or does not parse, the whole cell is removed."""
    new = copy.deepcopy(nb)
    book = _Notebook(nb)
    findings = []
    for i in book.checked():
        found = book.check(book.cells[i])
        if found:
            new.cells[i].source = book.neutralised(book.cells[i], found)
            findings += [f for _, f in found]
    return new, sorted(findings, key=_order)


def _order(finding: Finding) -> tuple[int, int]:
    return finding.cell, finding.line


# --- one cell as IPython runs it --------------------------------------------------------------


@dataclass(eq=False)
class _Magic:
    """A harmless magic in a cell: the cells of Python code it runs (a cell magic's body last)
    and the names it binds in the user namespace (``%timeit -v name``, ``%%capture name``)."""

    kind: str  # "line" or "cell"
    name: str
    line: str
    subs: list[_Cell]
    binds: list[str]


@dataclass(eq=False)
class _Cell:
    """One code cell (or the code a magic runs) as IPython runs it: its source transformed, its
    tree (None when it does not parse), its harmless magics by call, and, when the whole cell
    is a harmless cell magic (``%%time``), its header line and body."""

    index: int
    raw: str  # as handed in, line breaks normalised
    source: str = ""
    tree: ast.Module | None = None
    found: list[tuple[ast.stmt | None, Finding]] = field(default_factory=list)  # when read
    magics: dict[ast.Call, _Magic] = field(default_factory=dict)
    header: str = ""
    body: _Cell | None = None
    checked: list[tuple[ast.stmt | None, Finding]] | None = None

    def lines(self, as_run: bool = False) -> list[str]:
        """Its lines: as handed in when IPython moved none (and not ``as_run``), else as run."""
        raw = self.raw if self.raw.endswith("\n") else self.raw + "\n"
        source = self.source if self.source.endswith("\n") else self.source + "\n"
        same = raw.count("\n") == source.count("\n")
        return (self.raw if same and not as_run else self.source).split("\n")

    def code(self, line: int) -> str:
        return _code(self.lines(), line)

    def trees(self) -> Iterator[ast.Module]:
        """Its tree and those of the code its magics run."""
        if self.tree is not None:
            yield self.tree
        for magic in self.magics.values():
            for sub in magic.subs:
                yield from sub.trees()

    def removed(self, reasons: list[str]) -> str:
        """The whole cell replaced by ``pass`` lines, one per line."""
        text = REMOVED + "; ".join(dict.fromkeys(reasons))
        return "\n".join([text] * max(1, len(self.raw.rstrip("\n").split("\n"))))

    def neutralised(self, found: list[tuple[ast.stmt | None, Finding]], as_run=False) -> str:
        """The cell with the lines of every statement with a finding replaced by ``pass``: the
        other lines as handed in, or as IPython runs them (``as_run``)."""
        if any(stmt is None for stmt, _ in found) or self.tree is None:
            return self.removed([f.reason for _, f in found])
        if self.body is not None:
            return f"{self.header}\n{self.body.neutralised(found, as_run)}"
        source = self.source.split("\n")
        owners = _owners(self.tree)
        spans = sorted((*_span(stmt, owners, source), f.reason) for stmt, f in found)
        merged: list[list] = []  # [first, last, reasons]
        for first, last, reason in spans:
            if merged and first <= merged[-1][1]:  # within or overlapping the previous span
                merged[-1][1] = max(last, merged[-1][1])
                merged[-1][2].append(reason)
            else:
                merged.append([first, last, [reason]])
        lines = self.lines(as_run)
        for first, last, reasons in merged:
            line = lines[first - 1]
            indent = line[: len(line) - len(line.lstrip())]
            text = f"{indent}{REMOVED}{'; '.join(dict.fromkeys(reasons))}"
            lines[first - 1 : last] = [text] * (last - first + 1)
        return "\n".join(lines)


def _parse(source: str) -> ast.Module | None:
    """The tree of ``source``, None when it does not parse (RecursionError goes up)."""
    try:
        return ast.parse(source)
    except RecursionError:
        raise
    except Exception:  # SyntaxError, ValueError (null bytes)...: it fails on its own
        return None


def _prefilter(line: str, parses: bool, shadowed) -> str:
    """What IPython's prefilter makes of a one-line cell in a kernel (automagic on, autocall
    off, no macros): ``AssignmentChecker``, then ``AutoMagicChecker`` and ``MagicHandler``."""
    text = line.rstrip("\n")
    if not text.strip():
        return line
    info = LineInfo(text)
    if info.the_rest and info.the_rest[0] in "=,":  # ls = 3: Python
        return line
    if info.ifun not in KERNEL_LINE_MAGICS or (parses and shadowed(info.ifun)):
        return line
    name, _, arguments = f"{info.ifun} {info.the_rest}".partition(" ")
    return f"{info.pre_whitespace}get_ipython().run_line_magic({name!r}, {arguments!r})\n"


class _Options:
    options_table: dict = {}  # what Magics.parse_options reads from its magics instance


def _harmless(kind: str, name: str, line: str) -> tuple[list[str], list[str]] | None:
    """For a harmless magic: (the Python code it runs but a cell magic's body, the names it
    binds), parsed as IPython does; None for any other magic."""
    try:
        if name == "time" and kind in ("line", "cell"):
            _, extra = magic_arguments.parse_argstring(ExecutionMagics.time, line, partial=True)
            return [" ".join(extra)], []
        if name == "timeit" and kind in ("line", "cell"):
            opts, stmt = ExecutionMagics.parse_options(
                _Options, line, "n:r:tcp:qov:", posix=False, strict=False, preserve_non_opts=True
            )
            named = opts.get("v", [])
            return [stmt], [n for n in (named if isinstance(named, list) else [named]) if n]
        if name == "capture" and kind == "cell":
            output = magic_arguments.parse_argstring(ExecutionMagics.capture, line).output
            return [], [output] if output else []
    except (Exception, SystemExit):  # IPython refuses the arguments: the magic fails at once
        return [], []
    if kind == "line" and name == "matplotlib" and line.strip() == "inline":
        return [], []
    if kind == "line" and name in ("pinfo", "pinfo2") and HELP_ARGUMENT.fullmatch(line):
        return [], []
    return None


def _is_ipython(node: ast.AST) -> bool:
    """``get_ipython()``."""
    return isinstance(node, ast.Call) and _is_name(node.func, "get_ipython") and not node.args


def _magic_call(node: ast.AST) -> tuple[str, list[str]] | None:
    """("system" | "getoutput" | "run_line_magic" | "run_cell_magic", its string arguments) for
    a call ``get_ipython().<method>("...", ...)`` with constant strings, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    inner = node.func.value
    if not (isinstance(inner, ast.Call) and _is_name(inner.func, "get_ipython")):
        return None
    args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if node.func.attr not in IPYTHON_CALLS or node.keywords or inner.args or inner.keywords:
        return None
    if not args or len(args) != len(node.args):
        return None
    return node.func.attr, args


# --- the notebook: what its cells import, alias, bind and protect -----------------------------


class _Notebook:
    """A notebook's code cells read as IPython runs them, with the names its tests rely on, its
    module aliases and what its non-student cells import."""

    def __init__(self, nb: nbformat.NotebookNode):
        self.students = set(student_cells(nb))
        self.transformer = TransformerManager()
        self.first: dict[str, int] = {}  # name -> first cell binding it on top, outside blocks
        self.setup_first: dict[str, int] = {}  # the same, non-student cells only
        self.cells: dict[int, _Cell] = {}
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code":
                self.cells[i] = cell = self.read(i, c.source)
                for name in _top_bindings(cell.tree) if cell.tree else ():
                    self.first.setdefault(name, i)
                    if i not in self.students:
                        self.setup_first.setdefault(name, i)
        self.paths: dict[str, set[str]] = {}  # name -> dotted names it may refer to
        self.setup_imports: dict[str, set[str]] = {}  # name -> what non-student cells bound it to
        self.importable: set[str] = set(ALWAYS_LOOKED_UP)  # modules non-student cells import
        self.defined: set[str] = set()  # functions and classes defined in the notebook
        self.student_defined: set[str] = set()  # those defined in student cells
        self.strong: set[str] = set()  # bound by import, def or class in a non-student cell
        self.weak: set[str] = set()  # bound otherwise, or a builtin used, in non-student cells
        pairs: list[tuple[str, ast.expr]] = []  # (name, value it is given), all cells
        strings = _Strings()
        for i, cell in self.cells.items():
            setup = i not in self.students
            for tree in cell.trees():
                for node in ast.walk(tree):  # one pass: trees may be many
                    self._read_names(node, setup)
                    pairs += _value_pairs(node)
                    strings.read(node)
                if setup:
                    self._read_setup(tree)
        self.weak -= self.strong
        self.protected = frozenset(self.strong | self.weak)
        self.importable = frozenset(self.importable)
        self.aliases: set[str] = set()  # names given dotted names by assignment
        self.classes: set[str] = set()  # names given a class by type(x), x.__class__...
        self._add_aliases(pairs)
        self.strings = strings.result()  # names only ever given constant strings

    def read(self, index: int, raw: str, depth: int = 0) -> _Cell:
        """The cell (or a magic's code) as IPython runs it (module docstring)."""
        cell = _Cell(index, raw.replace("\r\n", "\n").replace("\r", "\n"))
        if not cell.raw.strip():  # nothing runs
            cell.source, cell.tree = cell.raw, ast.Module(body=[], type_ignores=[])
            return cell
        if depth > MAX_MAGIC_DEPTH:
            reason = "magics nested too deeply to check"
            cell.found = [(None, Finding(index, 1, reason, _code(cell.raw.split("\n"), 1)))]
            return cell
        try:
            cell.source = self.transformer.transform_cell(cell.raw)
            cell.tree = _parse(cell.source)
            if len(cell.source.splitlines()) == 1:  # IPython prefilters one-line cells
                line = _prefilter(cell.source, cell.tree is not None, self.shadower(index))
                if line != cell.source:
                    cell.source, cell.tree = line, _parse(line)
        except RecursionError:  # too deep for ast (maybe not for the kernel): removed whole
            reason = "code nested too deeply to check"
            cell.tree = None
            cell.found = [(None, Finding(index, 1, reason, _code(cell.raw.split("\n"), 1)))]
            return cell
        except Exception:  # IPython cannot transform it: it fails on its own
            cell.tree = None
            return cell
        if cell.tree is not None and "get_ipython" in cell.source:
            self._read_magics(cell, depth)
        return cell

    def shadower(self, index: int):
        """Whether a name shadows a magic in cell ``index`` (prefilter's ``is_shadowed``)."""

        def shadowed(name: str) -> bool:
            if name in SHADOWING or self.setup_first.get(name, index) < index:
                return True
            return name in SHADOWABLE_MAGICS and self.first.get(name, index) < index

        return shadowed

    def _read_magics(self, cell: _Cell, depth: int) -> None:
        """Read the code run by the cell's harmless magics; a ``%%time`` cell gets its body."""
        for node in ast.walk(cell.tree):
            call = _magic_call(node)
            if call is None or call[0] not in ("run_line_magic", "run_cell_magic"):
                continue
            kind = "line" if call[0] == "run_line_magic" else "cell"
            name, line, *rest = call[1] + ["", ""]
            harmless = _harmless(kind, name, line)
            if harmless is None:
                continue
            codes, binds = harmless
            codes = [c for c in codes if c.strip()] + ([rest[0]] if kind == "cell" else [])
            subs = [self.read(cell.index, code, depth + 1) for code in codes]
            cell.magics[node] = _Magic(kind, name, line, subs, binds)
        top = cell.tree.body
        if len(top) == 1 and isinstance(top[0], ast.Expr) and top[0].value in cell.magics:
            magic = cell.magics[top[0].value]
            if magic.kind == "cell":
                cell.header = f"%%{magic.name} {magic.line}".rstrip()
                cell.body = magic.subs[-1]

    def _read_names(self, node: ast.AST, setup: bool) -> None:
        """Imports (all cells) and definitions."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, bound_to, _ in _import_names(node):
                self.paths.setdefault(name, set()).add(bound_to)
                if setup:
                    self.setup_imports.setdefault(name, set()).add(bound_to)
            if setup and isinstance(node, ast.Import):
                for alias in node.names:
                    self.importable.update(_prefixes(alias.name))
            elif setup and node.module and not node.level:
                self.importable.update(_prefixes(node.module))
                self.importable.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, DEFS):
            self.defined.add(node.name)
            if not setup:
                self.student_defined.add(node.name)

    def _read_setup(self, tree: ast.Module) -> None:
        """What a non-student cell binds at module level (rule 3) and the builtins it uses."""
        for node, _, scope, local in _walk(tree):
            if scope == "module":
                names = _bound_names(node)
                strong = isinstance(node, (*DEFS, ast.Import, ast.ImportFrom))
                (self.strong if strong else self.weak).update(names)
            if isinstance(node, ast.Global):
                self.weak.update(node.names)
            if isinstance(node, ast.Name) and node.id in BUILTIN_NAMES and node.id not in local:
                self.weak.add(node.id)

    def _add_aliases(self, pairs: list[tuple[str, ast.expr]]) -> None:
        """Give each name assigned from a chain rooted at a known name (``t = torch``,
        ``f = torch.nn.functional``) that chain's dotted names, through aliases of aliases; mark
        the names assigned a class (``c = type(x)``, ``c = x.__class__``, ``d = c``)."""
        users: dict[str, list[tuple[str, ast.expr]]] = {}  # root name -> pairs it gives to
        for pair in pairs:
            if _root(pair[1]):
                users.setdefault(_root(pair[1]), []).append(pair)
        work = [pair for pair in pairs if _root(pair[1])]
        while work:
            name, value = work.pop()
            known = self.paths.setdefault(name, set())
            new = {p for p in self.paths_of(value) if p.count(".") < MAX_ALIAS_DEPTH} - known
            if new and len(known) < MAX_ALIAS_PATHS:
                known |= new
                self.aliases.add(name)
                work += users.get(name, [])
        work = [pair for pair in pairs if _gives_class(pair[1], frozenset())]
        while work:
            name, _ = work.pop()
            if name not in self.classes:
                self.classes.add(name)
                work += [p for p in users.get(name, []) if isinstance(p[1], ast.Name)]

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

    def reach(self, path: str) -> _Reached | None:
        """What ``path`` is in the real modules, when that can be looked up (rule 1)."""
        return _reach(path, self.importable)

    def forbidden(self, path: str) -> str | None:
        """The forbidden name ``path`` reaches (itself, or what a module on the way is), if any.
        When it cannot be looked up, a part named like a system module restarts the name
        (``np.testing._private.utils.sys.modules`` is ``sys.modules``)."""
        if _forbidden(path):
            return path
        reached = self.reach(path)
        if reached is not None:
            return reached.canonical if _forbidden(reached.canonical) else None
        parts = path.split(".")
        for k in range(1, len(parts)):
            if parts[k] in SYSTEM_MODULES and _forbidden(".".join(parts[k:])):
                return ".".join(parts[k:])
        return None

    def checked(self) -> list[int]:
        """The student cells, in order."""
        return sorted(self.students)

    def check(self, cell: _Cell) -> list[tuple[ast.stmt | None, Finding]]:
        """The cell's (statement, finding)s; the statement is None when the whole cell goes."""
        if cell.checked is None:
            cell.checked = self._check(cell)
        return cell.checked

    def _check(self, cell: _Cell) -> list[tuple[ast.stmt | None, Finding]]:
        if cell.tree is None:
            return list(cell.found)
        if cell.body is None:
            try:
                return _Checker(self, cell).findings()
            except RecursionError:  # as for a tree too deep to parse: the whole cell goes
                reason = "code nested too deeply to check"
                return [(None, Finding(cell.index, 1, reason, cell.code(1)))]
        found = [(stmt, replace(f, line=f.line + 1)) for stmt, f in self.check(cell.body)]
        magic = cell.magics[cell.tree.body[0].value]
        reasons = [f.reason for sub in magic.subs[:-1] for _, f in self.check(sub)]
        reasons += [self.rebinding(name, f"by %%{magic.name}") for name in magic.binds]
        code = cell.header.strip()[:120]
        return found + [(None, Finding(cell.index, 1, r, code)) for r in reasons if r]

    def rebinding(self, name: str, how: str) -> str:
        """The reason for a magic binding ``name``, if the tests rely on it."""
        if name not in self.protected:
            return ""
        builtin = name in BUILTIN_NAMES and name not in self.strong
        return f"rebinds {'the builtin ' if builtin else ''}{name} {how} (used by the tests)"

    def neutralised(self, cell: _Cell, found: list[tuple[ast.stmt | None, Finding]]) -> str:
        """The cell with its findings removed, read again as IPython would to make sure: the
        lines as handed in, else as IPython runs them, else the whole cell goes."""
        for as_run in (False, True):
            text = cell.neutralised(found, as_run)
            again = self.read(cell.index, text)
            if again.tree is not None and not self.check(again):
                return text
        return cell.removed([f.reason for _, f in found])


def _prefixes(module: str) -> Iterator[str]:
    """``a``, ``a.b``, ``a.b.c`` for ``a.b.c`` (importing a module imports its parents)."""
    parts = module.split(".")
    return (".".join(parts[:k]) for k in range(1, len(parts) + 1))


def _top_bindings(tree: ast.Module) -> Iterator[str]:
    """Names that the top-level statements of a cell bind outside any block (shadowing)."""
    for stmt in tree.body:
        if isinstance(stmt, BLOCKS):
            continue
        if isinstance(stmt, (*DEFS, ast.Import, ast.ImportFrom)):
            yield from _bound_names(stmt)
            continue
        stack: list[ast.AST] = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                yield node.id
            if not isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
                stack.extend(ast.iter_child_nodes(node))


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


def _value_pairs(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """(name, value) for every name ``node`` gives a value: assignments (tuples element-wise),
    walrus, loops over a literal list, parameter defaults."""
    if isinstance(node, ast.Assign):
        return [pair for target in node.targets for pair in _pairs(target, node.value)]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        return list(_pairs(node.target, node.value))
    if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(
        node.iter, (ast.List, ast.Tuple, ast.Set)
    ):
        return [pair for element in node.iter.elts for pair in _pairs(node.target, element)]
    if isinstance(node, ast.arguments):
        positional = node.posonlyargs + node.args
        with_default = positional[len(positional) - len(node.defaults) :]
        pairs = [(a.arg, d) for a, d in zip(with_default, node.defaults, strict=True)]
        return pairs + [
            (a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d
        ]
    return []


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts, strict=True):
                yield from _pairs(t, v)


class _Strings:
    """The names that every binding in the notebook gives a string built from constants
    (``for name in ["src", "tgt"]``, ``key = "w" + "1"``), with those strings. Nodes are read
    breadth first, as ``ast.walk`` gives them: a statement comes before its names."""

    def __init__(self):
        self.values: dict[str, set[str]] = {}
        self.other: set[str] = set()  # bound otherwise at least once
        self.done: set[int] = set()  # Name nodes whose binding was read

    def give(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self.done.add(id(target))
            text = _fold(value) if value is not None else None
            if text is None:
                self.other.add(target.id)
            else:
                self.values.setdefault(target.id, set()).add(text)

    def read(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                self.give(target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            literal = isinstance(node.iter, (ast.List, ast.Tuple))
            for element in node.iter.elts if literal else [None]:
                self.give(node.target, element)
        elif isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load) and id(node) not in self.done:
                self.other.add(node.id)
        elif isinstance(node, ast.arg):
            self.other.add(node.arg)
        elif isinstance(
            node, (*DEFS, ast.Import, ast.ImportFrom, ast.ExceptHandler, ast.match_case)
        ):
            self.other.update(_bound_names(node))
        elif isinstance(node, (ast.MatchAs, ast.MatchStar, ast.MatchMapping)):
            self.other.update(_bound_names(node))

    def result(self) -> dict[str, frozenset[str]]:
        return {n: frozenset(v) for n, v in self.values.items() if n not in self.other}


def _gives_class(node: ast.expr, classes: frozenset[str] | set[str]) -> bool:
    """Whether ``node`` gives a class: ``type(x)``, ``x.__class__``, ``C.__mro__[1]``, a name
    given one, ``getattr(x, "__class__")``."""
    if isinstance(node, ast.Name):
        return node.id in classes
    if isinstance(node, ast.Attribute):
        return node.attr in CLASS_ATTRS
    if isinstance(node, ast.Subscript):
        inner = node.value.func if isinstance(node.value, ast.Call) else node.value
        return isinstance(inner, ast.Attribute) and inner.attr in CLASS_LISTS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id == "type" and len(node.args) == 1:
            return True
        if node.func.id == "getattr" and len(node.args) >= 2:
            return _fold(node.args[1]) in CLASS_ATTRS
    return False


# --- what a dotted name is in the real modules (rule 1, and rule 4's names) --------------------


@dataclass(frozen=True)
class _Reached:
    canonical: str  # the dotted name, restarted at each module met (np.testing -> numpy.testing)
    owner: object  # the object holding the last attribute (None for a bare module)
    value: object  # the attribute's current value (static look-up), _MISSING when absent
    descriptor: bool  # the attribute is a property of its owner's type (a setting by design)


@functools.lru_cache(maxsize=256)
def _import(module: str) -> object | None:
    """The module, imported once; None when it cannot be imported."""
    try:
        return importlib.import_module(module)
    except Exception:
        return None


@functools.lru_cache(maxsize=65536)
def _reach(path: str, importable: frozenset[str]) -> _Reached | None:
    """``path`` looked up in the real modules: the longest start of it that a non-student cell
    imports is imported, the rest followed statically (``inspect.getattr_static``: no property,
    ``__getattr__`` or lazy import runs). None when it cannot be followed."""
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in importable and (module := _import(name)) is not None:
            break
    else:
        return None
    canonical = module.__name__ if isinstance(getattr(module, "__name__", None), str) else name
    owner, value, descriptor = None, module, False
    for part in parts[k:]:
        if value is _MISSING or descriptor:
            return None
        owner = value
        try:
            value = inspect.getattr_static(owner, part)
        except AttributeError:
            value = _MISSING
        except Exception:
            return None
        canonical = f"{canonical}.{part}"
        if inspect.ismodule(value) and isinstance(getattr(value, "__name__", None), str):
            canonical = value.__name__
        if value is not _MISSING and not inspect.isclass(owner):
            descriptor = inspect.isdatadescriptor(value) and part not in _own_dict(owner)
    return _Reached(canonical, owner, value, descriptor)


def _own_dict(obj: object) -> Mapping:
    try:
        found = object.__getattribute__(obj, "__dict__")
    except Exception:
        return {}
    return found if isinstance(found, Mapping) else {}


def _handles_writes(obj: object) -> bool:
    """Whether the class of ``obj`` (not a module's) defines ``__setattr__``."""
    return any(
        "__setattr__" in vars(k)
        for k in type(obj).__mro__
        if k not in (object, type(os), type) and isinstance(vars(k), Mapping)
    )


def _is_data(value: object, depth: int = 0) -> bool:
    """Plain data: None, bool, numbers, str, bytes, and containers of those (bounded)."""
    if value is None or isinstance(value, (bool, numbers.Number, str, bytes)):
        return True
    if depth > 3:
        return False
    try:
        if isinstance(value, (list, tuple, set, frozenset)) and len(value) <= MAX_DATA:
            return all(_is_data(v, depth + 1) for v in value)
        if isinstance(value, Mapping) and len(value) <= MAX_DATA:
            return all(_is_data(k, depth + 1) and _is_data(v, depth + 1) for k, v in value.items())
    except Exception:
        return False
    return False


@functools.lru_cache(maxsize=65536)
def _forbidden(path: str, patterns: tuple[str, ...] = FORBIDDEN) -> bool:
    parts = path.split(".")
    if parts[:2] == ["IPython", "display"] and (len(parts) == 2 or parts[2] in DISPLAY_NAMES):
        return False
    return any(fnmatchcase(path, p) or fnmatchcase(path, p + ".*") for p in patterns)


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


# --- names built from strings -------------------------------------------------------------------

STR_METHODS = frozenset(
    {"lower", "upper", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase"}
    | {"casefold", "replace", "removeprefix", "removesuffix"}
)


def _fold(node: ast.AST, depth: int = 0) -> str | None:
    """The string an expression built only from constants gives (``"__cl" + "ass__"``,
    ``f"{'__cl'}ass__"``, ``"".join([...])``, ``chr(95)``, ``b"..".decode()``, ``s[::-1]``,
    ``s.lower()``...), None when it depends on anything else."""
    value = _fold_any(node, depth)
    return value if isinstance(value, str) and len(value) <= MAX_FOLD else None


def _fold_any(node: ast.AST, depth: int) -> object:
    if depth > 24:
        return None
    fold = functools.partial(_fold_any, depth=depth + 1)
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (str, bytes, int)) and value is not True else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = fold(node.operand)
        return -value if isinstance(value, int) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left, right = fold(node.left), fold(node.right)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and left is not None:
            return (
                left + right
                if isinstance(left, int) or len(left) + len(right) <= MAX_FOLD
                else None
            )
        if isinstance(node.op, ast.Mult):
            text, times = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(text, (str, bytes)) and isinstance(times, int) and 0 <= times <= 64:
                return text * times if len(text) * times <= MAX_FOLD else None
        return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    return None
                part = part.value
            text = fold(part)
            if not isinstance(text, str):
                return None
            parts.append(text)
        return "".join(parts)
    if isinstance(node, ast.Subscript):
        text, index = fold(node.value), node.slice
        if not isinstance(text, (str, bytes)):
            return None
        if isinstance(index, ast.Slice):
            given = (index.lower, index.upper, index.step)
            lower, upper, step = (fold(b) if b is not None else None for b in given)
            known = all(
                b is None or isinstance(v, int)
                for b, v in zip(given, (lower, upper, step), strict=True)
            )
            return text[lower:upper:step] if known and step != 0 else None
        position = fold(index)
        return (
            text[position]
            if isinstance(position, int) and -len(text) <= position < len(text)
            else None
        )
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1:
            items, sep = node.args[0], fold(func.value)
            if isinstance(items, (ast.List, ast.Tuple)):
                parts = [fold(e) for e in items.elts]
            else:  # "".join("abc"): its characters
                text = fold(items)
                parts = list(text) if isinstance(text, str) else [None]
            if isinstance(sep, str) and all(isinstance(p, str) for p in parts):
                joined = sep.join(parts)
                return joined if len(joined) <= MAX_FOLD else None
            return None
        args = [fold(a) for a in node.args]
        if any(a is None for a in args):
            return None
        if _is_name(node.func, "chr") and len(args) == 1 and isinstance(args[0], int):
            return chr(args[0]) if 0 <= args[0] < 0x110000 else None
        if _is_name(node.func, "str") and len(args) == 1 and isinstance(args[0], str):
            return args[0]
        if _is_name(node.func, "bytes") and len(node.args) == 1:
            items = node.args[0]
            if isinstance(items, (ast.List, ast.Tuple)):
                values = [fold(e) for e in items.elts]
                if all(isinstance(v, int) and 0 <= v < 256 for v in values):
                    return bytes(values)
            return None
        if isinstance(node.func, ast.Attribute):
            base, method = node.func.value, node.func.attr
            text = fold(base)
            if method == "decode" and isinstance(text, bytes):
                try:
                    return text.decode(*args)
                except Exception:
                    return None
            if method in STR_METHODS and isinstance(text, str):
                try:
                    result = getattr(str, method)(text, *args)
                except Exception:
                    return None
                return result if len(result) <= MAX_FOLD else None
    return None


def _prefix(node: ast.AST, depth: int = 0) -> str:
    """The constant start of a string expression (``f"layer{i}"`` -> ``layer``)."""
    whole = _fold(node)
    if whole is not None or depth > 24:
        return whole or ""
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        return _prefix(first, depth + 1) if isinstance(first, ast.Constant) else ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _fold(node.left)
        if left is not None:
            return left + _prefix(node.right, depth + 1)
        return _prefix(node.left, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "format":
            text = _fold(node.func.value)
            return text.split("{")[0] if text is not None else ""
    return ""


@functools.lru_cache(maxsize=4096)
def _safe_start(prefix: str) -> bool:
    """Whether a name starting with ``prefix`` can spell nothing the rules look for."""
    return (
        bool(prefix)
        and not prefix.startswith("_")
        and not any(name.startswith(prefix) for name in MACHINERY_ATTRS)
    )


# --- checking one cell ------------------------------------------------------------------------


class _Checker:
    """Walks one student cell and collects its findings, one per statement and reason."""

    def __init__(self, nb: _Notebook, cell: _Cell):
        self.nb, self.cell = nb, cell
        self.parents: dict[ast.AST, ast.AST] = {}  # filled by _walk, ancestors first

    def findings(self) -> list[tuple[ast.stmt, Finding]]:
        found: dict[tuple[ast.stmt, str], Finding] = {}
        for node, stmt, scope, local in _walk(self.cell.tree, self.parents):
            for reason in self.reasons(node, stmt, scope, local):
                reason = " ".join(reason.split())[:160]  # one line: it ends up in a comment
                line = getattr(node, "lineno", None) or stmt.lineno
                code = self.cell.code(line)
                found.setdefault((stmt, reason), Finding(self.cell.index, line, reason, code))
        return [(stmt, finding) for (stmt, _), finding in found.items()]

    def reasons(self, node: ast.AST, stmt, scope: str, local: frozenset[str]) -> Iterator[str]:
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            yield from self.target_reasons(node, stmt, local)
        if scope == "module":
            yield from self.rebinding_reasons(node, stmt, local)
        elif scope == "function" and isinstance(node, ast.Name) and node.id not in local:
            yield from self.global_reasons(node, stmt, local)
        if isinstance(node, ast.Global):
            strong = [n for n in node.names if n in self.nb.strong]
            yield from (self.protected("declares", n, "global") for n in strong)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from self.import_reasons(node)
        if isinstance(node, ast.Name) and node.id not in local:
            yield from self.name_reasons(node, local)
        if isinstance(node, ast.Attribute):
            if node.attr in MACHINERY_ATTRS and not _is_ipython(node.value):  # magics: below
                yield f"uses {node.attr} ({MACHINERY_ATTRS[node.attr]})"
            if node.attr in EVENT_METHODS and getattr(node.value, "attr", None) == "events":
                yield f"uses events.{node.attr} (IPython event callbacks)"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.name in TORCH_OVERRIDES
        ):
            yield f"defines {node.name} (overrides what torch functions return)"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in MACHINERY_ATTRS:  # getattr(f, "__globals__"), "pre_run_cell"
                yield f"mentions {node.value} ({MACHINERY_ATTRS[node.value]})"
        if isinstance(node, ast.Call):
            yield from self.call_reasons(node, local)
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            parent = self.parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                yield from self.path_reasons(node, local)

    # rules 1 and 2 ----------------------------------------------------------------------------

    def target_reasons(self, target: ast.Attribute | ast.Subscript, stmt, local) -> Iterator[str]:
        """Rules 1 and 2: an assignment to (or del of) an attribute or item."""
        chain = [target]
        while isinstance(chain[-1], (ast.Attribute, ast.Subscript)):
            chain.append(chain[-1].value)
        attrs = [n.attr for n in chain if isinstance(n, ast.Attribute)]
        deleting = isinstance(target.ctx, ast.Del)
        what = f"{'deletes' if deleting else 'assigns to'} {_text(target)}"
        if any(_is_dunder(a) for a in attrs):
            yield f"{what} (dunder attribute)"
        root = chain[-1]
        if not isinstance(root, ast.Name):
            if attrs:
                yield f"{what} (attribute of a computed object)"
            return
        if attrs and root.id in self.nb.classes:
            yield f"{what} (attribute of a class reached through {root.id})"
        if self.nb.paths_of(root, local) and not HARMLESS_ATTRS & set(attrs):
            verdict = self.library_write(target, stmt, local, deleting)
            if verdict:
                yield f"{what} ({verdict})"

    def library_write(self, target, stmt, local, deleting: bool) -> str | None:
        """Rule 1: why writing ``target`` (rooted at a library) is a finding; None for a
        setting. Looked up when it is ``lib.a.b`` or ``lib.a.b[key]``, else the static rule."""
        owner = target.value
        if not _is_chain(owner):
            return self.unresolved_write(target, stmt, deleting)
        for path in sorted(self.nb.paths_of(owner, local)):
            if isinstance(target, ast.Attribute):
                full = f"{path}.{target.attr}"
                reached = self.nb.reach(full)
                verdict = self.attribute_verdict(reached, deleting)
                if verdict == "library attribute" and full != _text(target):  # t.allclose
                    verdict = f"{verdict} {full}"
            else:
                reached = self.nb.reach(path)
                verdict = self.item_verdict(reached, target.slice)
            if reached is None:
                verdict = self.unresolved_write(target, stmt, deleting)
            if verdict:
                return verdict
        return None

    def attribute_verdict(self, reached: _Reached | None, deleting: bool) -> str | None:
        if reached is None:
            return None
        if inspect.isclass(reached.owner):
            return f"attribute of the library class {reached.canonical.rsplit('.', 1)[0]}"
        if deleting or reached.value is _MISSING and not _handles_writes(reached.owner):
            return "library attribute"
        if reached.value is _MISSING or reached.descriptor or _is_data(reached.value):
            return None  # a setting: plain data, a property, an object handling its writes
        return "library attribute"

    def item_verdict(self, reached: _Reached | None, key_node: ast.expr) -> str | None:
        if reached is None:
            return None
        container, key = reached.value, _constant(key_node)
        try:
            if isinstance(container, Mapping):
                if key is not _MISSING and key in container:
                    plain = _is_data(container[key])
                else:
                    plain = _is_data(container)
            else:
                plain = isinstance(container, list) and _is_data(container)
        except Exception:
            plain = False
        return None if plain else f"item of the library object {reached.canonical}"

    def unresolved_write(self, target, stmt, deleting: bool) -> str | None:
        """The static rule: a literal value, no private name, no class on the way."""
        chain = []
        node = target
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute):
                chain.append(node.attr)
            node = node.value
        owners = chain[1:] if isinstance(target, ast.Attribute) else chain
        if (
            deleting
            or any(a.startswith("_") for a in chain)
            or any(a[:1].isupper() for a in owners)
        ):
            return "library attribute"
        value = _assigned_value(stmt, target)
        return None if value is not None and _is_literal(value) else "library attribute"

    # rule 3 -------------------------------------------------------------------------------------

    def rebinding_reasons(self, node: ast.AST, stmt, local) -> Iterator[str]:
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
            if name in self.nb.strong or self.may_give_callable(node, stmt, local):
                yield self.protected("deletes" if deletes else "rebinds", name)

    def global_reasons(self, node: ast.Name, stmt, local) -> Iterator[str]:
        """Rule 3 in a function: a global name the tests use bound to what may be callable (the
        ``global`` statement itself is the finding for names bound by import, def or class)."""
        if isinstance(node.ctx, ast.Store) and node.id in self.nb.weak:
            if self.may_give_callable(node, stmt, local):
                yield self.protected("rebinds", node.id, "(global)")

    def protected(self, verb: str, name: str, how: str = "") -> str:
        """The reason for touching the protected ``name``."""
        if name in BUILTIN_NAMES and name not in self.nb.strong:
            return f"{verb} the builtin {name} {how} (used by the tests)"
        return f"{verb} {name} {how} (used by the tests)"

    def may_give_callable(self, node: ast.AST, stmt, local) -> bool:
        """Whether the binding may give a function, class or module (rule 3's weak names)."""
        if isinstance(node, (*DEFS, ast.Import, ast.ImportFrom)):
            return True
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
            return False
        parent = self.parents.get(node)
        if isinstance(parent, ast.NamedExpr):
            values = [parent.value]
        elif isinstance(stmt, ast.Assign):
            values = [v for t in stmt.targets for n, v in _pairs(t, stmt.value) if n == node.id]
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            values = [stmt.value]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)) and isinstance(
            stmt.iter, (ast.List, ast.Tuple, ast.Set)
        ):
            values = [v for e in stmt.iter.elts for n, v in _pairs(stmt.target, e) if n == node.id]
        else:
            values = []
        return any(self.callable_value(v, local) for v in values)

    def callable_value(self, value: ast.expr, local) -> bool:
        while isinstance(value, ast.IfExp):  # either branch
            if self.callable_value(value.body, local):
                return True
            value = value.orelse
        if isinstance(value, ast.Lambda):
            return True
        if isinstance(value, ast.Call):
            func = value.func
            return (
                _is_name(func, "type")
                or _is_name(func, "getattr")
                or any(p.startswith("functools.") for p in self.nb.paths_of(func, local))
            )
        if not isinstance(value, (ast.Name, ast.Attribute)):
            return False
        for path in self.nb.paths_of(value, local):
            reached = self.nb.reach(path)
            if reached is None or not _is_data(reached.value):
                return True
        root = _root(value)
        if isinstance(value, ast.Name) and root in local:
            return False
        return (
            root in self.nb.defined
            or root in self.nb.classes
            or (isinstance(value, ast.Name) and root in BUILTIN_NAMES)
        )

    # rule 4 -------------------------------------------------------------------------------------

    def import_reasons(self, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        for _, _, imported in _import_names(node):
            reached = self.nb.forbidden(imported)
            if reached:
                yield f"imports {imported}" + (f" ({reached})" if reached != imported else "")
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
        if node.id in self.nb.classes:
            return False
        return node.id in local or node.id not in BUILTIN_NAMES | self.nb.defined

    def name_reasons(self, node: ast.Name, local: frozenset[str]) -> Iterator[str]:
        """Rule 4 on a builtin name (the caller skips local variables)."""
        call = self.parents.get(node)
        called = isinstance(call, ast.Call) and call.func is node
        if node.id in HIDDEN_NAMES:
            yield f"uses {node.id}"
        elif node.id == "get_ipython":
            yield from self.ipython_reasons(call if called else None)
        elif node.id in ("getattr", "hasattr"):
            if not called:
                yield f"uses {node.id} as a value"
            else:
                yield from self.getattr_reasons(node.id, call, local)
        elif node.id in TAMPER_BUILTINS:
            on_self = called and call.args and _is_name(call.args[0], "self")
            if not (node.id in ("setattr", "delattr") and on_self):
                yield f"{'calls' if called else 'uses'} {node.id}"
            elif len(call.args) > 1 and _is_dunder(_fold(call.args[1]) or ""):
                yield f"calls {node.id} on self with the dunder name {_fold(call.args[1])}"
        elif node.id == "locals" and called:
            user = self.parents.get(call)
            if getattr(user, "value", None) is call and (
                (isinstance(user, ast.Subscript) and not isinstance(user.ctx, ast.Load))
                or (isinstance(user, ast.Attribute) and user.attr in DICT_WRITES)
            ):
                yield "writes into locals()"

    def getattr_reasons(self, fn: str, call: ast.Call, local) -> Iterator[str]:
        """``getattr``/``hasattr``: a name built from strings, or computed on what is not the
        student's own; a constant name on a library is checked as the path it gives."""
        if any(isinstance(a, ast.Starred) for a in call.args) or call.keywords:
            yield f"calls {fn} with computed arguments"
            return
        if len(call.args) < 2:
            return
        obj, name = call.args[0], call.args[1]
        folded = _fold(name)
        names = [folded] if folded is not None else []
        if isinstance(name, ast.Name):  # for name in ["src", "tgt"]: getattr(batch, name)
            names = self.loop_strings(name) or sorted(self.nb.strings.get(name.id, ()))
        for text in names:
            if not isinstance(name, ast.Constant) and (_is_dunder(text) or text in MACHINERY_ATTRS):
                yield f"calls {fn} with a computed name ({text})"
            for path in sorted(self.nb.paths_of(obj, local)):
                reached = self.nb.forbidden(f"{path}.{text}")
                if reached:
                    yield f"uses {reached}"
        if names:
            return
        if _is_name(obj, "self") or (
            self.is_plain_object(obj, local) and _safe_start(_prefix(name))
        ):
            return
        yield f"calls {fn} with a computed name"

    def loop_strings(self, name: ast.Name) -> list[str]:
        """The strings ``name`` takes in the innermost loop (``for``, comprehension) over a
        literal list of constant strings that gives it, when nothing else in it binds it."""
        node = name
        while (node := self.parents.get(node)) is not None and not isinstance(node, SCOPES):
            loops = [node] if isinstance(node, (ast.For, ast.AsyncFor)) else []
            loops += node.generators if isinstance(node, COMPREHENSIONS) else []
            for loop in loops:
                if not _is_name(loop.target, name.id):
                    continue
                items = loop.iter.elts if isinstance(loop.iter, (ast.List, ast.Tuple)) else []
                strings = [_fold(item) for item in items]
                bound = sum(name.id in _bound_names(n) for n in ast.walk(node))
                if items and None not in strings and bound == 1:
                    return sorted(set(strings))
                return []
        return []

    def call_reasons(self, call: ast.Call, local) -> Iterator[str]:
        """``code.replace(co_code=...)``; ``X.instance()`` on what is not the student's."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return
        if func.attr == "replace" and any(k.arg and k.arg.startswith("co_") for k in call.keywords):
            yield "replaces a code object (.replace(co_...))"
        if func.attr in SINGLETON_METHODS:
            receiver = func.value
            own = (
                _is_name(receiver, "self")
                or isinstance(receiver, ast.Name)
                and (
                    receiver.id in self.nb.student_defined
                    or self.is_plain_object(receiver, local)
                    and not receiver.id[:1].isupper()
                )
            )
            if not own:
                yield f"calls {_text(func)}() (a traitlets singleton: the shell or kernel app)"

    def ipython_reasons(self, call: ast.Call | None) -> Iterator[str]:
        """'shell command (!ls)', 'IPython magic %config', an alias; for a harmless magic, the
        findings in the code it runs."""
        if call is None:
            yield "uses get_ipython"
            return
        method = self.parents.get(call)
        use = self.parents.get(method)
        found = _magic_call(use) if isinstance(use, ast.Call) and use.func is method else None
        if found is None:
            yield "calls get_ipython"
            return
        kind, args = found
        short = " ".join(args[0].split())[:60]
        if kind in ("system", "getoutput"):
            yield f"shell command (!{short})"
        elif use in self.cell.magics:
            magic = self.cell.magics[use]
            yield from (f.reason for sub in magic.subs for _, f in self.nb.check(sub))
            sign = "%" if magic.kind == "line" else "%%"
            yield from filter(
                None, (self.nb.rebinding(n, f"by {sign}{short}") for n in magic.binds)
            )
        elif kind == "run_line_magic" and args[0] in KERNEL_ALIASES:
            yield f"IPython alias {short} (shell command)"
        else:
            sign = "%" if kind == "run_line_magic" else "%%"
            shell = " (shell command)" if args[0] in SHELL_MAGICS else ""
            yield f"IPython magic {sign}{short}{shell}"

    def path_reasons(self, node: ast.Name | ast.Attribute, local) -> Iterator[str]:
        """Rule 4 on a whole chain (``os.system``, ``np``): a forbidden name or a module."""
        user = self.parents.get(node)
        called = isinstance(user, ast.Call) and user.func is node
        aliased = _is_alias_value(node, user)  # t = torch: rule 1 follows t
        for path in sorted(self.nb.paths_of(node, local)):
            reached = self.nb.forbidden(path)
            if reached:
                what = path if reached == path else f"{path} ({reached})"
                yield f"{'calls' if called else 'uses'} {what}"
            elif not (called or aliased) and (_is_module(path) or self.is_module_value(path)):
                yield f"uses the module {path} as a value"

    def is_module_value(self, path: str) -> bool:
        reached = self.nb.reach(path)
        return reached is not None and inspect.ismodule(reached.value)


def _walk(
    tree: ast.Module, parents: dict[ast.AST, ast.AST] | None = None
) -> Iterator[tuple[ast.AST, ast.stmt, str, frozenset[str]]]:
    """Every node (iteratively: trees may be deep) with the innermost statement holding it, the
    scope a name it binds goes to ("module", "function", "class", or "target" for a
    comprehension's variables) and the local variables in scope. Defaults, decorators and bases
    belong to the enclosing scope, as in Python. ``parents`` gets each node's parent before the
    node is given."""
    stack = [(tree, None, "module", frozenset())]
    while stack:
        node, stmt, scope, local = stack.pop()
        yield node, stmt, scope, local
        inner: set[int] = set()
        inner_scope, inner_local = scope, local
        if isinstance(node, SCOPES):
            body = node.body if isinstance(node.body, list) else [node.body]
            inner = {id(child) for child in body}
            if isinstance(node, ast.ClassDef):
                inner_scope, inner_local = "class", frozenset()
            else:
                inner_scope, inner_local = "function", _local_names(node)
        for child in reversed(list(ast.iter_child_nodes(node))):
            if parents is not None:
                parents[child] = node
            child_stmt = child if isinstance(child, ast.stmt) else stmt
            if id(child) in inner:
                stack.append((child, child_stmt, inner_scope, inner_local))
            elif isinstance(node, ast.comprehension) and child is node.target:
                stack.append((child, child_stmt, "target", local))
            else:
                stack.append((child, child_stmt, scope, local))


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


def _is_alias_value(node: ast.expr, user: ast.AST | None) -> bool:
    """Whether ``node`` is the value given to plain names (``t = node``, ``t := node``)."""
    if isinstance(user, ast.Assign):
        return user.value is node and all(isinstance(t, ast.Name) for t in user.targets)
    if isinstance(user, (ast.AnnAssign, ast.NamedExpr)):
        return user.value is node and isinstance(user.target, ast.Name)
    return False


def _assigned_value(stmt: ast.stmt, target: ast.expr) -> ast.expr | None:
    """The value an assignment statement gives ``target``, when it can be told."""
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.target is target:
        return stmt.value
    if isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            if t is target:
                return stmt.value
            if isinstance(t, (ast.Tuple, ast.List)) and isinstance(
                stmt.value, (ast.Tuple, ast.List)
            ):
                if len(t.elts) == len(stmt.value.elts):
                    for element, value in zip(t.elts, stmt.value.elts, strict=True):
                        if element is target:
                            return value
    return None


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except Exception:  # ValueError, RecursionError...
        return False
    return True


def _constant(node: ast.expr) -> object:
    """The value of a constant key (``"X"``, ``0``, a string built from constants)."""
    if isinstance(node, ast.Constant):
        return node.value
    folded = _fold(node)
    return _MISSING if folded is None else folded


def _is_chain(node: ast.AST) -> bool:
    """A Name/Attribute chain (``torch.backends.cudnn``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


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


def _code(lines: list[str], line: int) -> str:
    return lines[line - 1].strip()[:120] if 0 < line <= len(lines) else ""


# --- neutralising: which lines to replace -------------------------------------------------------


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
