"""The grader's end of a graded test: requests to a student's live kernel, replies as data.

After the student's notebook has run (its tests never run there), the grader keeps the kernel
alive and asks it questions through :class:`KernelSession`, from this process, which never
runs student code:

1. once, a silent ``import course_lib.remote`` registers the kernel's dispatcher
   (:mod:`course_lib.remote`) as a Jupyter comm target, and the session opens a comm to it;
2. each request (:meth:`KernelSession.request`) is one ``comm_msg`` on the shell channel; its
   reply is the one ``comm_msg`` the kernel publishes on that comm *with that request as its
   parent*. Everything else the kernel publishes (prints, displays, ``clear_output``, other
   comms, replies to other requests) is read and dropped, so student code can neither add,
   remove nor change the reply to a request it was not asked. Two replies to one request make
   it unreadable;
3. limits, decided here: a reply larger than :data:`MAX_REPLY_BYTES` ends the connection
   (``zmq.MAXMSGSIZE``: nothing that size is ever parsed), a request that gets no reply in
   its time is interrupted, and a kernel that stops answering fails every later request
   at once. Each failure is a :class:`RequestFailed` with a fixed reason, never the kernel's
   words.

The checks of :mod:`course_lib.judging` turn these replies into handles and values
(``course_lib.judging.Student``).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import zmq
from jupyter_client.session import Session

MAX_REPLY_BYTES = 64 * 2**20  # one message from the kernel; larger ends the session
REQUEST_SECONDS = 60.0  # one request; then the kernel is interrupted
BOOT = "import course_lib.remote as __a3_remote__\n__a3_remote__.attach()\ndel __a3_remote__\n"


class RequestFailed(Exception):
    """No usable reply; ``reason`` is one of the fixed words of :data:`REASONS`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


REASONS = ("timeout", "unreadable", "dead", "unavailable")


def _url(info: dict, channel: str) -> str:
    port = info[f"{channel}_port"]
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{port}"
    return f"tcp://{info['ip']}:{port}"


class KernelSession:
    """Requests to one running kernel (``info``: its connection info, as the kernel manager
    gives it). Use as a context manager; :meth:`start` attaches the dispatcher."""

    def __init__(
        self, info: dict, request_seconds: float = REQUEST_SECONDS, deadline_seconds: float = 600
    ):
        self.info = info
        self.request_seconds = request_seconds
        self.deadline = time.monotonic() + deadline_seconds  # for all requests together
        self.session = Session(key=_key(info), signature_scheme=info.get("signature_scheme",
                               "hmac-sha256"))  # fmt: skip
        self.context = zmq.Context()
        self.comm_id = uuid.uuid4().hex
        self.broken: str | None = None  # why every request now fails
        self.requests = 0
        self.answered = 0  # requests that got a reply (a broken set-up gets none, anywhere)
        self.shell = self.iopub = self.control = None

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- connection -----------------------------------------------------------------------

    def start(self, seconds: float = 30.0) -> bool:
        """Connect, attach the dispatcher and open the comm; False (and every request fails as
        ``unavailable``) when the kernel does not take it."""
        try:
            self._connect()
            if not self._subscribed(seconds):
                raise RequestFailed("dead")
            reply = self._execute(BOOT, seconds)
            if reply.get("status") != "ok":
                raise RequestFailed("unavailable")
            self._send(self.shell, "comm_open", {
                "comm_id": self.comm_id, "target_name": "a3.remote", "data": {},
            })  # fmt: skip
        except (RequestFailed, zmq.ZMQError) as err:
            self.broken = err.reason if isinstance(err, RequestFailed) else "dead"
            return False
        return True

    def _connect(self) -> None:
        self.shell = self.context.socket(zmq.DEALER)
        self.control = self.context.socket(zmq.DEALER)
        self.iopub = self.context.socket(zmq.SUB)
        for sock in (self.shell, self.control, self.iopub):
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, MAX_REPLY_BYTES)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.shell.connect(_url(self.info, "shell"))
        self.control.connect(_url(self.info, "control"))
        self.iopub.connect(_url(self.info, "iopub"))

    def _subscribed(self, seconds: float) -> bool:
        """Whether iopub delivers (a SUB socket misses what is published before it joins)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msg = self._send(self.shell, "kernel_info_request", {})
            until = min(deadline, time.monotonic() + 0.5)
            while time.monotonic() < until:
                got = self._recv(self.iopub, until)
                if got and got["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    self._drain_shell()
                    return True
        return False

    def close(self) -> None:
        for sock in (self.shell, self.iopub, self.control):
            if sock is not None:
                sock.close(0)
        self.context.term()

    # --- messages -------------------------------------------------------------------------

    def _send(self, sock, msg_type: str, content: dict) -> dict:
        msg = self.session.msg(msg_type, content)
        self.session.send(sock, msg)
        return msg

    def _recv(self, sock, deadline: float) -> dict | None:
        """The next message on ``sock`` before ``deadline`` (None then); unreadable ones are
        dropped."""
        timeout = max(0.0, deadline - time.monotonic())
        if not sock.poll(int(timeout * 1000)):
            return None
        frames = sock.recv_multipart(copy=True)
        try:
            _, parts = self.session.feed_identities(frames, copy=True)
            return self.session.deserialize(parts, content=True, copy=True)
        except Exception:  # noqa: BLE001 - a forged or broken message is nobody's reply
            return {"header": {}, "parent_header": {}, "content": {}, "msg_type": "?"}

    def _drain_shell(self) -> None:
        while self._recv(self.shell, time.monotonic()) is not None:
            pass

    def _execute(self, code: str, seconds: float) -> dict:
        """Run ``code`` silently (no history, no display hook, no events); its reply's content."""
        msg = self._send(self.shell, "execute_request", {
            "code": code, "silent": True, "store_history": False, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": False,
        })  # fmt: skip
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            got = self._recv(self.shell, deadline)
            if got and got["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return got["content"]
        raise RequestFailed("timeout")

    def request(self, data: dict, seconds: float | None = None) -> Any:
        """Send one request to the dispatcher; return its reply (``{"ok": ...}`` or
        ``{"raised": name}``). Raises :class:`RequestFailed`."""
        if self.broken:
            raise RequestFailed(self.broken)
        if time.monotonic() >= self.deadline:
            raise RequestFailed("timeout")
        self.requests += 1
        msg = self._send(self.shell, "comm_msg", {"comm_id": self.comm_id, "data": data})
        msg_id = msg["header"]["msg_id"]
        deadline = min(self.deadline, time.monotonic() + (seconds or self.request_seconds))
        replies: list[Any] = []
        while True:
            got = self._recv(self.iopub, deadline)
            if got is None:
                return self._timed_out(msg_id, replies)
            if got["parent_header"].get("msg_id") != msg_id:
                continue
            content = got.get("content", {})
            if got.get("msg_type") == "comm_msg" and content.get("comm_id") == self.comm_id:
                replies.append(content.get("data"))
            elif got.get("msg_type") == "status" and content.get("execution_state") == "idle":
                return self._one(replies)

    def forget(self) -> None:
        """Let the kernel drop every object it holds for this session (best effort)."""
        try:
            self.request({"op": "reset"}, seconds=5.0)
        except RequestFailed:
            pass

    def _one(self, replies: list[Any]) -> Any:
        if len(replies) != 1 or not isinstance(replies[0], dict):
            raise RequestFailed("unreadable")
        self.answered += 1
        return replies[0]

    def _timed_out(self, msg_id: str, replies: list[Any]) -> Any:
        """No idle in time: interrupt the kernel and wait a little for it to come back."""
        self._send(self.control, "interrupt_request", {})
        deadline = time.monotonic() + 10.0
        while True:
            got = self._recv(self.iopub, deadline)
            if got is None:
                self.broken = "dead"
                raise RequestFailed("dead")
            content = got.get("content", {})
            if (
                got["parent_header"].get("msg_id") == msg_id
                and got.get("msg_type") == "status"
                and content.get("execution_state") == "idle"
            ):
                raise RequestFailed("timeout")


def _key(info: dict) -> bytes:
    key = info.get("key", b"")
    return key.encode() if isinstance(key, str) else key
