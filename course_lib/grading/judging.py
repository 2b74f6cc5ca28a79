"""Judges: the part of a graded test that decides, outside the student's kernel.

A *judge cell* (a code cell tagged ``judge`` in ``solutions/``) follows its test cell and
defines that test's checks, one per behaviour, each worth its own points::

    @check("z = 1 (update gate closed): h_new = h_prev", points=0.1)
    def _(student, rng):
        cell = student.MyGRUCell(5, 7)            # built in the kernel; a Handle here
        cell.load({**gru_params(rng, 5, 7), "Wiz.bias": torch.full((7,), 30.0)})
        x, h_prev = rng.randn(3, 5), rng.randn(3, 7).tanh()
        check_close(cell(x, h_prev), h_prev, "h_new when z = 1 (should be h_prev)")

A check runs in the grader, in a process that never ran student code. It receives by name
what it asks for:

- ``student``: the student's notebook as a :class:`Student`: ``student.Name`` is the object
  the notebook defined under ``Name``, held in the kernel and seen here as a :class:`Handle`
  (call it, read an attribute, load weights, ask for gradients); every call is a request
  whose reply comes back as plain data (tensors, numbers, strings, lists, dicts) or as a new
  handle. Inputs are made here (``rng``) and sent; the kernel only answers;
- ``rng``: an :class:`Inputs`, random inputs and weights drawn in the grader, the same for
  the same check in every run (so verdicts are reproducible) and never known to the kernel;
- ``course``: the notebook's given code as a :class:`Course`: ``course.GRUEncoder``,
  ``course.train.Seq2Seq``, ``course.with_stand_ins`` are the course's own, built afresh in the
  student's kernel from the released source, never looked up in the student's namespace
  (where the student may have rebound them). Only what the student writes comes from
  ``student``: a composite is ``course.train.Seq2Seq(course.GRUEncoder(V, 7,
  cell=student.MyGRUCell), ...)``, so a check of it measures the student's piece alone;

A check passes when it returns and fails with the message of the exception it raises (the
helpers of :mod:`course_lib.checks` raise ``AssertionError`` saying what was expected). A
request that fails (the student's code raised, ran too long, returned something unreadable)
raises :class:`StudentError` with fixed words. Messages are the test author's words and
numbers the grader computed: a failed check whose message would quote a string from a reply
is given a fixed message instead (:func:`evaluate`). Checks are independent: one failing
costs only its own points.

Where judges run:

- **grading and** ``make release``: ``autograder.kernels.judge`` runs the judge cells of a notebook
in
  order, in one fresh namespace, in a process that never ran student code (:func:`collect`);
  ``check`` then registers each check for the test cell above its judge cell, and each check
  runs while the student's kernel still runs, asking it (:func:`evaluate`). Judge cells above
  every test cell may define the imports and reference helpers the later judges share;
- **a TA running a solution notebook in Jupyter**: a judge cell runs in the notebook's own
  kernel right after its test cell, and each check runs at once (``student`` answered by
  :class:`course_lib.grading.dispatch.LocalTransport`, through JSON as the grader's requests
  travel), printing its verdict. A convenience for authors: ``make release`` decides.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import wire

CheckFn = Callable[..., object]  # takes what it names: student, rng


@dataclass(frozen=True)
class Check:
    """One behaviour of a test: its description, its points and the function that checks it."""

    test: str  # grade id of the test cell
    description: str
    points: float
    fn: CheckFn


@dataclass(frozen=True)
class Result:
    """A check's verdict."""

    description: str
    points: float
    passed: bool
    message: str = ""

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


# --- registering checks -----------------------------------------------------------------------


@dataclass
class Collector:
    """The checks registered while judge cells run, and the test they currently belong to."""

    checks: list[Check] = field(default_factory=list)
    test: str | None = None


_state = threading.local()  # .collector: the Collector of this thread's judging, if any


@contextlib.contextmanager
def collect(collector: Collector) -> Iterator[Collector]:
    """While open, :func:`check` registers into ``collector`` (the grader's mode), in this
    thread only (notebooks may be judged in parallel threads)."""
    previous = getattr(_state, "collector", None)
    _state.collector = collector
    try:
        yield collector
    finally:
        _state.collector = previous


def check(description: str, points: float) -> Callable[[CheckFn], CheckFn]:
    """Decorator: ``fn(student, rng)`` checks one behaviour of the test cell above, worth
    ``points`` (it takes the arguments it names)."""
    if not (isinstance(points, (int, float)) and points > 0):
        raise ValueError(f"check {description!r}: points must be a positive number")

    def register(fn: CheckFn) -> CheckFn:
        collector = getattr(_state, "collector", None)
        if collector is None:
            _run_inline(description, float(points), fn)
        elif collector.test is None:
            raise RuntimeError(f"check {description!r} is not in a judge cell after a test cell")
        else:
            collector.checks.append(Check(collector.test, description, float(points), fn))
        return fn

    return register


def evaluate(
    checks: list[Check],
    student: Student | None = None,
    salt: str = "",
    own_words: str = "",
    course: Any = None,
) -> list[Result]:
    """Run each check, giving it what it asks for by name (``student``, ``course``, ``rng``); a
    check that raises fails with the exception's message. ``salt`` varies the grader's inputs
    (:class:`Inputs`); ``own_words``: the judge cells' source, whose strings a message may quote
    (any other string of a reply may not: see :meth:`Student.quotes`); ``course``: the given
    code (a :class:`Course`, built in the kernel when a check first asks)."""
    results = []
    for item in checks:
        wants = _parameters(item.fn)
        kwargs: dict[str, Any] = {}
        if "rng" in wants:
            kwargs["rng"] = Inputs(f"{salt}/{item.test}/{item.description}")
        if student is not None:
            student.seen.clear()
        try:
            if "student" in wants or "course" in wants:
                if student is None or ("course" in wants and course is None):
                    raise StudentError("not graded: there was no kernel to ask")
                if "student" in wants:
                    kwargs["student"] = student
                if "course" in wants:
                    kwargs["course"] = course
            item.fn(**kwargs)
        except StudentError as err:
            results.append(Result(item.description, item.points, False, str(err)))
        except AssertionError as err:
            message = str(err) or "the check failed"
            if student is not None and student.quotes(message, own_words):
                message = "the check failed (its message would quote your code's output)"
            results.append(Result(item.description, item.points, False, message))
        except Exception as err:  # noqa: BLE001 - unexpected data: the check fails, says how
            kind = type(err).__name__
            message = f"could not check it: the result is not what the test can read ({kind})"
            results.append(Result(item.description, item.points, False, message))
        else:
            results.append(Result(item.description, item.points, True))
    return results


def _parameters(fn: CheckFn) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _run_inline(description: str, points: float, fn: CheckFn) -> None:
    """Run one check at once in a TA's notebook, on the notebook's own objects (``student``,
    through :class:`course_lib.grading.dispatch.LocalTransport`)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return
    shell = get_ipython()
    if shell is None:
        return
    from . import dispatch

    student = Student(dispatch.LocalTransport(shell.user_ns))
    # a TA's own notebook: its given code is the course's, so ``course`` is the notebook too
    (result,) = evaluate([Check("", description, points, fn)], student, course=student)
    mark = "PASS" if result.passed else "FAIL"
    print(
        f"(judge) {mark} {result.score:g}/{points:g} {description}"
        + (f": {result.message}" if result.message else "")
    )


# --- the student's objects, held in the kernel --------------------------------------------

# Exceptions named in messages; any other name (a class the student defined) is not quoted.
KNOWN_ERRORS = frozenset(
    """ArithmeticError AssertionError AttributeError EOFError Exception FloatingPointError
    ImportError IndexError KeyError LookupError MemoryError ModuleNotFoundError NameError
    NotImplementedError OSError OverflowError RecursionError RuntimeError StopIteration
    TypeError UnboundLocalError ValueError ZeroDivisionError""".split()
)
FAILED_WORDS = {
    "timeout": "your code did not answer in time (it was interrupted)",
    "unreadable": "your code's reply could not be read (too large, or not a value)",
    "dead": "the kernel stopped answering (a crash, an exit or the memory limit)",
    "unavailable": "the notebook could not be asked (it did not run to the end)",
}


def raised_words(name: str) -> str:
    """What a failed call is called in a message: the exception's name only when it is one
    of Python's own (:data:`KNOWN_ERRORS`)."""
    name = name.strip()
    if name == "KeyboardInterrupt":
        return FAILED_WORDS["timeout"]
    if name == "NotImplementedError":
        return "your code raised NotImplementedError (is the answer cell completed?)"
    if name in KNOWN_ERRORS:
        return f"your code raised {name}"
    return "your code raised an exception"


class StudentError(AssertionError):
    """A request about the student's code failed; the message is the course's own words."""


class Student:
    """The student's notebook, seen from the grader: ``student.Name`` asks the kernel for the
    object the notebook defined as ``Name`` and returns it as plain data or a :class:`Handle`.

    ``transport.request(dict) -> dict`` carries one request (``autograder.kernels.remote`` to a
    grading kernel, :class:`course_lib.grading.dispatch.LocalTransport` in a TA's notebook)."""

    def __init__(self, transport: Any):
        self._transport = transport
        self.seen: set[str] = set()  # strings read from replies while the current check runs

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        reply = self._ask({"op": "get", "name": name}, missing=f"the notebook defines no {name}")
        return reply

    def _ask(self, request: dict, missing: str = "") -> Any:
        """Send ``request``; the decoded ``ok`` value, or :class:`StudentError`."""
        try:
            reply = self._transport.request(request)
        except Exception as err:  # the transport's fixed reasons (autograder.kernels.remote)
            reason = getattr(err, "reason", "unreadable")
            raise StudentError(FAILED_WORDS.get(reason, FAILED_WORDS["unreadable"])) from None
        if not isinstance(reply, dict) or len(reply) != 1:
            raise StudentError(FAILED_WORDS["unreadable"])
        if "raised" in reply:
            name = reply["raised"] if isinstance(reply["raised"], str) else ""
            if name == "NameError" and missing:
                raise StudentError(missing)
            raise StudentError(raised_words(name))
        if "ok" not in reply:
            raise StudentError(FAILED_WORDS["unreadable"])
        return self._decode(reply["ok"])

    def _decode(self, data: Any, depth: int = 0) -> Any:
        if depth > wire.MAX_DEPTH + 2:
            raise StudentError(FAILED_WORDS["unreadable"])
        if isinstance(data, dict) and len(data) == 1:
            ((kind, body),) = data.items()
            if kind == "ref" and type(body) is int:
                return Handle(self, body, ())
            if kind == "list" and isinstance(body, list):
                return [self._decode(v, depth + 1) for v in body]
            if kind == "dict" and isinstance(body, dict):
                self.seen.update(str(k) for k in body)
                return {str(k): self._decode(v, depth + 1) for k, v in body.items()}
        try:
            value = wire.decode(data)
        except Exception:  # noqa: BLE001 - DecodeError, or shapes numpy refuses
            raise StudentError(FAILED_WORDS["unreadable"]) from None
        if isinstance(value, str):
            self.seen.add(value)
        if isinstance(value, wire.Unrecordable):
            raise StudentError("your code returned something that is not a plain value")
        return value

    def _encode(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, Handle):
            return {"ref": value._materialise()}
        if depth < wire.MAX_DEPTH and isinstance(value, (list, tuple)):
            return {"list": [self._encode(v, depth + 1) for v in value]}
        if depth < wire.MAX_DEPTH and isinstance(value, dict):
            return {"dict": {str(k): self._encode(v, depth + 1) for k, v in value.items()}}
        return wire.encode(value)

    def quotes(self, message: str, own_words: str = "") -> bool:
        """Whether ``message`` holds a string read from a reply during this check (one that
        is not in ``own_words``, the judge's own source)."""
        return any(
            len(text) >= 3 and text in message and text not in own_words for text in self.seen
        )


class Course:
    """The notebook's given code, held in the student's kernel but never looked up in the
    student's namespace: ``course.Name`` is what the course's given cells define (their
    definitions as released, from the judge spec) or import from course_lib. On first use, one
    request has the kernel build it afresh (``course_lib.grading.dispatch.course``): the given
    source run in a new namespace holding only the student's answers (``answers``: the names the
    answer cells define, so given code that calls an answer calls the student's), course_lib
    imported again from its files. A rebinding of a given name in the notebook
    (``GRUEncoder = ...``, ``train.Seq2Seq = ...``) changes nothing here."""

    def __init__(self, student: Student, source: str, answers: tuple[str, ...] | list[str]):
        self._student, self._source, self._answers = student, source, list(answers)
        self._ref: int | None = None

    def __getattr__(self, name: str) -> Handle:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._ref is None:
            request = {"op": "course", "source": self._source, "answers": self._answers}
            built = self._student._ask(request)
            if not isinstance(built, Handle):
                raise StudentError(FAILED_WORDS["unreadable"])
            self._ref = built._ref
        return Handle(self._student, self._ref, (name,))

    def __repr__(self) -> str:
        return "<the course's given code, in the student's kernel>"


class Handle:
    """An object held in the student's kernel (``path``: attributes below it, not yet read).

    ``h(*args, **kwargs)`` calls it; ``h.name`` is the attribute (another handle: read its
    value with :meth:`get`); :meth:`params`, :meth:`load`, :meth:`state` and :meth:`grad`
    serve modules. Arguments may be tensors, numbers, strings, lists, dicts and handles."""

    __slots__ = ("_student", "_ref", "_path")

    def __init__(self, student: Student, ref: int, path: tuple[str, ...]):
        self._student, self._ref, self._path = student, ref, path

    def __getattr__(self, name: str) -> Handle:
        if name.startswith("__"):
            raise AttributeError(name)
        return Handle(self._student, self._ref, (*self._path, name))

    def __repr__(self) -> str:
        return "<an object of the student's kernel>"

    def _target(self) -> dict:
        return {"target": self._ref, "path": list(self._path)}

    def _materialise(self) -> int:
        """The handle number of this object itself (an attribute is read first)."""
        if not self._path:
            return self._ref
        value = self.get()
        if not isinstance(value, Handle):
            raise StudentError("an attribute the test needs is a plain value, not an object")
        return value._ref

    def get(self) -> Any:
        """The value of this attribute (plain data, or a handle)."""
        return self._student._ask({"op": "attr", **self._target()})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._student._ask({"op": "call", **self._target(), **self._arguments(args, kwargs)})

    def call_and_inputs(self, *args: Any, **kwargs: Any) -> tuple[Any, list, dict]:
        """Call it; return the result and the arguments as the call left them (a function
        that changes its inputs in place shows it here)."""
        request = {"op": "call", **self._target(), **self._arguments(args, kwargs)}
        found = self._student._ask({**request, "inputs_after": True})
        if not (isinstance(found, list) and len(found) == 3):
            raise StudentError(FAILED_WORDS["unreadable"])
        return found[0], found[1], found[2]

    def _arguments(self, args: tuple, kwargs: dict) -> dict:
        encode = self._student._encode
        return {
            "args": [encode(a) for a in args],
            "kwargs": {k: encode(v) for k, v in kwargs.items()},
        }

    def params(self) -> dict[str, tuple[tuple[int, ...], bool]]:
        """``{name: (shape, requires_grad)}`` of this module's parameters."""
        found = self._student._ask({"op": "params", "target": self._materialise()})
        try:
            return {str(n): (tuple(int(d) for d in shape), bool(rg)) for n, shape, rg in found}
        except (TypeError, ValueError):
            raise StudentError(FAILED_WORDS["unreadable"]) from None

    def load(self, params: dict[str, Any]) -> None:
        """Copy tensors into this module's parameters, by name (each must exist, same shape)."""
        data = {name: wire.encode(value) for name, value in params.items()}
        self._student._ask(
            {"op": "load", "target": self._materialise(), "params": data},
            missing="",
        )

    def state(self) -> dict[str, Any]:
        """``{name: tensor}`` of this module's parameters, as they are now."""
        found = self._student._ask({"op": "state", "target": self._materialise()})
        if not isinstance(found, dict):
            raise StudentError(FAILED_WORDS["unreadable"])
        return found

    def grad(
        self,
        *args: Any,
        cotangent: Any,
        wrt: tuple = (),
        params_of: Handle | None = None,
        output: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> Gradients:
        """Call with ``args`` and differentiate ``sum(out * cotangent)`` (``out``: the result,
        or its part ``output``, e.g. ``(0,)`` for the first of a pair) with respect to the
        arguments ``wrt`` (positions or keywords) and the parameters of ``params_of``."""
        request = {"op": "call", **self._target(), **self._arguments(args, kwargs)}
        request["grad"] = {
            "wrt": list(wrt),
            "params_of": params_of._materialise() if params_of is not None else None,
            "output": list(output),
            "cotangent": wire.encode(cotangent),
        }
        found = self._student._ask(request)
        if not isinstance(found, dict) or set(found) != {"value", "grads", "param_grads"}:
            raise StudentError(FAILED_WORDS["unreadable"])
        return Gradients(found["value"], list(found["grads"]), dict(found["param_grads"]))


@dataclass(frozen=True)
class Gradients:
    """What :meth:`Handle.grad` returns: the call's value, the gradients of the arguments
    asked for (None: no gradient reached it) and of each parameter by name."""

    value: Any
    inputs: list[Any]
    params: dict[str, Any]


class Inputs:
    """Random inputs and weights drawn by the grader (the ``rng`` of a check): one generator
    per check, seeded from the check's name (and a salt), so every run draws the same."""

    def __init__(self, name: str):
        import torch

        self.generator = torch.Generator().manual_seed(zlib.crc32(name.encode()) * 7919 + 17)

    def randn(self, *shape: int, scale: float = 1.0):
        import torch

        return torch.randn(shape, generator=self.generator) * scale

    def rand(self, *shape: int):
        import torch

        return torch.rand(shape, generator=self.generator)

    def randint(self, high: int, *shape: int, low: int = 0):
        import torch

        return torch.randint(low, high, shape, generator=self.generator)

    def params(self, shapes: dict[str, tuple[int, ...]], scale: float = 0.5) -> dict:
        """A tensor of each shape, normal values times ``scale``, in the order given."""
        return {name: self.randn(*shape, scale=scale) for name, shape in shapes.items()}


# --- training the student's model from the grader -----------------------------------------

LossFn = Callable[[Any], Any]  # the selected output (a tensor) -> a scalar loss tensor


def loss_and_gradients(
    model: Handle, inputs: tuple, loss_fn: LossFn, output: tuple[int, ...] = ()
) -> tuple[float, dict[str, Any]]:
    """The loss the grader computes (``loss_fn``) from ``model(*inputs)`` (its part
    ``output``), and the gradient of that loss for each parameter of ``model`` (None where
    none reaches it), from the student's own backward pass."""
    value = model(*inputs)
    part = _select(value, output)
    leaf = _plain_tensor(part).requires_grad_(True)
    loss = loss_fn(leaf)
    loss.backward()
    grads = model.grad(*inputs, cotangent=leaf.grad, output=output, params_of=model)
    return float(loss.detach()), grads.params


def gradients_agree(
    model: Handle,
    inputs: tuple,
    loss_fn: LossFn,
    rng: Inputs,
    output: tuple[int, ...] = (),
    eps: float = 1e-2,
) -> bool:
    """Whether the gradients the kernel reports are those of the student's own forward: along
    a random direction ``d`` of the parameters, ``(L(p + eps d) - L(p - eps d)) / 2 eps`` (each
    ``L`` computed here from a reply) must match ``grad . d``. Leaves ``model``'s weights as
    they were."""
    import torch

    params = model.state()
    _, grads = loss_and_gradients(model, inputs, loss_fn, output)
    direction = {n: rng.randn(*p.shape) for n, p in params.items() if grads.get(n) is not None}
    norm = sum(float((d * d).sum()) for d in direction.values()) ** 0.5 or 1.0
    direction = {n: d / norm for n, d in direction.items()}
    predicted = sum(float((grads[n] * d).sum()) for n, d in direction.items())
    losses = []
    for sign in (1.0, -1.0):
        model.load({n: params[n] + sign * eps * d for n, d in direction.items()})
        with torch.no_grad():
            losses.append(float(loss_fn(_plain_tensor(_select(model(*inputs), output)))))
    model.load(params)
    measured = (losses[0] - losses[1]) / (2 * eps)
    return abs(measured - predicted) <= 0.05 * max(abs(predicted), abs(measured)) + 1e-3


def train_remotely(
    model: Handle,
    inputs: tuple,
    loss_fn: LossFn,
    steps: int = 30,
    lr: float = 0.02,
    output: tuple[int, ...] = (),
) -> list[float]:
    """Train ``model`` with Adam, driven from here: each step the kernel answers a forward
    pass and a backward pass, the loss is computed here and the update made here, then the
    new weights are loaded. Returns the ``steps + 1`` losses, the last after training, every
    one computed here from a reply."""
    import torch

    params = {n: t.clone().requires_grad_(True) for n, t in model.state().items()}
    optimizer = torch.optim.Adam(list(params.values()), lr=lr)
    losses = []
    for _ in range(steps):
        model.load({n: p.detach() for n, p in params.items()})
        loss, grads = loss_and_gradients(model, inputs, loss_fn, output)
        losses.append(loss)
        optimizer.zero_grad()
        for name, p in params.items():
            g = grads.get(name)
            p.grad = None if g is None else _plain_tensor(g).to(p.dtype)
        optimizer.step()
    model.load({n: p.detach() for n, p in params.items()})
    with torch.no_grad():
        losses.append(float(loss_fn(_plain_tensor(_select(model(*inputs), output)))))
    return losses


def _select(value: Any, output: tuple[int, ...]) -> Any:
    for index in output:
        if not isinstance(value, (list, tuple)) or not -len(value) <= index < len(value):
            raise StudentError("the result does not have the parts the test expects")
        value = value[index]
    return value


def _plain_tensor(value: Any):
    import torch

    if type(value) is not torch.Tensor or not value.is_floating_point():
        raise StudentError("the result should be a floating-point tensor")
    return value.detach().clone()
