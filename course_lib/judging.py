"""Judges: the part of a graded test that decides, outside the student's kernel.

A *judge cell* (a code cell tagged ``judge`` in ``solutions/``) follows its test cell and
defines that test's checks, one per behaviour, each worth its own points::

    @check("3-D queries: the context has shape (N, k, H)", points=0.05)
    def _(record):
        check_shape(record["3d/context"], (3, 4, 7), "the context")

A check passes when it returns and fails with the message of the exception it raises (the
helpers of :mod:`course_lib.checks` raise ``AssertionError`` saying what was expected).
``record[key]`` is the value the probe (:mod:`course_lib.probe`) put under ``key``, as plain
data; a value the probe never put raises :class:`Missing`, whose message says why (the
student's code raised, the test cell stopped, timed out, or recorded it twice). Checks are
independent: one failing, or finding its value missing, costs only its own points.

Where judges run:

- **grading and** ``make release``: ``autograder.judge`` runs the judge cells of a notebook in
  order, in one fresh namespace, in a process that never ran student code (:func:`collect`);
  ``check`` then registers each check for the test cell above its judge cell, and each check
  runs on that test's record (:func:`evaluate`). Judge cells above every test cell may define
  the imports and reference helpers the later judges share;
- **a TA running a solution notebook in Jupyter**: a judge cell runs in the notebook's own
  kernel right after its test cell, and each check runs at once on what that test cell put,
  printing its verdict. A convenience for authors: ``make release`` decides.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import probe

CheckFn = Callable[["Record"], object]


class Missing(LookupError):
    """A value the judge needs was not recorded; ``str()`` says why, in words for students."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not recorded"


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


@dataclass
class Record(Mapping):
    """What one test cell's probe handed back, decoded: ``key -> value``.

    ``cell_error``: the error that stopped the test cell (``"Name: message"``), if any;
    ``status``: ``"ran"``, ``"timeout"`` or ``"not run"``; ``duplicates``: keys recorded
    more than once (never trusted: each such key counts as missing)."""

    values: dict[str, Any] = field(default_factory=dict)
    cell_error: str | None = None
    status: str = "ran"
    duplicates: frozenset[str] = frozenset()

    def __getitem__(self, key: str) -> Any:
        if key in self.duplicates:
            raise Missing(f"{key!r} was recorded more than once: the test's output was altered")
        if key not in self.values:
            raise Missing(self.why_missing(key))
        value = self.values[key]
        if isinstance(value, probe.Unrecordable):
            raise Missing(f"{key!r}: your code returned {value.what}, which is not a value")
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def why_missing(self, key: str) -> str:
        """Why ``key`` has no value, in words."""
        parts = key.split("/")
        for i in range(len(parts) - 1, 0, -1):  # the innermost case that stopped
            error = self.values.get("/".join([*parts[:i], probe.ERROR]))
            if isinstance(error, str):
                return f"your code raised {error} (in {'/'.join(parts[:i])})"
        if self.status == "timeout":
            return f"no result for {key!r}: the test ran out of time"
        if self.status == "not run":
            return f"no result for {key!r}: the test cell did not run"
        if self.cell_error:
            return f"no result for {key!r}: the test stopped at {self.cell_error}"
        return f"no result for {key!r}: the test did not record it"


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
    """Decorator: ``fn(record)`` checks one behaviour of the test cell above, worth ``points``."""
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


def evaluate(checks: list[Check], record: Record) -> list[Result]:
    """Run each check on ``record``; a check that raises fails with the exception's message."""
    results = []
    for item in checks:
        try:
            item.fn(record)
        except Missing as err:
            results.append(Result(item.description, item.points, False, str(err)))
        except AssertionError as err:
            message = str(err) or "the check failed"
            results.append(Result(item.description, item.points, False, message))
        except Exception as err:  # noqa: BLE001 - unexpected data: the check fails, says why
            message = f"could not check it: {type(err).__name__}: {err}"
            results.append(Result(item.description, item.points, False, message[:500]))
        else:
            results.append(Result(item.description, item.points, True))
    return results


def record_from(encoded: Mapping[str, Any], cell_error: str | None = None) -> Record:
    """A :class:`Record` from encoded values (key -> what :func:`probe.encode` made)."""
    values = {}
    for key, data in encoded.items():
        try:
            values[key] = probe.decode(data)
        except probe.DecodeError as err:
            values[key] = probe.Unrecordable(f"unreadable data ({err})")
    return Record(values, cell_error)


def _run_inline(description: str, points: float, fn: CheckFn) -> None:
    """Run one check at once on what the cell before this one put (a TA's notebook)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return
    shell = get_ipython()
    if shell is None:
        return
    previous = shell.execution_count - 1
    encoded = probe.records_of_cell(previous)
    last = getattr(shell, "last_execution_result", None)
    error = getattr(last, "error_in_exec", None) if last is not None else None
    record = record_from(encoded, f"{type(error).__name__}: {error}" if error else None)
    if not encoded and error is None:
        print(f"(judge) {description}: run the test cell above first")
        return
    (result,) = evaluate([Check("", description, points, fn)], record)
    mark = "PASS" if result.passed else "FAIL"
    print(
        f"(judge) {mark} {result.score:g}/{points:g} {description}"
        + (f": {result.message}" if result.message else "")
    )
