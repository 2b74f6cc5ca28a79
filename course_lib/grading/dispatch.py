"""The kernel's side of a graded test: it answers the grader's requests, and nothing more.

When grading, a test never runs in the student's kernel. The grader, in a process that ran no
student code, holds the student's classes and functions as *remote objects*
(:class:`course_lib.grading.judging.Handle`) and sends requests: look up a name the notebook
defined, call it with these inputs, load these weights, give back these gradients. This module is
the small dispatcher that answers them in the kernel:

- :func:`listen` opens this kernel's request socket beside its Jupyter sockets, and
  :func:`serve` answers on it until the grader says ``stop`` (the grader runs both, silently,
  after the notebook ran: ``serve`` is one execute request that lasts the whole judging). Each
  request and each reply is one message signed with the kernel's own Jupyter key and tagged
  with the request's number, so a reply is tied to the request it answers; nothing the
  student's code prints or displays goes there. It bypasses ipykernel's per-message work
  (status messages, flushing both output streams through the IOPub thread): a trivial request
  costs about 0.25 ms of CPU (both ends) instead of 1.8 ms;
- :func:`answer` reads one request (plain JSON: tensors as :mod:`course_lib.grading.wire` encodes
  them, objects as handle numbers) and returns its reply: ``{"ok": value}`` or
  ``{"raised": exception type name}``. Objects that are not plain data (a model, a bound
  method) stay in the kernel in a table of this module and travel as ``{"ref": n}``.

It reads names from the student's namespace only as dictionary entries (``user_ns[name]``,
the one thing a request asks for), never through its own name look-ups: its functions use
this module's globals and builtins, so a student's ``for type, text in ...`` or ``sum = 0``
changes nothing here. Code in the kernel can still rewrite this module; the grader treats
every reply as the student's answer and checks it, so that buys nothing but a wrong answer.

Requests (``op``):

``get`` ``{"name"}``                     the notebook's global ``name``
``call`` ``{"target", "path", "args", "kwargs", "grad"?, "inputs_after"?}``
                                         call ``target.path...`` (``grad``: see :func:`_call`;
                                         ``inputs_after``: the arguments too, after the call)
``attr`` ``{"target", "path"}``          the attribute ``target.path...``
``params`` ``{"target"}``                ``[[name, shape, requires_grad], ...]`` of a module
``load`` ``{"target", "params"}``        copy tensors into a module's parameters, by name
``state`` ``{"target"}``                 ``{name: tensor}`` of a module's parameters
``course`` ``{"source", "answers"}``     the course's given code, built afresh (:func:`course`)
``free`` ``{"refs"}``                    forget handles (``reset``: all of them)
``stop``                                 end :func:`serve` (its reply: None)

:class:`LocalTransport` answers the same requests in the same process (a TA running a
solution notebook's judge cells in Jupyter): through JSON, so what a check sees is what the
grader would see.
"""

from __future__ import annotations

import ast
import builtins
import hmac
import json
import os
import sys
import types
from typing import Any

from . import wire

# this course_lib's own files (this module sits in course_lib/grading/)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRESH = "__a3_course_lib__"  # the name of the fresh copy of course_lib that :func:`course` builds
ENDPOINT = "a3remote"  # an ipc kernel's request socket: <its ip>-a3remote, beside its others
MAX_HANDLES = 10_000  # objects kept for the grader at once (a request that makes more fails)

_handles: dict[int, Any] = {}
_counter = [0]
_socket: list[Any] = []  # the request socket, while :func:`listen` has one open
_answering = [False]  # whether :func:`answer` runs the student's code (see :func:`serve`)


def listen() -> str:
    """Open this kernel's request socket (a ZeroMQ PAIR, at its Jupyter address: ipc
    ``<ip>-a3remote``, or a free tcp port of its ip); return the port, or ``ENDPOINT``."""
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    sock = zmq.Context.instance().socket(zmq.PAIR)
    sock.setsockopt(zmq.LINGER, 0)
    if app.transport == "ipc":
        sock.bind(f"ipc://{app.ip}-{ENDPOINT}")
        where = ENDPOINT
    else:
        where = str(sock.bind_to_random_port(f"tcp://{app.ip}"))
    for old in _socket:
        old.close(0)
    _socket[:] = [sock]
    return where


def serve() -> None:
    """Answer the grader's requests on the socket :func:`listen` opened until ``stop``.

    A message is ``[signature, number, request]``; one whose signature (HMAC of number and
    request with this kernel's Jupyter key) is wrong is dropped. The reply is
    ``[signature, number, reply]``; a reply that is not JSON goes as an empty body (the grader
    reads it as unreadable).

    The grader interrupts the kernel (SIGINT) when a request runs past its time limit. Only
    the student's code may be interrupted (:func:`answer` turns it into ``raised``); one that
    lands anywhere else (between requests, or after the request was answered, as its reply is
    made and sent) is ignored, so the reply always goes out and serving goes on: the grader
    reads the late reply as a ``timeout`` of that request alone, never a dead kernel."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _on_interrupt) if main else None
    try:
        _serve(_socket[0], *_key())
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
        _socket.clear()


def _on_interrupt(signum: int, frame: Any) -> None:
    """SIGINT while :func:`serve` runs: a ``KeyboardInterrupt`` in the student's code only."""
    if _answering[0]:
        raise KeyboardInterrupt


def _serve(sock: Any, key: bytes, digest: str) -> None:
    import zmq

    while True:
        try:
            frames = sock.recv_multipart()
        except KeyboardInterrupt:  # the student's code put SIGINT's default handler back
            continue
        if len(frames) != 3 or not hmac.compare_digest(
            frames[0], sign(key, digest, frames[1], frames[2])
        ):
            continue
        request = json.loads(frames[2])
        stop = isinstance(request, dict) and request.get("op") == "stop"
        reply = {"ok": wire.encode(None)} if stop else answer(request, _user_ns())
        try:
            body = json.dumps(reply, allow_nan=False).encode()
        except (TypeError, ValueError):
            body = b""
        try:
            sock.send_multipart([sign(key, digest, frames[1], body), frames[1], body], zmq.NOBLOCK)
        except zmq.Again:  # nobody reads: the grader has gone
            pass
        if stop:
            break
    sock.close(0)


def sign(key: bytes, digest: str, number: bytes, body: bytes) -> bytes:
    """The signature of one message (hex HMAC of ``number``, a newline and ``body``)."""
    mac = hmac.new(key, digestmod=digest)
    mac.update(number + b"\n" + body)
    return mac.hexdigest().encode()


def _key() -> tuple[bytes, str]:
    from IPython import get_ipython

    session = get_ipython().kernel.session
    return session.key, session.signature_scheme.removeprefix("hmac-")


def _user_ns() -> dict:
    from IPython import get_ipython

    return get_ipython().user_ns


def answer(request: Any, namespace: dict) -> dict:
    """The reply to one request, as JSON-ready data (never raises). While it runs, an interrupt
    stops the student's code (:func:`serve` ignores one anywhere else)."""
    try:
        _answering[0] = True
        try:
            return {"ok": _dispatch(request, namespace)}
        finally:
            _answering[0] = False
    except BaseException as err:  # noqa: BLE001 - the student's code failed: say which way
        return {"raised": err.__class__.__name__[:80]}


def _dispatch(request: dict, namespace: dict) -> Any:
    op = request["op"]
    if op == "get":
        name = request["name"]
        if name not in namespace:
            raise NameError(name)
        return _out(namespace[name])
    if op == "free":
        for ref in request["refs"]:
            _handles.pop(ref, None)
        return wire.encode(None)
    if op == "reset":
        _handles.clear()
        return wire.encode(None)
    if op == "course":
        return _out(course(request["source"], request["answers"], namespace))
    target = _resolve(_handles[request["target"]], request.get("path", []))
    if op == "attr":
        return _out(target)
    if op == "call":
        return _call(target, request)
    if op == "params":
        found = [[n, list(p.shape), _trains(p)] for n, p in _named_parameters(target)]
        return wire.encode(found)
    if op == "state":
        return {"dict": {n: wire.encode(p) for n, p in _named_parameters(target)}}
    if op == "load":
        _load(target, request["params"])
        return wire.encode(None)
    raise ValueError(op)


def course(source: str, answers: list[str], namespace: dict) -> types.SimpleNamespace:
    """The course's given code of a notebook, built afresh in this kernel: ``source`` (the
    released given cells' definitions, which the grader sends from the judge spec) run in a new
    namespace that holds only the student's ``answers`` (the names their answer cells define,
    read from ``namespace``), with every ``course_lib`` import served by a fresh copy of
    course_lib (:func:`_fresh_course_lib`). So ``course.GRUEncoder`` is the course's encoder
    even when the student's notebook rebound ``GRUEncoder``, changed ``train.Seq2Seq`` or
    replaced ``sys.modules["course_lib.models"]``, while given code that calls an answer (a
    given encoder holding the student's cell) calls the student's.

    Honestly: this runs in the student's kernel, whose code could have rewritten the
    interpreter itself (torch, importlib, this module); the sandbox keeps students in, it does
    not make their kernel honest. What it buys is that no ordinary rebinding of a given name
    changes a verdict."""
    given: dict[str, Any] = {"__name__": "__a3_course__", "__builtins__": builtins}
    for name in answers:
        if isinstance(name, str) and name in namespace:
            given[name] = namespace[name]
    tree = _CourseImports(_fresh_course_lib()).visit(ast.parse(source))
    exec(compile(tree, "<the course's given code>", "exec"), given)  # noqa: S102 (course code)
    return types.SimpleNamespace(**{k: v for k, v in given.items() if not k.startswith("__")})


def _fresh_course_lib() -> str:
    """Import this course_lib's files again as a new package (:data:`FRESH`), dropping any
    earlier copy: its modules are the files' code, not the module objects the student's code
    could have changed. course_lib's modules import each other relatively, so they come from
    the copy too. Returns the copy's name."""
    import importlib.util

    for name in [n for n in sys.modules if n == FRESH or n.startswith(FRESH + ".")]:
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        FRESH, os.path.join(PACKAGE_DIR, "__init__.py"), submodule_search_locations=[PACKAGE_DIR]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[FRESH] = module
    spec.loader.exec_module(module)
    return FRESH


class _CourseImports(ast.NodeTransformer):
    """``import course_lib.x`` and ``from course_lib... import`` read from the fresh copy."""

    def __init__(self, fresh: str):
        self.fresh = fresh

    def _renamed(self, name: str) -> str:
        if name == "course_lib" or name.startswith("course_lib."):
            return self.fresh + name[len("course_lib") :]
        return name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom:
        if node.level == 0 and node.module:
            node.module = self._renamed(node.module)
        return node

    def visit_Import(self, node: ast.Import) -> list[ast.stmt]:
        statements: list[ast.stmt] = [node]
        for alias in node.names:
            renamed = self._renamed(alias.name)
            if renamed != alias.name and alias.asname is None:  # binds course_lib: the copy
                top = ast.Name(self.fresh, ast.Load())
                statements.append(ast.Assign([ast.Name("course_lib", ast.Store())], top))
            alias.name = renamed
        return [ast.fix_missing_locations(s) for s in statements]


def _resolve(obj: Any, path: list[str]) -> Any:
    for name in path:
        obj = getattr(obj, name)
    return obj


def _call(fn: Any, request: dict) -> Any:
    """Call ``fn`` with the request's arguments. With ``grad`` (``{"wrt": [arg index or
    keyword], "params_of": ref or None, "output": [index...], "cotangent": tensor}``), also
    differentiate ``sum(output * cotangent)``: with respect to those arguments and to every
    parameter of the module ``params_of``; reply ``{"value", "grads", "param_grads"}``."""
    args = [_in(a) for a in request.get("args", [])]
    kwargs = {k: _in(v) for k, v in request.get("kwargs", {}).items()}
    grad = request.get("grad")
    if grad is None and request.get("inputs_after"):  # the arguments too, as the call left them
        value = fn(*args, **kwargs)
        return {"list": [_out(value), _out(args), _out(kwargs)]}
    if grad is None:
        return _out(fn(*args, **kwargs))
    import torch

    wrt = []
    for key in grad["wrt"]:
        tensor = args[key] if isinstance(key, int) else kwargs[key]
        tensor.requires_grad_(True)
        wrt.append(tensor)
    module = _handles[grad["params_of"]] if grad.get("params_of") is not None else None
    named = _named_parameters(module) if module is not None else []
    value = fn(*args, **kwargs)
    selected = value
    for index in grad.get("output", []):
        selected = selected[index]
    cotangent = wire.decode(grad["cotangent"])
    if not isinstance(selected, torch.Tensor) or tuple(selected.shape) != tuple(cotangent.shape):
        raise ValueError("output")
    inputs = wrt + [p for _, p in named if _trains(p)]
    total = (selected * cotangent.to(selected.dtype)).sum()
    if inputs and total.requires_grad:
        found = torch.autograd.grad(total, inputs, allow_unused=True)
    else:  # nothing the output depends on asks for a gradient: none reaches anything
        found = [None] * len(inputs)
    grads = [wire.encode(g) for g in found[: len(wrt)]]  # None: no gradient reached it
    trainable = iter(found[len(wrt) :])
    param_grads = {}
    for name, p in named:
        param_grads[name] = wire.encode(next(trainable) if _trains(p) else None)
    reply = {"value": _out(value), "grads": {"list": grads}, "param_grads": {"dict": param_grads}}
    return {"dict": reply}


def _named_parameters(module: Any) -> list[tuple[str, Any]]:
    """``(name, parameter)`` of a module as torch itself lists them (``nn.Module``'s own
    method, not one the student's class may define in its place)."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise TypeError("not a module")
    return list(torch.nn.Module.named_parameters(module))


def _trains(tensor: Any) -> bool:
    """Whether autograd differentiates ``tensor`` (torch's own flag, read past any property a
    tensor subclass defines in its place)."""
    import torch

    return bool(torch._C.TensorBase.requires_grad.__get__(tensor))


def _load(module: Any, params: dict) -> None:
    import torch

    own = dict(_named_parameters(module))
    with torch.no_grad():
        for name, data in params.items():
            value = wire.decode(data)
            if name not in own or tuple(own[name].shape) != tuple(value.shape):
                raise KeyError(name)
            own[name].copy_(value.to(own[name].dtype))


def _in(data: Any) -> Any:
    """A request's argument: plain data (see :func:`wire.decode`), handles resolved."""
    if isinstance(data, dict) and set(data) == {"ref"}:
        return _handles[data["ref"]]
    if isinstance(data, dict) and set(data) == {"list"}:
        return [_in(v) for v in data["list"]]
    if isinstance(data, dict) and set(data) == {"dict"}:
        return {k: _in(v) for k, v in data["dict"].items()}
    return wire.decode(data)


def _out(value: Any, depth: int = 0) -> Any:
    """``value`` as reply data: plain values encoded, anything else kept as a handle."""
    import sys

    torch = sys.modules.get("torch")
    if isinstance(value, (list, tuple)) and depth < wire.MAX_DEPTH:
        return {"list": [_out(v, depth + 1) for v in list(value)[:10_000]]}
    if (
        isinstance(value, dict)
        and depth < wire.MAX_DEPTH
        and all(isinstance(k, str) for k in value)
    ):
        return {"dict": {k: _out(v, depth + 1) for k, v in list(value.items())[:10_000]}}
    plain = value is None or isinstance(value, (bool, int, float, str))
    if torch is not None and isinstance(value, torch.Tensor):
        plain = True
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        plain = value.dtype != object
    if plain:
        return wire.encode(value, depth)
    if len(_handles) >= MAX_HANDLES:
        raise MemoryError
    _counter[0] += 1
    _handles[_counter[0]] = value
    return {"ref": _counter[0]}


class LocalTransport:
    """Answers requests in this process, through JSON as the wire would carry them (a TA's
    notebook, where the judge cells run in the notebook's own kernel)."""

    def __init__(self, namespace: dict | None = None):
        self.namespace = namespace if namespace is not None else _user_ns()

    def request(self, request: dict) -> dict:
        wire = json.loads(json.dumps(request))
        return json.loads(json.dumps(answer(wire, self.namespace)))
