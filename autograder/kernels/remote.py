"""The grader's end of a graded test: requests to a student's live kernel, replies as data.

After the student's notebook has run (its tests never run there), the grader keeps the kernel
alive and asks it questions through :class:`KernelSession`, from this process, which never
runs student code:

1. once, two silent execute requests: ``course_lib.grading.dispatch.listen()`` opens the kernel's
   request socket beside its Jupyter sockets (a ZeroMQ PAIR: ipc ``<ip>-a3remote``, or the
   tcp port the kernel names), then ``serve()`` answers on it until :meth:`KernelSession.close`
   sends ``stop``. The session connects to that socket;
2. each request (:meth:`KernelSession.request`) is one message ``[signature, number,
   request]``; its reply is the first message that comes back with that number and a valid
   signature (HMAC with the kernel's Jupyter key, so no other process of the machine can
   send or answer one). Anything else on the socket (a forged, stale or unsigned message) is
   read and dropped, and nothing the kernel prints or displays travels there: student code
   can neither add, remove nor change the reply to a request it was not asked. Code in the
   kernel holds the key and can answer for its dispatcher; that is the student answering,
   and the checks judge every reply as such;
3. limits, decided here: a reply larger than :data:`MAX_REPLY_BYTES` ends the connection
   (``zmq.MAXMSGSIZE``: nothing that size is ever parsed), a request that gets no reply in
   its time is interrupted (``interrupt_request`` on the control channel), and a kernel that
   stops answering fails every later request at once. Each failure is a
   :class:`RequestFailed` with a fixed reason, never the kernel's words.

This path skips ipykernel's per-message work (status messages, and both output streams
flushed through the IOPub thread for every shell message): a trivial request costs about
0.25 ms of CPU, kernel and grader together, against about 1.8 ms as a Jupyter comm message.

The checks of :mod:`course_lib.grading.judging` turn these replies into handles and values
(``course_lib.grading.judging.Student``).
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import zmq
from jupyter_client.session import Session

from course_lib.grading.dispatch import ENDPOINT, sign

MAX_REPLY_BYTES = 64 * 2**20  # one message from the kernel; larger ends the session
REQUEST_SECONDS = 60.0  # one request; then the kernel is interrupted
BOOT = "import course_lib.grading.dispatch as __a3_remote__\n"
LISTEN = "__a3_remote__.listen()"  # a user expression: where the request socket is
SERVE = "try:\n    __a3_remote__.serve()\nfinally:\n    del __a3_remote__\n"
STOP_SECONDS = 5.0  # for ``serve`` to end when the session closes
INTERRUPT_SECONDS = 10.0  # for an interrupted request's reply; then the kernel is dead


class RequestFailed(Exception):
    """No usable reply; ``reason`` is one of the fixed words of :data:`REASONS`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


REASONS = ("timeout", "unreadable", "dead", "unavailable")


def _url(info: dict, channel: str) -> str:
    return _address(info, info[f"{channel}_port"])


def _address(info: dict, port: int | str) -> str:
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{port}"
    return f"tcp://{info['ip']}:{port}"


class KernelSession:
    """Requests to one running kernel (``info``: its connection info, as the kernel manager
    gives it). Use as a context manager; :meth:`start` opens the request socket."""

    def __init__(
        self, info: dict, request_seconds: float = REQUEST_SECONDS, deadline_seconds: float = 600
    ):
        self.info = info
        self.request_seconds = request_seconds
        self.deadline = time.monotonic() + deadline_seconds  # for all requests together
        self.key = _key(info)
        self.digest = info.get("signature_scheme", "hmac-sha256").removeprefix("hmac-")
        self.session = Session(key=self.key, signature_scheme=f"hmac-{self.digest}")
        self.context = zmq.Context()
        self.broken: str | None = None  # why every request now fails
        self.requests = 0
        self.answered = 0  # requests that got a reply (a broken set-up gets none, anywhere)
        self.shell = self.control = self.socket = None
        self.serving: dict | None = None  # the execute request that runs ``serve``

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- connection -----------------------------------------------------------------------

    def start(self, seconds: float = 30.0) -> bool:
        """Connect, open the kernel's request socket and start it serving; False (and every
        request fails: ``dead`` when the kernel does not reply, else ``unavailable``) when
        the kernel does not take it."""
        try:
            self.shell = self._socket(zmq.DEALER, _url(self.info, "shell"))
            self.control = self._socket(zmq.DEALER, _url(self.info, "control"))
            reply = self._execute(BOOT, seconds, {"where": LISTEN})
            where = _where(reply, ipc=self.info.get("transport", "tcp") == "ipc")
            if where is None:
                raise RequestFailed("unavailable")
            self.socket = self._socket(zmq.PAIR, _address(self.info, where))
            self.serving = self._send(self.shell, "execute_request", _silent(SERVE))
        except (RequestFailed, zmq.ZMQError) as err:
            self.broken = err.reason if isinstance(err, RequestFailed) else "dead"
            return False
        return True

    def _socket(self, kind: int, url: str):
        sock = self.context.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_REPLY_BYTES)
        sock.connect(url)
        return sock

    def close(self) -> None:
        """Stop ``serve`` (so that the kernel shuts down as usual), then disconnect."""
        if self.serving is not None and not self.broken:
            deadline = time.monotonic() + STOP_SECONDS
            body = json.dumps({"op": "stop"}).encode()
            self.socket.send_multipart([self._sign(b"stop", body), b"stop", body])
            if self._reply(b"stop", deadline) is not None:
                self._reply_to(self.serving, deadline)
        for sock in (self.shell, self.control, self.socket):
            if sock is not None:
                sock.close(0)
        self.context.term()

    # --- messages -------------------------------------------------------------------------

    def _send(self, sock, msg_type: str, content: dict) -> dict:
        msg = self.session.msg(msg_type, content)
        self.session.send(sock, msg)
        return msg

    def _execute(self, code: str, seconds: float, expressions: dict) -> dict:
        """Run ``code`` silently (no history, no display hook, no events) and evaluate the
        user ``expressions``; its reply's content (``dead``: no reply in ``seconds``)."""
        msg = self._send(self.shell, "execute_request", _silent(code, expressions))
        found = self._reply_to(msg, time.monotonic() + seconds)
        if found is None:
            raise RequestFailed("dead")
        return found

    def _reply_to(self, msg: dict, deadline: float) -> dict | None:
        """The content of the shell reply to ``msg`` before ``deadline`` (None then)."""
        for frames in _arriving(self.shell, deadline):
            try:
                _, parts = self.session.feed_identities(frames, copy=True)
                got = self.session.deserialize(parts, content=True, copy=True)
            except Exception:  # noqa: BLE001 - a forged or broken message is nobody's reply
                continue
            if got["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return got["content"]
        return None

    def request(self, data: dict, seconds: float | None = None) -> Any:
        """Send one request to the dispatcher; return its reply (``{"ok": ...}`` or
        ``{"raised": name}``). Raises :class:`RequestFailed`."""
        if self.broken:
            raise RequestFailed(self.broken)
        if time.monotonic() >= self.deadline:
            raise RequestFailed("timeout")
        self.requests += 1
        number = str(self.requests).encode()
        body = json.dumps(data).encode()
        self.socket.send_multipart([self._sign(number, body), number, body])
        deadline = min(self.deadline, time.monotonic() + (seconds or self.request_seconds))
        body = self._reply(number, deadline)
        if body is None:
            return self._timed_out(number)
        try:
            reply = json.loads(body)
        except ValueError:
            raise RequestFailed("unreadable") from None
        if not isinstance(reply, dict):
            raise RequestFailed("unreadable")
        self.answered += 1
        return reply

    def _reply(self, number: bytes, deadline: float) -> bytes | None:
        """The body of the first signed reply to request ``number`` before ``deadline``."""
        for frames in _arriving(self.socket, deadline):
            if (
                len(frames) == 3
                and frames[1] == number
                and hmac.compare_digest(frames[0], self._sign(frames[1], frames[2]))
            ):
                return frames[2]
        return None

    def _sign(self, number: bytes, body: bytes) -> bytes:
        return sign(self.key, self.digest, number, body)

    def forget(self) -> None:
        """Let the kernel drop every object it holds for this session (best effort)."""
        try:
            self.request({"op": "reset"}, seconds=5.0)
        except RequestFailed:
            pass

    def _timed_out(self, number: bytes) -> Any:
        """No reply in time: interrupt the kernel and wait a little for the interrupted
        request's reply (the kernel is back: ``timeout``; none: ``dead``)."""
        self._send(self.control, "interrupt_request", {})
        if self._reply(number, time.monotonic() + INTERRUPT_SECONDS) is None:
            self.broken = "dead"
            raise RequestFailed("dead")
        raise RequestFailed("timeout")


def _arriving(sock, deadline: float) -> Iterator[list[bytes]]:
    """Each message (its frames) that arrives on ``sock`` before ``deadline``."""
    while True:
        timeout = max(0.0, deadline - time.monotonic())
        if not sock.poll(int(timeout * 1000)):
            return
        yield sock.recv_multipart(copy=True)


def _silent(code: str, expressions: dict | None = None) -> dict:
    return {
        "code": code, "silent": True, "store_history": False,
        "user_expressions": expressions or {}, "allow_stdin": False, "stop_on_error": False,
    }  # fmt: skip


def _where(reply: dict, ipc: bool) -> str | None:
    """Where ``listen`` opened the socket, from the boot's reply: ``ENDPOINT`` for an ipc
    kernel, a port number for a tcp one; None for anything else."""
    if reply.get("status") != "ok":
        return None
    found = reply.get("user_expressions", {}).get("where", {})
    text = found.get("data", {}).get("text/plain", "") if isinstance(found, dict) else ""
    if not isinstance(text, str):
        return None
    where = text.strip("'\"")
    return where if (where == ENDPOINT if ipc else where.isdigit()) else None


def _key(info: dict) -> bytes:
    key = info.get("key", b"")
    return key.encode() if isinstance(key, str) else key
