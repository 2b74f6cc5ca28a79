"""A student's kernels forked from one process that imported the heavy modules once.

Used where ``[sandbox] fork_kernels = true`` and bubblewrap isolates (``zygote.Zygote``).
Starting a kernel and importing torch costs about 3 CPU-seconds; a student hands in eight
notebooks, each graded in a fresh kernel. Here one process per student, the *zygote*, imports
ipykernel and ``[sandbox] preload`` once, inside that student's sandbox, and every notebook's
kernel is a fork of it: a process that never ran a cell, with those modules already imported.

Two programs in one file that needs nothing but the standard library (the sandbox does not
show the autograder package, so the zygote runs as ``python -c <this file's text>``):

``zygote SOCKET CONNECTION HOME MODULE...`` (inside the sandbox)
    imports ipykernel and MODULE..., listens on the Unix socket SOCKET (in the sandbox's
    scratch) and serves one kernel at a time: for a request (the connection file's text, the
    kernel's arguments, and the caller's standard streams) it forks a child that takes those
    streams, starts a session of its own, writes the connection file and becomes ``python -m
    ipykernel_launcher -f <it> ARGS``. It then waits until that child ends, and sends back its
    exit status; when the caller goes away first, it kills the child. It never runs a cell.
``stub SOCKET CONNECTION_FILE ARG...`` (the grader's side)
    what jupyter_client starts as "the kernel process": it sends the request and waits for
    the exit status. It lives exactly as long as the kernel, and killing it kills the kernel,
    so jupyter_client's process checks mean what they mean for a kernel of its own.

What a kernel leaves behind (processes it started, files in the scratch) the grader removes
before the next kernel (``zygote.Zygote.reset``). Every kernel of the zygote runs the same
student's code, so a notebook that tampers with the zygote reaches only that student's own
later notebooks, whose kernels run their code anyway; the grader judges replies to its own
requests from outside, as for any kernel.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

REQUEST_BYTES = 1 << 16  # a connection file and a few arguments


PR_SET_DUMPABLE = 4  # prctl(2)


def _dumpable(flag: int) -> None:
    """prctl(PR_SET_DUMPABLE): 0 makes this process impossible to ptrace or to read and write
    through ``/proc/<pid>/mem`` for another process of its uid (its kernels)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def preload(modules, skipped=None) -> None:
    """Import each of ``modules`` in turn; one that raises anything is skipped
    (``skipped(name, error)`` is told): whoever needs it imports it again and fails there as it
    would anyway. (multiprocessing's own preload stops at anything but ``ImportError``.)"""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - see the docstring
            if skipped is not None:
                skipped(name, err)


def zygote(path: str, where: dict[str, str], modules: list[str]) -> None:
    """Serve kernels on the socket ``path``; ``where``: the kernel's ``connection`` file and
    ``home`` (its working folder) inside the sandbox."""
    import gc

    # Before anything else: its kernels (same uid) could otherwise attach to it, stay alive in
    # it while the grader empties the scratch between kernels, and race the grader there.
    _dumpable(0)

    import ipykernel.kernelapp  # noqa: F401  (what every kernel imports first)

    preload(modules, lambda name, err: print(
        f"zygote: {name} not preloaded ({type(err).__name__})", file=sys.stderr))  # fmt: skip
    # What it imported lives as long as any kernel: out of the collector's reach, so no
    # kernel's collection writes to (and so copies) the pages it shares with the zygote.
    gc.freeze()
    # It runs as the sandbox's pid 1 (bwrap --as-pid-1): a signal from a kernel reaches it only
    # through a handler, so it has none (its kernels get them back), and it reaps orphans.
    handlers = {}
    for number in signal.valid_signals():
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if callable(handler):
            handlers[number] = handler
            signal.signal(number, signal.SIG_IGN)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path + ".new")
    server.listen(4)
    os.rename(path + ".new", path)  # there only once it accepts
    me = os.getpid()
    while True:
        conn, _ = server.accept()
        _reap(0)
        try:
            _serve(server, conn, handlers, where)
        finally:
            if os.getpid() == me:  # a kernel leaves through here too, its end kept open
                conn.close()


def _serve(server: socket.socket, conn: socket.socket, handlers: dict, where: dict) -> None:
    """One request: fork its kernel, wait for it, send back its exit status."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, REQUEST_BYTES, 3)
    except OSError:
        return
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return
    pid = os.fork()
    if pid == 0:
        server.close()
        for number, handler in handlers.items():
            signal.signal(number, handler)
        _become_kernel(conn, data, fds, where)
    for fd in fds:
        os.close(fd)
    status = _watch(conn, pid)
    try:
        conn.send(str(status).encode())
    except OSError:
        pass


def _watch(conn: socket.socket, pid: int) -> int:
    """Wait until the kernel ``pid`` ends (its exit status) or the caller goes away (then kill
    it first); reap every other child meanwhile."""
    try:
        ended = os.pidfd_open(pid)
    except (AttributeError, OSError):
        ended = None
    waited = [conn] if ended is None else [conn, ended]
    while True:
        ready, _, _ = select.select(waited, [], [], 0.5)
        if conn in ready and _gone(conn):
            waited.remove(conn)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        status = _reap(pid)
        if status is not None:
            if ended is not None:
                os.close(ended)
            return status


def _reap(pid: int) -> int | None:
    """Reap every child that ended (as pid 1, every orphan of the sandbox is one): the exit
    status of ``pid`` if it was among them."""
    found = None
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if done == 0:
            return found
        if done == pid:
            found = os.waitstatus_to_exitcode(status)


def _gone(conn: socket.socket) -> bool:
    """Whether the caller closed its end (it sends nothing after its request)."""
    try:
        return not conn.recv(1)
    except OSError:
        return True


def _become_kernel(conn: socket.socket, data: bytes, fds: list[int], where: dict) -> None:
    """In the forked child: become the kernel the request asks for. It ends as that kernel's
    process would (its exit status, exceptions, threads and exit handlers: :func:`_leave`) once
    ``ipykernel_launcher`` returns or raises, never back in the zygote's loop."""
    import random
    import runpy

    # The kernel keeps its end of the caller's connection (not its own forks): the stub waits
    # until the kernel is gone, even if the zygote goes first.
    _dumpable(1)  # a kernel as any other process (the zygote's flag is inherited)
    os.register_at_fork(after_in_child=conn.close)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.setsid()  # a session of its own, as jupyter_client starts a kernel
    request = json.loads(data)
    fd = os.open(where["connection"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
    with os.fdopen(fd, "w") as out:
        out.write(request["connection"])
    os.chdir(where["home"])
    random.seed()  # not the zygote's state: each kernel's own, as in a fresh process
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    sys.argv = ["ipykernel_launcher", "-f", where["connection"], *request["args"]]
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException:  # noqa: BLE001 - reported as the interpreter reports it
        sys.excepthook(*sys.exc_info())
        code = 1
    _leave(code)


def _exit_code(code) -> int:
    """The exit status of ``SystemExit(code)``, as the interpreter makes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _leave(code: int) -> None:
    """End a kernel as the interpreter ends: wait for its non-daemon threads, run its exit
    handlers, flush its streams; then exit without the interpreter's teardown. Tearing down
    the modules the zygote imported (freeing every object, collecting) writes to each of their
    pages, so the kernel would copy them all from the zygote first: 0.7 s per kernel with
    torch, 1.6 s with BERT's modules, against 0.06 s."""
    import atexit
    import threading

    threading._shutdown()  # what the interpreter's exit does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or replaced stream: nothing to flush
            pass
    os._exit(code)


def stub(path: str, connection_file: str, args: list[str]) -> int:
    with open(connection_file) as f:
        request = json.dumps({"connection": f.read(), "args": args}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    socket.send_fds(conn, [request], [0, 1, 2])
    reply = conn.recv(32).strip()  # when the kernel ends; b"" when the zygote ended first
    try:
        status = int(reply)
    except ValueError:
        return 1
    return status if status >= 0 else 128 - status


def main(argv: list[str]) -> None:
    if argv[:1] == ["zygote"] and len(argv) >= 4:
        zygote(argv[1], {"connection": argv[2], "home": argv[3]}, argv[4:])
    elif argv[:1] == ["stub"] and len(argv) >= 3:
        sys.exit(stub(argv[1], argv[2], argv[3:]))
    else:
        sys.exit("usage: forkkernel.py zygote SOCKET CONNECTION HOME MODULE... | "
                 "stub SOCKET CONNECTION ARG...")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
