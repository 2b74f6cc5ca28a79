"""The mutation operators: the small changes ``mutants.py`` makes inside solution regions.

Each operator looks at one node of a cell's syntax tree and yields the changes it would make
there, of the kind students make, each as (operator, description, the node that replaces the
target). The operators, each applied wherever it fits, one change per mutant:

    swap        the operands of a non-commutative operator (``a - b`` -> ``b - a``, ``@``, ``/``,
                a comparison, a string or list ``+``), the first two arguments of a call, the
                first two items of a tuple or of the list given to ``cat``/``stack``
    drop        one term of a sum or difference, one factor of a product (``a + b`` -> ``a``)
    dim         a dimension or axis argument moved by one (``dim=1`` -> ``dim=0``, ``dim=2``;
                ``transpose(1, 2)``, ``unsqueeze(1)``, ``x.shape[1]``), and an index along an
                axis (``states[:, 0]`` -> ``states[:, 1]``, ``states[:, -1]``)
    transpose   a transpose removed (``k.transpose(1, 2)`` -> ``k``, ``.T``), or one added to an
                operand of a matrix product (``torch.bmm(a, b)`` -> ``a.transpose(-2, -1)``)
    activation  an activation swapped for another (sigmoid, tanh, relu, gelu; ``nn.GELU`` ->
                ``nn.ReLU``...) or left out (``torch.tanh(x)`` -> ``x``, ``self.softmax(s)``
                -> ``s``)
    scale       a scaling constant removed (``self.scaling_factor * s`` -> ``s``, ``x / 2``
                -> ``x``)
    mask        a mask shifted by one (``tril(m, diagonal=-1)`` -> ``diagonal=0`` or ``-2``,
                ``tril`` <-> ``triu``, ``<`` <-> ``<=``, ``>`` <-> ``>=``)
    earlier     an earlier variable returned (``return c`` -> ``return b``), or assigned to the
                region's result (``h_new = ...`` -> ``h_new = g``): the last assignment of a name
                read after the region takes one of the three names bound most recently before it
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator

from autograder.quality.mutation_scope import Scope

OPERATORS = ("swap", "drop", "dim", "transpose", "activation", "scale", "mask", "earlier")

# Calls whose integer arguments are dimensions (``torch.cat``/``stack``: from the second on).
DIM_CALLS = frozenset({
    "sum", "mean", "softmax", "log_softmax", "transpose", "unsqueeze", "squeeze", "cat",
    "stack", "concat", "max", "min", "argmax", "argmin", "flatten", "size", "norm", "cumsum",
    "prod", "std", "var", "logsumexp", "movedim", "swapaxes", "swapdims", "select", "narrow",
    "flip", "roll", "Softmax", "LogSoftmax", "all", "any", "topk", "sort", "argsort",
})  # fmt: skip
DIM_KEYWORDS = frozenset({"dim", "axis", "dim0", "dim1", "start_dim", "end_dim"})
SEQUENCE_CALLS = frozenset({"cat", "stack", "concat", "hstack", "vstack"})
MATMUL_CALLS = frozenset({"bmm", "matmul", "mm"})
TRANSPOSES = frozenset({"transpose", "t", "permute", "swapaxes", "swapdims", "movedim"})
# Calls whose first two arguments commute: swapping them gives the same program.
SYMMETRIC_CALLS = frozenset({
    "transpose", "swapaxes", "swapdims", "add", "mul", "maximum", "minimum", "eq", "ne",
    "allclose", "isclose", "max", "min", "dict", "zip", "set",
})  # fmt: skip
# Activations, and what each is swapped for (functions and methods; then nn modules).
ACTIVATIONS = {
    "sigmoid": ("tanh", "relu"),
    "tanh": ("sigmoid", "relu"),
    "relu": ("sigmoid", "gelu"),
    "gelu": ("relu",),
    "softmax": ("log_softmax",),
    "log_softmax": ("softmax",),
    "silu": ("relu",),
    "elu": ("relu",),
    "leaky_relu": ("relu",),
    "softplus": ("relu",),
}
MODULE_ACTIVATIONS = {
    "GELU": ("ReLU", "Tanh"),
    "ReLU": ("GELU", "Tanh"),
    "Tanh": ("Sigmoid", "ReLU"),
    "Sigmoid": ("Tanh",),
    "SiLU": ("ReLU",),
    "ELU": ("ReLU",),
    "LeakyReLU": ("ReLU",),
    "Softmax": ("LogSoftmax",),
    "LogSoftmax": ("Softmax",),
}
SCALE_WORDS = ("scal", "factor", "temperature", "sqrt", "norm", "inv_", "coef")


Change = tuple[str, str, ast.AST]  # (operator, description, the node that replaces the target)
Operator = Callable[[ast.AST, Scope], Iterator[Change]]


def _name(func: ast.expr) -> str:
    """The called name: ``torch.tanh`` -> ``tanh``, ``relu`` -> ``relu``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _src(node: ast.AST) -> str:
    return ast.unparse(node)


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _int_node(value: int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _sequence_literal(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.JoinedStr, ast.ListComp)) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)


def op_swap(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.BinOp):
        concat = isinstance(node.op, ast.Add) and (
            _sequence_literal(node.left) or _sequence_literal(node.right)
        )
        if isinstance(node.op, NON_COMMUTATIVE) or concat:
            new = ast.BinOp(node.right, node.op, node.left)
            yield "swap", f"operands of `{_src(node)}` swapped", new
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        if not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            new = ast.Compare(node.comparators[0], node.ops, [node.left])
            yield "swap", f"sides of `{_src(node)}` swapped", new
    elif isinstance(node, ast.Call):
        args = node.args
        symmetric = _name(node.func) in SYMMETRIC_CALLS
        if (
            len(args) >= 2
            and not symmetric
            and not any(isinstance(a, ast.Starred) for a in args[:2])
        ):
            if _src(args[0]) != _src(args[1]):
                new = copy.copy(node)
                new.args = [args[1], args[0], *args[2:]]
                yield "swap", f"the first two arguments of `{_src(node.func)}` swapped", new
        if (
            _name(node.func) in SEQUENCE_CALLS
            and args
            and isinstance(args[0], (ast.List, ast.Tuple))
        ):
            items = args[0].elts
            if len(items) >= 2 and _src(items[0]) != _src(items[1]):
                seq = copy.copy(args[0])
                seq.elts = [items[1], items[0], *items[2:]]
                new = copy.copy(node)
                new.args = [seq, *args[1:]]
                yield "swap", f"the first two tensors given to `{_src(node.func)}` swapped", new
    elif isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and len(node.elts) >= 2:
        first, second = node.elts[0], node.elts[1]
        if not isinstance(first, ast.Starred) and _src(first) != _src(second):
            new = ast.Tuple([second, first, *node.elts[2:]], ast.Load())
            yield "swap", f"the first two items of `{_src(node)}` swapped", new


def op_drop(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        kind = "factor" if isinstance(node.op, ast.Mult) else "term"
        yield "drop", f"the {kind} `{_src(node.right)}` of `{_src(node)}` left out", node.left
        yield "drop", f"the {kind} `{_src(node.left)}` of `{_src(node)}` left out", node.right


def _dims_of_call(node: ast.Call) -> Iterator[tuple[ast.AST, int]]:
    """(the int node, its value) of each dimension argument of a call."""
    for keyword in node.keywords:
        if keyword.arg in DIM_KEYWORDS and _int_value(keyword.value) is not None:
            yield keyword.value, _int_value(keyword.value)
    if _name(node.func) in DIM_CALLS:
        for arg in node.args:  # the tensor or sequence argument is never an int
            if _int_value(arg) is not None:
                yield arg, _int_value(arg)


def op_dim(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.Call):
        ints = [_int_value(a) for a in node.args]
        for target, value in _dims_of_call(node):
            for new_value in (value - 1, value + 1):
                if _name(node.func) in TRANSPOSES and new_value in ints:
                    continue  # transpose(2, 2): the transpose left out (operator transpose)
                new = _replace_in(node, target, _int_node(new_value))
                yield "dim", f"{_src(node.func)}: dimension {value} -> {new_value}", new
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        # x.shape[1]: a dimension; states[:, 0], scores[0]: a position along an axis
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        what = "dimension" if _src(node.value).endswith(".shape") else "index"
        for item in items:
            value = _int_value(item)
            if value is None:
                continue
            for new_value in (value - 1, value + 1):
                new = _replace_in(node, item, _int_node(new_value))
                yield "dim", f"`{_src(node)}`: {what} {value} -> {new_value}", new


def _is_transpose(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in TRANSPOSES
    )


def _transposed(node: ast.expr) -> ast.expr:
    func = ast.Attribute(node, "transpose", ast.Load())
    return ast.Call(func, [_int_node(-2), _int_node(-1)], [])


def op_transpose(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if _is_transpose(node):
        inner = node.value if isinstance(node, ast.Attribute) else node.func.value
        yield "transpose", f"the transpose of `{_src(node)}` left out", inner
    operands: list[ast.expr] = []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        operands = [node.left, node.right]
    elif isinstance(node, ast.Call) and _name(node.func) in MATMUL_CALLS and len(node.args) >= 2:
        operands = node.args[:2]
    for operand in operands:
        if not _is_transpose(operand):
            new = _replace_in(node, operand, _transposed(operand))
            yield "transpose", f"`{_src(operand)}` transposed in `{_src(node)}`", new


FUNCTION_HOSTS = ("torch", "F", "nn.functional", "torch.nn.functional", "np", "math", "self")


def _function_style(func: ast.expr) -> bool:
    """``torch.tanh(x)``, ``F.relu(x)``, ``self.softmax(x)``, ``tanh(x)``: the activation's input
    is its first argument (else a method: ``x.sigmoid()``, whose input is ``x``)."""
    if not isinstance(func, ast.Attribute):
        return True
    host = _src(func.value)
    return host in FUNCTION_HOSTS or host.startswith("self.")


def _renamed(node: ast.Call, name: str) -> ast.Call:
    func = copy.copy(node.func)
    if isinstance(func, ast.Attribute):
        func.attr = name
    else:
        func.id = name
    new = copy.copy(node)
    new.func = func
    return new


def op_activation(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if not isinstance(node, ast.Call):
        return
    name = _name(node.func)
    module_attribute = isinstance(node.func, ast.Attribute) and _src(node.func.value).startswith(
        "self"
    )
    if name in ACTIVATIONS:
        if not module_attribute:  # self.softmax is a layer: another name would not exist
            for other in ACTIVATIONS[name]:
                yield "activation", f"`{name}` replaced by `{other}`", _renamed(node, other)
        if _function_style(node.func):
            if node.args and not isinstance(node.args[0], ast.Starred):
                yield "activation", f"the activation `{_src(node.func)}` left out", node.args[0]
        else:
            yield "activation", f"the activation `.{name}()` left out", node.func.value
    elif name in MODULE_ACTIVATIONS:
        for other in MODULE_ACTIVATIONS[name]:
            yield "activation", f"`{name}` replaced by `{other}`", _renamed(node, other)


def _is_scale(node: ast.AST) -> bool:
    """A constant factor: a number, a name that says it scales, or a square root."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_scale(node.operand)
    if isinstance(node, (ast.Name, ast.Attribute)):
        word = (node.id if isinstance(node, ast.Name) else node.attr).lower()
        return any(w in word for w in SCALE_WORDS)
    return isinstance(node, ast.Call) and _name(node.func) in ("sqrt", "rsqrt")


def op_scale(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        if _is_scale(node.right):
            yield "scale", f"the scaling `{_src(node.right)}` of `{_src(node)}` left out", node.left
        if isinstance(node.op, ast.Mult) and _is_scale(node.left):
            yield "scale", f"the scaling `{_src(node.left)}` of `{_src(node)}` left out", node.right


SHIFTED_COMPARISONS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


def op_mask(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        shifted = SHIFTED_COMPARISONS.get(type(node.ops[0]))
        if shifted:
            new = ast.Compare(node.left, [shifted()], node.comparators)
            yield "mask", f"`{_src(node)}` off by one", new
    if not (isinstance(node, ast.Call) and _name(node.func) in ("tril", "triu")):
        return
    name = _name(node.func)
    other = "triu" if name == "tril" else "tril"
    yield "mask", f"`{name}` replaced by `{other}`", _renamed(node, other)
    method = isinstance(node.func, ast.Attribute) and _src(node.func.value) not in ("torch", "np")
    place = 0 if method else 1  # x.tril(diagonal) or torch.tril(x, diagonal)
    keyword = next((k for k in node.keywords if k.arg == "diagonal"), None)
    if keyword is not None:
        target, value = keyword.value, _int_value(keyword.value)
    elif len(node.args) > place:
        target, value = node.args[place], _int_value(node.args[place])
    else:
        target, value = None, 0
    if value is None:
        return
    for new_value in (value - 1, value + 1):
        if target is not None:
            new = _replace_in(node, target, _int_node(new_value))
        else:
            new = copy.copy(node)
            new.keywords = [*node.keywords, ast.keyword("diagonal", _int_node(new_value))]
        yield "mask", f"the mask's diagonal {value} -> {new_value}", new


def op_earlier(node: ast.AST, scope: Scope) -> Iterator[Change]:
    if isinstance(node, ast.Return) and node.value is not None:
        same = {node.value.id} if isinstance(node.value, ast.Name) else set()
        for name in scope.earlier(node, exclude=same):
            yield "earlier", f"returns `{name}` instead", ast.Return(ast.Name(name, ast.Load()))
    elif (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and scope.is_result(node)
    ):
        target = node.targets[0].id
        for name in scope.earlier(node, exclude={target}):
            new = ast.Assign([node.targets[0]], ast.Name(name, ast.Load()))
            yield "earlier", f"`{target}` set to the earlier `{name}`", new


OPERATOR_FUNCTIONS: dict[str, Operator] = {
    "scale": op_scale,  # before drop: a constant factor left out is named as such
    "swap": op_swap,
    "drop": op_drop,
    "dim": op_dim,
    "transpose": op_transpose,
    "activation": op_activation,
    "mask": op_mask,
    "earlier": op_earlier,
}


def _replace_in(node: ast.AST, target: ast.AST, new: ast.AST) -> ast.AST:
    """A copy of ``node`` with its descendant ``target`` (by identity) replaced by ``new``."""

    class Swap(ast.NodeTransformer):
        def visit(self, child: ast.AST) -> ast.AST:
            if child is target:
                return new
            return self.generic_visit(copy.copy(child))

        def generic_visit(self, child: ast.AST) -> ast.AST:
            for field, value in ast.iter_fields(child):
                if isinstance(value, list):
                    setattr(child, field, [self.visit(v) if isinstance(v, ast.AST) else v
                                           for v in value])  # fmt: skip
                elif isinstance(value, ast.AST):
                    setattr(child, field, self.visit(value))
            return child

    return Swap().visit(node)
