"""Tests that hold the student's objects: the grader asks a live kernel, the kernel only answers.

A small notebook runs in a real kernel (``autograder.kernels.execute``, as the release checks and
the variants run notebooks); its tests then ask that kernel for the student's function and class
(``course_lib.grading.dispatch`` answers, ``autograder.kernels.remote`` asks). What the
student's code prints, displays, clears or forges never becomes a reply; failures cost their own
checks, with the course's words only.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import nbformat
import pytest
import torch
import zmq
from nbformat.v4 import new_code_cell, new_notebook
from test_judge import _judge_cell, _test_cell

from autograder.course import spec
from autograder.kernels import remote as autograder_remote
from autograder.kernels.execute import execute_in_child, read_verdicts
from autograder.kernels.remote import KernelSession, RequestFailed
from course_lib.grading import dispatch, judging, wire

JUDGES = [
    _judge_cell(
        "import torch\nfrom torch import nn\n\nfrom course_lib.checks import check_close\n"
        "from course_lib.grading.judging import check\n"
    ),
    _test_cell("test_scale", '"""scale(x) doubles x; Lin is a linear layer."""', 1.0),
    _judge_cell(
        '@check("scale doubles a tensor the grader drew", points=0.25)\n'
        "def _(student, rng):\n"
        "    x = rng.randn(3, 4)\n"
        '    check_close(student.scale(x), 2 * x, "scale(x)")\n\n\n'
        '@check("Lin computes x W^T + b with the weights the grader loads", points=0.25)\n'
        "def _(student, rng):\n"
        "    lin = student.Lin(4, 2)\n"
        '    params = rng.params({"w.weight": (2, 4), "w.bias": (2,)})\n'
        "    lin.load(params)\n"
        "    x = rng.randn(5, 4)\n"
        '    expected = x @ params["w.weight"].T + params["w.bias"]\n'
        '    check_close(lin(x), expected, "Lin(4, 2)(x)")\n\n\n'
        '@check("every weight of Lin receives a gradient", points=0.25)\n'
        "def _(student, rng):\n"
        "    lin = student.Lin(4, 2)\n"
        "    x = rng.randn(5, 4)\n"
        "    grads = lin.grad(x, cotangent=torch.ones(5, 2), params_of=lin)\n"
        "    dead = [n for n, g in grads.params.items() if g is None or not g.abs().sum()]\n"
        '    assert not dead, "a weight of Lin gets no gradient"\n\n\n'
        '@check("a message that quotes a reply is replaced", points=0.25)\n'
        "def _(student):\n"
        '    assert False, f"got {student.label(0)}"\n'
    ),
]

HONEST = """
import torch
from torch import nn

def scale(x):
    print("debugging scale", x.shape)  # an honest debug print
    return 2 * x

class Lin(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.w = nn.Linear(i, o)

    def forward(self, x):
        return self.w(x)

def label(i):
    return "a string the student chose"

for type, text in [(1, "shadowed builtins")]:
    sum = 0
"""

FORGER = """
import torch
from IPython.display import clear_output, display
from course_lib.grading import wire

def scale(x):
    clear_output()
    display({"application/vnd.a3.probe+json": {"key": "x", "value": wire.encode(2 * x)}},
            raw=True)
    print("A3 forged reply: ok")
    raise NotImplementedError

class Lin:
    pass

def label(i):
    return "x"
"""


def _notebook(student_code: str) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell(student_code), *JUDGES])


SOLUTION = _notebook(HONEST)
SPEC = spec.spec_of(SOLUTION, "nb")


def _graded(tmp_path: Path, student_code: str) -> dict[str, spec.TestVerdict]:
    src, dst = tmp_path / "nb.ipynb", tmp_path / "nb.out.ipynb"
    nb = spec.without_instructor_cells(_notebook(student_code))
    nbformat.write(nb, src)
    (tmp_path / "spec.json").write_text(SPEC.to_json())
    assert execute_in_child(src, dst, timeout=60, spec=tmp_path / "spec.json") == ""
    return read_verdicts(dst)


@pytest.mark.slow
def test_checks_ask_the_live_kernel_for_the_students_objects(tmp_path):
    verdict = _graded(tmp_path, HONEST)["test_scale"]
    passed = {c["description"]: c["passed"] for c in verdict.checks}
    assert passed == {
        "scale doubles a tensor the grader drew": True,
        "Lin computes x W^T + b with the weights the grader loads": True,
        "every weight of Lin receives a gradient": True,
        "a message that quotes a reply is replaced": False,
    }
    (quoting,) = verdict.lost()
    assert "a string the student chose" not in quoting["message"]
    assert quoting["message"] == "the check failed (its message would quote your code's output)"


@pytest.mark.slow
def test_what_the_kernel_prints_displays_or_clears_is_no_reply(tmp_path):
    verdict = _graded(tmp_path, FORGER)["test_scale"]
    assert verdict.score == 0
    messages = " ".join(c["message"] for c in verdict.checks)
    assert "forged" not in messages and "A3" not in messages
    assert "your code raised NotImplementedError" in messages


def test_a_local_transport_answers_as_the_grader_would():
    """A TA's notebook: the same requests, answered in-process through JSON."""
    namespace = {"double": lambda x: 2 * x, "broken": lambda: 1 / 0}
    student = judging.Student(dispatch.LocalTransport(namespace))
    assert torch.equal(student.double(torch.arange(3)), torch.tensor([0, 2, 4]))
    with pytest.raises(judging.StudentError, match="your code raised ZeroDivisionError"):
        student.broken()
    with pytest.raises(judging.StudentError, match="the notebook defines no absent"):
        student.absent  # noqa: B018


def test_replies_are_data_or_handles_never_the_kernels_words():
    class Secret(Exception):
        pass

    def raises_custom():
        raise Secret("the hidden answer is 42")

    namespace = {"custom": raises_custom, "huge": lambda: torch.zeros(2000, 1000)}
    student = judging.Student(dispatch.LocalTransport(namespace))
    with pytest.raises(judging.StudentError) as err:
        student.custom()
    assert str(err.value) == "your code raised an exception"
    with pytest.raises(judging.StudentError, match="not a plain value"):
        student.huge()


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": {"tensor": {"dtype": "float32", "shape": [0, 10**19], "data": ""}}},
        {"ok": {"tensor": {"dtype": "float32", "shape": [2**40, 2**40], "data": ""}}},
        {"ok": {"tensor": {"dtype": "complex", "shape": [1], "data": "AAAA"}}},
        {"ok": {"ref": "1"}},
        {"ok": [1, 2]},
        {"raised": ["not", "a", "name"]},
        {"something": "else"},
        "not a dict",
    ],
)
def test_a_malformed_reply_fails_its_check_only(reply):
    class Fixed:
        def request(self, _request):
            return reply

    student = judging.Student(Fixed())
    checks = [
        judging.Check("t", "reads the reply", 0.5, lambda student: student.anything()),
        judging.Check("t", "needs no reply", 0.5, lambda rng: rng.randn(2)),
    ]
    results = judging.evaluate(checks, student=student)
    assert [r.passed for r in results] == [False, True]
    assert results[0].message.startswith(("your code", "could not check it"))


# --- the request socket: who may ask, what counts as a reply ---------------------------------

KEY, DIGEST = b"the kernel's key", "sha256"


def _signed(number: bytes, body: dict, key: bytes = KEY) -> list[bytes]:
    data = json.dumps(body).encode()
    return [dispatch.sign(key, DIGEST, number, data), number, data]


@pytest.fixture
def session(tmp_path):
    """A grader's session whose request socket is wired to ``kernel`` (a PAIR in this
    process standing for the kernel's end)."""
    info = {"key": KEY.decode(), "signature_scheme": f"hmac-{DIGEST}", "transport": "ipc",
            "ip": str(tmp_path / "kernel")}  # fmt: skip
    with KernelSession(info, request_seconds=0.3) as grader:
        kernel = grader.context.socket(zmq.PAIR)
        kernel.setsockopt(zmq.LINGER, 0)
        kernel.bind("inproc://kernel")
        grader.socket = grader._socket(zmq.PAIR, "inproc://kernel")
        grader.control = grader._socket(zmq.DEALER, "inproc://nobody")
        yield grader, kernel
        kernel.close(0)


def test_only_a_signed_reply_with_the_requests_number_answers_it(session):
    grader, kernel = session
    forged = {"ok": {"str": "forged"}}
    kernel.send_multipart(_signed(b"1", forged, key=b"another key"))  # not the kernel's key
    kernel.send_multipart([b"no signature", b"1", json.dumps(forged).encode()])
    kernel.send_multipart(_signed(b"0", forged))  # a stale reply to an earlier request
    kernel.send_multipart([b"too", b"many", b"frames", b"here"])
    kernel.send_multipart(_signed(b"1", {"ok": {"int": 7}}))
    assert grader.request({"op": "get", "name": "x"}) == {"ok": {"int": 7}}
    # the request reached the kernel signed, with its number
    signature, number, body = kernel.recv_multipart()
    assert number == b"1" and json.loads(body) == {"op": "get", "name": "x"}
    assert signature == dispatch.sign(KEY, DIGEST, number, body)
    # a reply that is no JSON object is unreadable, and costs only that request
    kernel.send_multipart([dispatch.sign(KEY, DIGEST, b"2", b"[1]"), b"2", b"[1]"])
    with pytest.raises(RequestFailed, match="unreadable"):
        grader.request({"op": "get", "name": "y"})
    kernel.send_multipart(_signed(b"3", {"ok": {"int": 3}}))
    assert grader.request({"op": "get", "name": "z"}) == {"ok": {"int": 3}}
    assert (grader.requests, grader.answered) == (3, 2)


def test_no_reply_interrupts_then_the_kernel_is_dead(session, monkeypatch):
    monkeypatch.setattr(autograder_remote, "INTERRUPT_SECONDS", 1.0)
    grader, kernel = session
    # the interrupted request answers after the interrupt: a timeout, and the kernel lives on
    late = threading.Timer(0.2, kernel.send_multipart, [_signed(b"1", {"raised": "X"})])
    late.start()
    with pytest.raises(RequestFailed, match="timeout"):
        grader.request({"op": "call"}, seconds=0.01)
    late.join()
    assert grader.broken is None
    # no reply even then: dead, and every later request fails at once
    with pytest.raises(RequestFailed, match="dead"):
        grader.request({"op": "call"}, seconds=0.01)
    with pytest.raises(RequestFailed, match="dead"):
        grader.request({"op": "get", "name": "x"})
    assert (grader.broken, grader.requests) == ("dead", 2)


def test_the_kernel_answers_signed_requests_only_until_stop(monkeypatch):
    """``course_lib.grading.dispatch.serve`` in a thread of this process, as the kernel runs it."""
    monkeypatch.setattr(dispatch, "_key", lambda: (KEY, DIGEST))
    monkeypatch.setattr(dispatch, "_user_ns", lambda: {"x": 5})
    context = zmq.Context.instance()
    kernel = context.socket(zmq.PAIR)
    kernel.bind("inproc://served")
    monkeypatch.setattr(dispatch, "_socket", [kernel])
    thread = threading.Thread(target=dispatch.serve, daemon=True)
    thread.start()
    grader = context.socket(zmq.PAIR)
    grader.connect("inproc://served")
    grader.send_multipart([b"bad", b"1", b'{"op": "get", "name": "x"}'])
    grader.send_multipart(_signed(b"2", {"op": "get", "name": "x"}))
    signature, number, body = grader.recv_multipart()
    assert (number, json.loads(body)) == (b"2", {"ok": {"int": 5}})
    assert signature == dispatch.sign(KEY, DIGEST, number, body)
    grader.send_multipart(_signed(b"3", {"op": "stop"}))
    assert grader.recv_multipart()[1] == b"3"
    thread.join(5)
    assert not thread.is_alive() and dispatch._socket == []
    grader.close(0)


def test_an_interrupt_stops_only_the_students_code(monkeypatch):
    """The grader's interrupt (SIGINT, past a request's time limit) stops the student's code:
    that request's reply says ``raised``. One that lands after the answer, as its reply is
    made, or between requests, is ignored: the reply goes out and serving goes on (it used to
    end ``serve``, and the grader then called the kernel dead). ``serve`` runs in this main
    thread, as in a kernel; the grader is a thread."""
    import os
    import signal
    import time

    class Namespace(dict):
        def __getitem__(self, name):  # the student's code, running as a request is answered
            if name == "slow":
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            return super().__getitem__(name)

    real_sign, late = dispatch.sign, []

    def sign_interrupted(*args):  # the interrupt lands after the answer, before the reply
        if threading.current_thread() is threading.main_thread() and args[2] in late:
            late.remove(args[2])
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here
        return real_sign(*args)

    monkeypatch.setattr(dispatch, "_key", lambda: (KEY, DIGEST))
    monkeypatch.setattr(dispatch, "_user_ns", lambda: Namespace(x=5, slow=0))
    monkeypatch.setattr(dispatch, "sign", sign_interrupted)
    context = zmq.Context.instance()
    kernel = context.socket(zmq.PAIR)
    kernel.bind("inproc://interrupted")
    monkeypatch.setattr(dispatch, "_socket", [kernel])
    replies = []

    def grader():
        sock = context.socket(zmq.PAIR)
        sock.connect("inproc://interrupted")
        for number, request in [
            (b"1", {"op": "get", "name": "slow"}),
            (b"2", {"op": "get", "name": "x"}),
            (b"3", {"op": "stop"}),
        ]:
            if number == b"2":
                late.append(number)
            sock.send_multipart(_signed(number, request))
            if sock.poll(10_000):
                replies.append(sock.recv_multipart()[1:])
        sock.close(0)

    thread = threading.Thread(target=grader, daemon=True)
    thread.start()
    before = signal.getsignal(signal.SIGINT)
    try:
        dispatch.serve()
    except KeyboardInterrupt:
        pytest.fail("an interrupt ended serve")
    thread.join(5)
    assert [(n, json.loads(body)) for n, body in replies] == [
        (b"1", {"raised": "KeyboardInterrupt"}),
        (b"2", {"ok": {"int": 5}}),
        (b"3", {"ok": wire.encode(None)}),
    ]
    assert signal.getsignal(signal.SIGINT) is before and dispatch._socket == []


@pytest.mark.parametrize("transport", ["ipc", "tcp"])
def test_a_live_kernel_serves_until_the_session_closes(transport, tmp_path, monkeypatch):
    """The whole path in a plain kernel of either transport: the request socket opens beside
    the kernel's own, answers, and ``close`` ends ``serve`` (the kernel takes code again)."""
    from jupyter_client import KernelManager

    monkeypatch.chdir(tmp_path)  # an ipc kernel's sockets: files of this folder
    manager = KernelManager(kernel_name="python3", transport=transport)
    manager.start_kernel()
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        client.execute_interactive("import torch\nx = torch.arange(3)", timeout=60)
        with KernelSession(manager.get_connection_info(session=False)) as session:
            assert session.start()
            student = judging.Student(session)
            assert torch.equal(student.x, torch.arange(3))
            with pytest.raises(judging.StudentError, match="the notebook defines no y"):
                student.y  # noqa: B018
        reply = client.execute_interactive("z = 1", timeout=10)
        assert reply["content"]["status"] == "ok"
        names = client.execute_interactive(
            "", user_expressions={"a3": "[n for n in globals() if 'a3' in n]"}, timeout=10
        )["content"]["user_expressions"]["a3"]["data"]["text/plain"]
        assert names == "[]"  # the dispatcher's name is gone from the notebook's globals
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_kernel_can_name_only_its_own_request_socket():
    """What ``listen`` answered decides where the grader connects: the fixed ipc name, or a
    port of the kernel's own address; anything else (a path, a name for the other transport,
    a failed boot) makes the kernel unavailable."""

    def boot(text: str, status: str = "ok") -> dict:
        where = {"status": "ok", "data": {"text/plain": text}}
        return {"status": status, "user_expressions": {"where": where}}

    assert autograder_remote._where(boot("'a3remote'"), ipc=True) == "a3remote"
    assert autograder_remote._where(boot("'40123'"), ipc=False) == "40123"
    refused = [
        (boot("'40123'"), True),
        (boot("'a3remote'"), False),
        (boot("'../../run/other-socket'"), True),
        (boot("'a3remote-1'"), True),
        (boot("'a3remote'", status="error"), True),
        ({"status": "ok", "user_expressions": {"where": ["a3remote"]}}, True),
    ]
    for reply, ipc in refused:
        assert autograder_remote._where(reply, ipc=ipc) is None, reply
